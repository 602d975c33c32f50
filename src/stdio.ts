/**
 * The CLI process's own stdout and stderr: output goes out whole before the process exits, also into a slow pipe
 * (a pipe takes 64 KiB; `process.exit` with more still queued cut the report there and exited 0), and a reader
 * that goes away (`| head`) ends the command quietly with EXIT_BROKEN_PIPE instead of a stack.
 */

/** What a shell reports for a process a closed pipe ended (128 + SIGPIPE): non-zero, as `yes | head` does. */
export const EXIT_BROKEN_PIPE = 141;

let stdoutBroken = false;
let watching = false;
const closedListeners = new Set<() => void>();

function isBrokenPipe(err: NodeJS.ErrnoException): boolean {
  return err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED' || err.code === 'ECONNRESET';
}

/**
 * Installed once by the process entry (src/main.ts `run`): an EPIPE on stdout marks it closed (later writes are
 * dropped, a following command such as `logs tail` stops); on stderr it is ignored (nobody is left to tell).
 */
export function watchStdio(): void {
  if (watching) return;
  watching = true;
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (!isBrokenPipe(err)) throw err;
    if (stdoutBroken) return;
    stdoutBroken = true;
    for (const listener of [...closedListeners]) listener();
  });
  process.stderr.on('error', (err: NodeJS.ErrnoException) => {
    if (!isBrokenPipe(err)) throw err;
  });
}

/** Whether the reader of stdout went away. */
export function stdoutClosed(): boolean {
  return stdoutBroken;
}

/** Calls `listener` once when the reader of stdout goes away; returns how to stop listening. */
export function onStdoutClosed(listener: () => void): () => void {
  if (stdoutBroken) {
    listener();
    return () => undefined;
  }
  closedListeners.add(listener);
  return () => closedListeners.delete(listener);
}

/**
 * Writes to stdout; resolves once the stream takes more (backpressure), so a relay of a long answer (src/cli/remote.ts)
 * does not queue it all in memory ahead of a slow reader. After the reader went away, drops the text.
 */
export function writeStdout(text: string): Promise<void> {
  if (stdoutBroken || process.stdout.destroyed) return Promise.resolve();
  if (process.stdout.write(text)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      process.stdout.off('drain', done);
      process.stdout.off('error', done);
      process.stdout.off('close', done);
      resolve();
    };
    process.stdout.once('drain', done);
    process.stdout.once('error', done);
    process.stdout.once('close', done);
  });
}

/** Resolves once everything written to the stream has been handed to the reader (or the reader went away). */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  if (stream.destroyed || stream.writableEnded || (stream === process.stdout && stdoutBroken)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      stream.off('error', done);
      stream.off('close', done);
      resolve();
    };
    stream.once('error', done);
    stream.once('close', done);
    // An empty write completes after every write queued before it (writes complete in order).
    stream.write('', done);
  });
}

/** Waits until stdout and stderr have flushed: call before `process.exit`. */
export async function flushStdio(): Promise<void> {
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
}
