/**
 * The CLI side of the admin endpoint (src/http/admin.ts): finds the service that holds the data directory (or
 * the one TALLYHOUSE_URL names), sends it the command and replays what the command writes, so the user types the
 * same command and gets the same output whether the service runs or not.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { request } from 'undici';
import { ADMIN_COMMANDS_PATH, ADMIN_FILE, AdminFile, processStarted } from '../http/admin.js';
import { ConfigError, isLoopbackHost } from '../config.js';
import { redactUrl, redactUrls } from '../redact.js';
import { dataDirHolder } from '../store/client.js';
import { writeUserFile } from '../store/private-files.js';
import { EXIT_BROKEN_PIPE, stdoutClosed, writeStdout } from '../stdio.js';

export interface ServiceTarget {
  url: string;
  token: string;
}

export class ServiceUnreachableError extends Error {
  constructor(url: string, reason: string, message = `the running service at ${redactUrl(url)} did not take the command (${redactUrls(reason)}): is it still starting, or stopping?`) {
    super(message);
    this.name = 'ServiceUnreachableError';
  }
}

/** The service went away while it ran the command (stopped, killed): one line, never the socket error's stack. */
function serviceLost(url: string, err: unknown): ServiceUnreachableError {
  const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
  return new ServiceUnreachableError(
    url,
    reason,
    `the service at ${redactUrl(url)} stopped answering while it ran the command (${redactUrls(reason)}): the command may have finished in part; see the service's log, and run it again once the service is up`,
  );
}

function readAdminFile(dataDir: string): AdminFile | undefined {
  try {
    const parsed = AdminFile.safeParse(JSON.parse(readFileSync(join(dataDir, ADMIN_FILE), 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `url` is an http URL on this machine's loopback interface (the only place the admin token may go). */
export function isLoopbackUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' && isLoopbackHost(u.hostname.replace(/^\[|\]$/g, ''));
  } catch {
    return false;
  }
}

const origin = (url: string) => {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
};

/**
 * The service to send a command to. The token in DATA_DIR/admin.json goes only to the loopback address that the
 * live service holding DATA_DIR recorded next to it; TALLYHOUSE_URL elsewhere needs TALLYHOUSE_ADMIN_TOKEN given
 * explicitly (else whatever answers at that URL would receive the local token). A service still starting (it holds
 * the directory but does not listen yet) is waited for. Undefined: run the command here.
 */
export async function findService(dataDir: string, env: NodeJS.ProcessEnv = process.env, waitMs = 60_000): Promise<ServiceTarget | undefined> {
  if (env.TALLYHOUSE_URL) {
    const url = env.TALLYHOUSE_URL.replace(/\/+$/, '');
    if (env.TALLYHOUSE_ADMIN_TOKEN) return { url, token: env.TALLYHOUSE_ADMIN_TOKEN };
    const local = await serviceHoldingDataDir(dataDir, waitMs);
    if (local && origin(local.url) === origin(url)) return local;
    throw new ConfigError([
      {
        variable: 'TALLYHOUSE_ADMIN_TOKEN',
        expected: `the admin token of the service at TALLYHOUSE_URL (the token in ${join(dataDir, ADMIN_FILE)} goes only to the loopback address of the service holding that directory${local ? `, ${local.url}` : ', and none runs'}); or unset TALLYHOUSE_URL`,
      },
    ]);
  }
  return serviceHoldingDataDir(dataDir, waitMs);
}

/**
 * A live service on a server store (CLICKHOUSE_URL) using DATA_DIR: no lock names it (the embedded engine's is the
 * one dataDirHolder reads), so its admin file must name a process that is still the one that wrote it (same pid,
 * same start time). A keyless shell's `collect` beside it ran in demo mode instead of being handed over (issue 44.1).
 */
function serverStoreService(dataDir: string): ServiceTarget | undefined {
  const file = readAdminFile(dataDir);
  if (!file?.url || !file.token || !file.started || !isLoopbackUrl(file.url)) return undefined;
  if (file.pid === process.pid || processStarted(file.pid) !== file.started) return undefined;
  return { url: file.url, token: file.token };
}

/** The live service holding DATA_DIR and the loopback address it published there; undefined when none does. */
async function serviceHoldingDataDir(dataDir: string, waitMs: number): Promise<ServiceTarget | undefined> {
  const deadline = Date.now() + waitMs;
  let told = false;
  for (;;) {
    const holder = dataDirHolder(dataDir);
    if (holder === undefined) return serverStoreService(dataDir);
    const file = readAdminFile(dataDir);
    // Held by something other than a service (a CLI command): opening the store says who holds it.
    if (!file || file.pid !== holder) return undefined;
    if (file.url && file.token) return isLoopbackUrl(file.url) ? { url: file.url, token: file.token } : undefined;
    if (Date.now() >= deadline) return undefined;
    if (!told) {
      process.stderr.write(`waiting for the service holding ${dataDir} (pid ${holder}) to finish starting...\n`);
      told = true;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Rewrites file arguments to absolute paths: the command runs in the service, whose working directory is not ours. */
export function absolutePaths(argv: string[], fileOptions: readonly string[] = ['--out']): string[] {
  return argv.map((arg, i) => {
    const eq = fileOptions.find((o) => arg.startsWith(`${o}=`));
    if (eq) return `${eq}=${resolve(arg.slice(eq.length + 1))}`;
    return i > 0 && fileOptions.includes(argv[i - 1]) ? resolve(arg) : arg;
  });
}

/** A file the service asked the CLI to write that is not the `--out` the user gave: nothing is written. */
export class UnrequestedFileError extends Error {
  constructor(url: string) {
    super(`the service at ${redactUrl(url)} answered with a file to write that is not the --out you gave: nothing written (is TALLYHOUSE_URL a Tallyhouse service?)`);
    this.name = 'UnrequestedFileError';
  }
}

/** Sends the command and replays its output; resolves with its exit code. */
export async function runInService(target: ServiceTarget, argv: string[]): Promise<number> {
  const sent = absolutePaths(argv);
  // The only files this CLI writes: the --out paths the user typed (the answer's `file` is checked against them).
  const outFiles = new Set(sent.flatMap((arg, i) => (arg.startsWith('--out=') ? [arg.slice(6)] : sent[i - 1] === '--out' ? [arg] : [])));
  let res;
  try {
    res = await request(`${target.url}${ADMIN_COMMANDS_PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${target.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ argv: sent, tty: Boolean(process.stderr.isTTY) }),
      // A backfill may run for hours; its output keeps the connection alive.
      headersTimeout: 60_000,
      bodyTimeout: 0,
    });
  } catch (err) {
    throw new ServiceUnreachableError(target.url, (err as NodeJS.ErrnoException).code ?? (err as Error).message);
  }
  if ((res.statusCode === 401 || res.statusCode === 403) && process.env.TALLYHOUSE_ADMIN_TOKEN === target.token) {
    // A wrong token is a setting to fix, not a service still starting or stopping (what the message said).
    await res.body.dump();
    throw new ConfigError([
      {
        variable: 'TALLYHOUSE_ADMIN_TOKEN',
        expected: `the admin token of the service at ${redactUrl(target.url)}, which refused this one (HTTP ${res.statusCode}): copy "token" from that service's DATA_DIR/${ADMIN_FILE}`,
      },
    ]);
  }
  if (res.statusCode !== 200) {
    const text = await res.body.text();
    throw new ServiceUnreachableError(target.url, `HTTP ${res.statusCode}: ${text.slice(0, 200)}`);
  }
  let exit: number | undefined;
  const files: Array<{ path: string; data: string }> = [];
  try {
    for await (const line of createInterface({ input: res.body, crlfDelay: Infinity })) {
      if (!line) continue;
      const msg = JSON.parse(line) as { fd?: 1 | 2; file?: string; data?: string; exit?: number };
      if (msg.exit !== undefined) exit = msg.exit;
      else if (msg.file !== undefined) {
        if (!outFiles.has(resolve(msg.file))) {
          res.body.destroy();
          throw new UnrequestedFileError(target.url);
        }
        files.push({ path: resolve(msg.file), data: msg.data ?? '' });
      }
      // Stdout at the reader's pace (a slow pipe holds the answer back, not this process's memory).
      else if (msg.fd === 1) await writeStdout(msg.data ?? '');
      else process.stderr.write(msg.data ?? '');
      if (stdoutClosed()) {
        res.body.destroy();
        return EXIT_BROKEN_PIPE;
      }
    }
  } catch (err) {
    if (err instanceof UnrequestedFileError) throw err;
    throw serviceLost(target.url, err);
  }
  if (exit === undefined) throw serviceLost(target.url, new Error('the answer ended before the command did'));
  // Written once the command has ended, as the command in this process would have written it.
  for (const f of files) await writeUserFile(f.path, f.data);
  return exit;
}
