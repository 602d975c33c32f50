import cliProgress from 'cli-progress';

/** Progress of long work: a bar on a TTY, plain lines otherwise (logs, CI), silent for scheduled runs. */
export interface Progress {
  /** `done` > 0 when resuming. */
  start(total: number, label: string, done?: number): void;
  tick(done: number, detail?: string): void;
  stop(): void;
}

export const silentProgress: Progress = { start() {}, tick() {}, stop() {} };

/**
 * A bar on a terminal, plain lines otherwise. `to` is the process's stderr, or the output of a command the service
 * runs for a CLI beside it (lines: a bar does not survive the trip).
 */
export function consoleProgress(to: NodeJS.WriteStream | { err(text: string): void } = process.stderr): Progress {
  const stream = 'err' in to ? { isTTY: false, write: (text: string) => to.err(text) } : to;
  if (stream.isTTY) {
    const bar = new cliProgress.SingleBar(
      { format: '{label} [{bar}] {percentage}% | {value}/{total} | {detail}', stream: stream as NodeJS.WriteStream, hideCursor: true },
      cliProgress.Presets.shades_classic,
    );
    let started = false;
    return {
      start(total, label, done = 0) {
        bar.start(total, done, { label, detail: done > 0 ? 'resumed' : '' });
        started = true;
      },
      tick(done, detail = '') {
        bar.update(done, { detail });
      },
      stop() {
        if (started) bar.stop();
        started = false;
      },
    };
  }
  let total = 0;
  let label = '';
  let lastLineAt = 0;
  return {
    start(t, l, done = 0) {
      total = t;
      label = l;
      stream.write(`${label}: ${done}/${total}${done > 0 ? ' (resumed)' : ''}\n`);
    },
    tick(done, detail = '') {
      // At most a line a second, plus the last one.
      const now = Date.now();
      if (done < total && now - lastLineAt < 1000) return;
      lastLineAt = now;
      const pct = total > 0 ? Math.floor((done / total) * 100) : 100;
      stream.write(`${label}: ${done}/${total} (${pct}%)${detail ? ` ${detail}` : ''}\n`);
    },
    stop() {},
  };
}
