import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// The CLI bundled once per run by the suite's globalSetup (test/support/cli-bundle.ts), else bin/tallyhouse.js.
export const BIN = process.env.TALLYHOUSE_TEST_CLI || fileURLToPath(new URL('../../bin/tallyhouse.js', import.meta.url));

export interface Spawned {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Waits until a stdout line matches; returns the match. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
}

/** Children still running when the test process ends (a test that failed before stopping its child) are killed. */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Runs the tallyhouse CLI as a child process with the given environment added. */
export function runCli(args: string[], env: Record<string, string | undefined> = {}): Spawned {
  const child = spawn(process.execPath, [BIN, ...args], {
    // The shutdown deadline (SHUTDOWN_TIMEOUT_MS, 10 s) is not under test where a test stops a service and expects
    // exit 0: on a loaded CI machine a stop took past it (exit 1). A test of the deadline sets its own.
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'info', SHUTDOWN_TIMEOUT_MS: '120000', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const listeners: Array<() => void> = [];
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    for (const l of listeners.slice()) l();
  });
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
  });
  running.add(child);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor(pattern, timeoutMs = 120_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = pattern.exec(out);
          if (m) {
            listeners.splice(listeners.indexOf(check), 1);
            clearTimeout(timer);
            resolve(m);
          }
        };
        const timer = setTimeout(() => {
          listeners.splice(listeners.indexOf(check), 1);
          reject(new Error(`timed out waiting for ${pattern}; stdout:\n${out}\nstderr:\n${err}`));
        }, timeoutMs);
        listeners.push(check);
        void exited.then(() => {
          if (!pattern.exec(out)) {
            clearTimeout(timer);
            reject(new Error(`process exited before ${pattern}; stdout:\n${out}\nstderr:\n${err}`));
          }
        });
        check();
      });
    },
  };
}
