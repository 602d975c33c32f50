/**
 * The CLI side of the admin endpoint (src/http/admin.ts): finds the service that holds the data directory (or
 * the one TALLYHOUSE_URL names), sends it the command and replays what the command writes, so the user types the
 * same command and gets the same output whether the service runs or not.
 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { request } from 'undici';
import { ADMIN_COMMANDS_PATH, ADMIN_FILE, AdminFile } from '../http/admin.js';
import { dataDirHolder } from '../store/client.js';
import { EXIT_BROKEN_PIPE, stdoutClosed, writeStdout } from './stdio.js';

export interface ServiceTarget {
  url: string;
  token: string;
}

export class ServiceUnreachableError extends Error {
  constructor(url: string, reason: string, message = `the running service at ${url} did not take the command (${reason}): is it still starting, or stopping?`) {
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
    `the service at ${url} stopped answering while it ran the command (${reason}): the command may have finished in part; see the service's log, and run it again once the service is up`,
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

/**
 * The service to send a command to: TALLYHOUSE_URL (token from TALLYHOUSE_ADMIN_TOKEN or the data directory),
 * or the live process holding DATA_DIR that published its address there. A service still starting (it holds the
 * directory but does not listen yet) is waited for. Undefined: run the command here.
 */
export async function findService(dataDir: string, env: NodeJS.ProcessEnv = process.env, waitMs = 60_000): Promise<ServiceTarget | undefined> {
  if (env.TALLYHOUSE_URL) {
    const token = env.TALLYHOUSE_ADMIN_TOKEN ?? readAdminFile(dataDir)?.token;
    return token ? { url: env.TALLYHOUSE_URL.replace(/\/+$/, ''), token } : undefined;
  }
  const deadline = Date.now() + waitMs;
  let told = false;
  for (;;) {
    const holder = dataDirHolder(dataDir);
    if (holder === undefined) return undefined;
    const file = readAdminFile(dataDir);
    // Held by something other than a service (a CLI command): opening the store says who holds it.
    if (!file || file.pid !== holder) return undefined;
    if (file.url && file.token) return { url: file.url, token: file.token };
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

/** Sends the command and replays its output; resolves with its exit code. */
export async function runInService(target: ServiceTarget, argv: string[]): Promise<number> {
  let res;
  try {
    res = await request(`${target.url}${ADMIN_COMMANDS_PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${target.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ argv: absolutePaths(argv), tty: Boolean(process.stderr.isTTY) }),
      // A backfill may run for hours; its output keeps the connection alive.
      headersTimeout: 60_000,
      bodyTimeout: 0,
    });
  } catch (err) {
    throw new ServiceUnreachableError(target.url, (err as NodeJS.ErrnoException).code ?? (err as Error).message);
  }
  if (res.statusCode !== 200) {
    const text = await res.body.text();
    throw new ServiceUnreachableError(target.url, `HTTP ${res.statusCode}: ${text.slice(0, 200)}`);
  }
  let exit: number | undefined;
  try {
    for await (const line of createInterface({ input: res.body, crlfDelay: Infinity })) {
      if (!line) continue;
      const msg = JSON.parse(line) as { fd?: 1 | 2; file?: string; data?: string; exit?: number };
      if (msg.exit !== undefined) exit = msg.exit;
      else if (msg.file !== undefined) await writeFile(msg.file, msg.data ?? '');
      // Stdout at the reader's pace (a slow pipe holds the answer back, not this process's memory).
      else if (msg.fd === 1) await writeStdout(msg.data ?? '');
      else process.stderr.write(msg.data ?? '');
      if (stdoutClosed()) {
        res.body.destroy();
        return EXIT_BROKEN_PIPE;
      }
    }
  } catch (err) {
    throw serviceLost(target.url, err);
  }
  if (exit === undefined) throw serviceLost(target.url, new Error('the answer ended before the command did'));
  return exit;
}
