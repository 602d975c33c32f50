/**
 * Where a CLI command writes, and what it runs on. A command run in its own process writes to the process's
 * streams and opens the store itself; the same command run inside the service for a CLI beside it (the admin
 * endpoint, src/http/admin.ts) writes into the response stream and uses the service's store and scheduler. The
 * command's code is the same either way: it asks `commandIO()` and `commandHost()`.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Runtime } from '../runtime.js';
import type { JobArgs } from '../collectors/job.js';
import { writeUserFile } from '../store/private-files.js';
import { stdoutClosed } from '../stdio.js';

export interface CommandIO {
  out(text: string): void;
  err(text: string): void;
  /** Writes a file where the person typed the command (for a hosted command: on the CLI's side). */
  writeFile(path: string, text: string): Promise<void>;
  /** Whether the person at the other end sees a terminal (progress bars), as the calling CLI reports it. */
  readonly isTTY: boolean;
}

/** A job runner the service lends to a hosted `collect` (its scheduler, on its platform source). */
export interface HostedJobRunner {
  /** The service collects from the built-in simulator (demo mode): a hosted `collect` says so first. */
  demo?: boolean;
  run(
    job: string,
    args: JobArgs,
    progress: { start(total: number, label: string, done?: number): void; tick(done: number, detail?: string): void; stop(): void },
  ): Promise<{ status: string; error?: string; rows: number; retries: number; durationMs: number }>;
}

export interface CommandHost {
  io: CommandIO;
  runtime: Runtime;
  jobs?: HostedJobRunner;
}

const hosted = new AsyncLocalStorage<CommandHost>();

const processIO: CommandIO = {
  // After the reader went away (EPIPE), the rest of the output has nowhere to go (src/stdio.ts).
  out: (text) => {
    if (!stdoutClosed()) process.stdout.write(text);
  },
  err: (text) => void process.stderr.write(text),
  writeFile: (path, text) => writeUserFile(path, text),
  get isTTY() {
    return Boolean(process.stderr.isTTY);
  },
};

/** The streams of the running command. */
export function commandIO(): CommandIO {
  return hosted.getStore()?.io ?? processIO;
}

/** The service hosting this command, when a CLI beside it sent the command; undefined in a CLI process. */
export function commandHost(): CommandHost | undefined {
  return hosted.getStore();
}

/** Runs a command inside the service, for a CLI beside it. */
export function runHosted<T>(host: CommandHost, fn: () => Promise<T>): Promise<T> {
  return hosted.run(host, fn);
}
