import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { SESSION_SETTINGS } from './settings.js';
import { preparePrivateDataDir } from './private-files.js';
import type { Logger } from '../log.js';
import type { EmbeddedLimits } from './embedded.js';
import { retryDelayMs, STORE_STARTUP_RETRY } from '../retry.js';

export interface StoreOptions {
  /** ClickHouse server URL; undefined = embedded chDB under dataDir. */
  url?: string;
  username?: string;
  password?: string;
  database: string;
  cluster?: string;
  dataDir: string;
  /** How long to keep trying an unreachable server at start-up. */
  connectTimeoutMs?: number;
  /** The embedded engine's memory (EMBEDDED_MAX_MEMORY_BYTES, EMBEDDED_CACHE_BYTES); ignored for a server. */
  embedded?: EmbeddedLimits;
  logger?: Logger;
}


export interface Store {
  readonly client: ClickHouseClient;
  readonly database: string;
  readonly cluster: string | undefined;
  readonly mode: 'embedded' | 'server';
  /** Where the data lives, safe to log: the data directory or the URL without credentials. */
  readonly location: string;
  close(): Promise<void>;
}

export class StoreUnavailableError extends Error {
  constructor(readonly location: string, override readonly cause: unknown) {
    super(`ClickHouse at ${location} is unreachable: ${describeCause(cause)}`);
    this.name = 'StoreUnavailableError';
  }
}

/** A data directory another process holds: chDB (like ClickHouse) allows one process per directory. */
export class DataDirInUseError extends Error {
  /** EX_TEMPFAIL (sysexits.h): the same command succeeds once the other process lets go of the directory. */
  readonly exitCode = 75;
  /** `pid` undefined: the directory's lock is held, by a process not named yet (it is starting, or in another pid namespace). */
  constructor(readonly path: string, readonly pid: number | undefined) {
    super(
      `the data directory ${path} is in use by another process (${pid ? `pid ${pid}` : 'pid not known'}, a running Tallyhouse or another command?): retry when it has finished, run this command through that service (TALLYHOUSE_URL), or set DATA_DIR to another directory`,
    );
    this.name = 'DataDirInUseError';
  }
}

/** The embedded engine is not installed (the production image leaves it out). */
export class EmbeddedStoreMissingError extends Error {
  constructor(override readonly cause: unknown) {
    super('the embedded store (chDB) is not installed here (the production image leaves it out): set CLICKHOUSE_URL to a ClickHouse server');
    this.name = 'EmbeddedStoreMissingError';
  }
}

/**
 * The pid of a live process other than this one that holds `dir`. The engine writes `PID: n` into `dir/status` and
 * keeps an flock on it while it runs; the lock dies with its process, the file does not. So the file's pid alone
 * is never trusted (after a SIGKILL any process may get that pid): on Linux the holder is the process /proc/locks
 * names as holding the lock on that very file, and a file nobody locks is stale. Where /proc/locks cannot be read
 * (not Linux), a live process with the file's pid counts, as before.
 */
export function dataDirHolder(dir: string, locksText?: string): number | undefined {
  const statusPath = resolve(dir, 'status');
  let text: string;
  try {
    text = readFileSync(statusPath, 'utf8');
  } catch {
    return undefined;
  }
  const pid = Number(/^PID:\s*(\d+)/m.exec(text)?.[1]);
  if (!Number.isInteger(pid) || pid <= 0) {
    // No pid written yet: an engine that has just taken the lock writes it next (two commands started together).
    // Held by anyone (0: a pid this process cannot name) is held; the engine would refuse the directory.
    const locker = statusFileLocker(statusPath, locksText);
    return typeof locker === 'number' && locker !== process.pid ? locker : undefined;
  }
  if (pid === process.pid) return undefined;
  const locker = statusFileLocker(statusPath, locksText, pid);
  if (locker !== 'unknown') return locker === undefined || locker === process.pid ? undefined : locker || pid;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (err) {
    // EPERM: alive, but another user's.
    return (err as NodeJS.ErrnoException).code === 'EPERM' ? pid : undefined;
  }
}

/**
 * The pid holding a lock on `path` by /proc/locks (lines such as `1: FLOCK  ADVISORY  WRITE 13524 fe:00:2156130 0
 * EOF`: pid, then the device as hex major:minor and the inode), undefined when none does, 'unknown' when
 * /proc/locks cannot be read.
 */
export function statusFileLocker(path: string, locksText?: string, filePid?: number): number | undefined | 'unknown' {
  let locks = locksText;
  if (locks === undefined) {
    try {
      locks = readFileSync('/proc/locks', 'utf8');
    } catch {
      return 'unknown';
    }
  }
  let st;
  try {
    st = statSync(path, { bigint: true });
  } catch {
    return undefined;
  }
  // Linux's dev_t: major in bits 8-19 and 32-43, minor in bits 0-7 and 20-31.
  const major = ((st.dev >> 8n) & 0xfffn) | ((st.dev >> 32n) & ~0xfffn);
  const minor = (st.dev & 0xffn) | ((st.dev >> 12n) & ~0xffn);
  // btrfs: stat() gives a subvolume's own device while /proc/locks names the filesystem's, so no line ever matches
  // the device. A lock on the same inode held by the very pid the file names is taken as the holder then (a reused pid
  // would have to hold a lock on a file of that inode number elsewhere too).
  let sameInodeByFilePid: number | undefined;
  for (const line of locks.split('\n')) {
    // `->` lines are processes waiting for a lock, not holding one.
    const m = /^\d+:\s+\S+\s+\S+\s+\S+\s+(-?\d+)\s+([0-9a-f]+):([0-9a-f]+):(\d+)\s/i.exec(line);
    if (!m) continue;
    if (BigInt(m[4]) !== st.ino) continue;
    if (BigInt(`0x${m[2]}`) !== major || BigInt(`0x${m[3]}`) !== minor) {
      if (filePid !== undefined && Number(m[1]) === filePid) sameInodeByFilePid = filePid;
      continue;
    }
    // A holder in another pid namespace shows as 0 (or -1): held, by a pid we cannot name.
    const lockPid = Number(m[1]);
    return lockPid > 0 ? lockPid : 0;
  }
  return sameInodeByFilePid;
}

function describeCause(cause: unknown): string {
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return code ? `${String(code)} ${cause.message}`.trim() : cause.message;
  }
  return String(cause);
}

/** The URL as it may be logged: no user info, no query string. */
export function safeUrl(raw: string): string {
  try {
    const u = new URL(raw);
    return `${u.protocol}//${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}

// chDB binds one data directory per process and crashes if a second is opened.
let embeddedPath: string | undefined;

export async function openStore(opts: StoreOptions): Promise<Store> {
  // DATA_DIR (the embedded store's files, or a server store's spools and infiles) is the user's alone.
  preparePrivateDataDir(opts.dataDir);
  return opts.url ? openServerStore(opts, opts.url) : openEmbeddedStore(opts);
}

async function openEmbeddedStore(opts: StoreOptions): Promise<Store> {
  const path = resolve(opts.dataDir);
  if (embeddedPath !== undefined && embeddedPath !== path) {
    throw new Error(
      `the embedded store is already open on ${embeddedPath}; chDB allows one data directory per process (asked for ${path})`,
    );
  }
  const holder = dataDirHolder(path);
  if (holder !== undefined) throw new DataDirInUseError(path, holder || undefined);
  // Loaded here, not at the top: the production image has no embedded engine (chdb) and always sets CLICKHOUSE_URL.
  let embedded;
  try {
    embedded = await import('./embedded.js');
  } catch (err) {
    throw new EmbeddedStoreMissingError(err);
  }
  let connection;
  try {
    connection = embedded.createEmbeddedConnection(path, opts.embedded);
  } catch (err) {
    // The engine is here but could not take the directory. Two commands started together (two `collect` runs): the
    // other took the engine's lock on `status` between the check above and now, before writing its pid there, and
    // this one was told "chDB is not installed" (exit 1). A lock on `status` held by anyone is the directory in use.
    const holderNow = dataDirHolder(path);
    if (holderNow !== undefined) throw new DataDirInUseError(path, holderNow || undefined);
    const locker = statusFileLocker(resolve(path, 'status'));
    if (typeof locker === 'number' && locker !== process.pid) throw new DataDirInUseError(path, locker > 0 ? locker : undefined);
    throw new StoreUnavailableError(path, err);
  }
  embeddedPath = path;
  const client = createClient({ connection });
  try {
    await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${opts.database}` });
    // One database per process, so the session's current database is set once.
    await client.command({ query: `USE ${opts.database}` });
    for (const [name, value] of Object.entries(SESSION_SETTINGS)) {
      await client.command({ query: `SET ${name} = ${typeof value === 'string' ? `'${value}'` : String(value)}` });
    }
  } catch (err) {
    await client.close().catch(() => undefined);
    throw new StoreUnavailableError(path, err);
  }
  let closed = false;
  return {
    client,
    database: opts.database,
    cluster: undefined,
    mode: 'embedded',
    location: path,
    async close() {
      if (closed) return;
      closed = true;
      await client.close();
      // The chDB engine stays bound to this path for the life of the process; reopening it is allowed.
    },
  };
}

async function openServerStore(opts: StoreOptions, url: string): Promise<Store> {
  const location = safeUrl(url);
  const common = {
    url,
    username: opts.username,
    password: opts.password,
    request_timeout: 60_000,
    clickhouse_settings: SESSION_SETTINGS,
    // The client's own logger prints multi-line errors to stderr on every failed attempt; failures reach our
    // logs through their callers (the writer logs each retry once, with the table and attempt).
    log: { level: ClickHouseLogLevel.OFF },
  };
  const bootstrap = createClient({ ...common, database: 'default' });
  const deadline = Date.now() + (opts.connectTimeoutMs ?? 30_000);
  let attempt = 0;
  try {
    for (;;) {
      attempt++;
      const ping = await bootstrap.ping();
      if (ping.success) break;
      if (Date.now() >= deadline) throw new StoreUnavailableError(location, ping.error);
      opts.logger?.warn({ store: location, attempt, err: describeCause(ping.error) }, 'waiting for ClickHouse');
      await new Promise((r) => setTimeout(r, retryDelayMs(STORE_STARTUP_RETRY, attempt)));
    }
    const onCluster = opts.cluster ? ` ON CLUSTER '${opts.cluster}'` : '';
    await bootstrap.command({ query: `CREATE DATABASE IF NOT EXISTS ${opts.database}${onCluster}` });
  } catch (err) {
    if (err instanceof StoreUnavailableError) throw err;
    throw new StoreUnavailableError(location, err);
  } finally {
    await bootstrap.close();
  }
  const client = createClient({ ...common, database: opts.database });
  return {
    client,
    database: opts.database,
    cluster: opts.cluster,
    mode: 'server',
    location,
    close: () => client.close(),
  };
}

/** Limits every query of a reader gets (the query API): time, memory and result size. */
export interface QueryLimits {
  maxExecutionSeconds: number;
  maxMemoryBytes: number;
  maxResultRows: number;
}

/**
 * The store as a reader sees it: every query runs read-only (ClickHouse refuses writes under `readonly = 2`) with
 * the limits, and the client's write methods are not there at all.
 */
export function readOnlyStore(store: Store, limits: QueryLimits): Store {
  const settings = {
    readonly: '2',
    max_execution_time: limits.maxExecutionSeconds,
    max_memory_usage: String(limits.maxMemoryBytes),
    max_result_rows: String(limits.maxResultRows),
    result_overflow_mode: 'throw',
  } as const;
  const refuse = () => {
    throw new Error('the query API reads only: this store refuses writes');
  };
  const client = new Proxy(store.client, {
    get(target, prop, receiver) {
      if (prop === 'query') {
        return (params: Parameters<ClickHouseClient['query']>[0]) =>
          target.query({ ...params, clickhouse_settings: { ...params.clickhouse_settings, ...settings } } as typeof params);
      }
      if (prop === 'insert' || prop === 'command' || prop === 'exec') return refuse;
      return Reflect.get(target, prop, receiver);
    },
  });
  return { ...store, client, close: async () => undefined };
}
