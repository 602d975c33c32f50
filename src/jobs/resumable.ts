import type { JobContext } from '../collectors/job.js';

/** Checkpoint value of a backfill that went through every chunk. */
export const BACKFILL_DONE = 'done';

export interface ResumableBackfill<C> {
  /** Checkpoint job and key; the key names the backfill (range, zone, options), so running it again resumes it. */
  job: string;
  key: string;
  chunks: readonly C[];
  /** Progress label. */
  label: string;
  /** The checkpoint value that makes `chunk` the next one to do: its start, as text. */
  position(chunk: C): string;
  /** Collects one chunk and resolves once its rows are committed; returns the progress line's detail. */
  work(chunk: C): Promise<string>;
  /** Extra fields of the "resuming" log line (the timezone, ...). */
  logFields?: Record<string, unknown>;
  /**
   * Chunks collected at once (default 1). The checkpoint still only moves past chunks all of whose predecessors
   * are committed too, so an interruption resumes at the first chunk not done (later ones done are collected again,
   * which is idempotent).
   */
  concurrency?: number;
}

/**
 * A `--from/--to` backfill, chunk by chunk (`concurrency` at once), saving the position of the first chunk not yet
 * committed after each committed chunk ('done' after the last). An interrupted backfill run again resumes at its next chunk; a finished one (or one
 * whose saved position is no chunk's) collects everything again.
 */
export async function runResumable<C>(
  ctx: Pick<JobContext, 'checkpoints' | 'progress' | 'signal' | 'log'>,
  backfill: ResumableBackfill<C>,
): Promise<void> {
  const { job, key, chunks, position } = backfill;
  const saved = await ctx.checkpoints.get(job, key);
  const resumeAt = saved && saved !== BACKFILL_DONE ? chunks.findIndex((c) => position(c) === saved) : 0;
  const first = resumeAt < 0 ? 0 : resumeAt;
  if (first > 0) ctx.log.info({ ...backfill.logFields, resumeFrom: saved }, `resuming an interrupted ${job} backfill`);
  ctx.progress.start(chunks.length, backfill.label, first);
  const done = new Set<number>();
  let next = first; // the next chunk to hand to a worker
  let frontier = first; // chunks before it are all committed
  let saving = Promise.resolve();
  let failed = false;
  const worker = async (): Promise<void> => {
    while (next < chunks.length && !failed) {
      ctx.signal.throwIfAborted();
      const i = next++;
      let detail: string;
      try {
        detail = await backfill.work(chunks[i]);
      } catch (err) {
        failed = true; // the other lanes finish their chunk and take no new one
        throw err;
      }
      done.add(i);
      const before = frontier;
      while (done.has(frontier)) done.delete(frontier++);
      if (frontier > before) {
        const value = frontier < chunks.length ? position(chunks[frontier]) : BACKFILL_DONE;
        // Saved in order: a later save never lands before an earlier one.
        saving = saving.then(() => ctx.checkpoints.save(job, key, value));
        await saving;
      }
      ctx.progress.tick(frontier, detail);
    }
  };
  const lanes = Math.max(1, Math.min(backfill.concurrency ?? 1, chunks.length - first));
  // Every lane settles before the run ends (none still writing when the job reports its outcome).
  const settled = await Promise.allSettled(Array.from({ length: lanes }, worker));
  ctx.progress.stop();
  const failure = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason;
}
