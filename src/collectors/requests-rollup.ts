import type { JobContext } from './job.js';

// The requests job (jobs/requests.ts) keeps requests_daily up to date and saves these checkpoints (only jobs/ saves
// checkpoints); the query API reads them here to choose between the rollup and the raw table.

export const ROLLUP_JOB = 'requests';
export const rollupKey = (timezone: string) => `rollup:${timezone}`;
/** Rollup checkpoint value meaning "prices changed since the last build: rebuild before reading it". */
export const ROLLUP_STALE = 'stale';

/** Whether the rollup of a zone exists (built at least once): the query API reads it then, else the raw table. */
export async function rollupReady(ctx: Pick<JobContext, 'checkpoints'>, timezone: string): Promise<boolean> {
  const through = await ctx.checkpoints.get(ROLLUP_JOB, rollupKey(timezone));
  return through !== undefined && through !== ROLLUP_STALE;
}
