import type { JobContext } from './job.js';

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
}

/**
 * A `--from/--to` backfill, one chunk at a time, saving the next chunk's position after each committed chunk
 * ('done' after the last). An interrupted backfill run again resumes at its next chunk; a finished one (or one
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
  for (let i = first; i < chunks.length; i++) {
    ctx.signal.throwIfAborted();
    const detail = await backfill.work(chunks[i]);
    await ctx.checkpoints.save(job, key, i + 1 < chunks.length ? position(chunks[i + 1]) : BACKFILL_DONE);
    ctx.progress.tick(i + 1, detail);
  }
  ctx.progress.stop();
}
