import { mkdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { SESSION_SETTINGS } from './settings.js';
import type { Logger } from '../log.js';
import type { EmbeddedLimits } from './embedded.js';

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
  constructor(readonly path: string, readonly pid: number) {
    super(
      `the data directory ${path} is in use by another process (pid ${pid}, a running Tallyhouse?): run this command through that service (TALLYHOUSE_URL), stop it, or set DATA_DIR to another directory`,
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
 * The pid of a live process other than this one that holds `dir` (the engine writes `PID: n` into `dir/status`
 * and keeps it locked while it runs; a file left by a killed process names a dead pid).
 */
export function dataDirHolder(dir: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(resolve(dir, 'status'), 'utf8');
  } catch {
    return undefined;
  }
  const pid = Number(/^PID:\s*(\d+)/m.exec(text)?.[1]);
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (err) {
    // EPERM: alive, but another user's.
    return (err as NodeJS.ErrnoException).code === 'EPERM' ? pid : undefined;
  }
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
  if (holder !== undefined) throw new DataDirInUseError(path, holder);
  mkdirSync(path, { recursive: true });
  // Loaded here, not at the top: the production image has no embedded engine (chdb) and always sets CLICKHOUSE_URL.
  let connection;
  try {
    const { createEmbeddedConnection } = await import('./embedded.js');
    connection = createEmbeddedConnection(path, opts.embedded);
  } catch (err) {
    throw dataDirHolder(path) !== undefined ? new DataDirInUseError(path, dataDirHolder(path)!) : new EmbeddedStoreMissingError(err);
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
      await new Promise((r) => setTimeout(r, Math.min(2_000, 250 * attempt)));
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
