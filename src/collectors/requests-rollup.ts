import { DateTime } from 'luxon';
import type { JobContext } from '../jobs/job.js';
import { refreshRequestDays, requestsExtent } from '../store/tables/requests-daily.js';

export const ROLLUP_JOB = 'requests';
export const rollupKey = (timezone: string) => `rollup:${timezone}`;
/** Rollup checkpoint value meaning "prices changed since the last build: rebuild before reading it". */
export const ROLLUP_STALE = 'stale';

/** Marks every zone's rollup stale (before anything else can fail), so the next maintenance rebuilds it. */
export async function markRollupStale(ctx: Pick<JobContext, 'runtime' | 'checkpoints'>): Promise<void> {
  for (const timezone of ctx.runtime.config.TIMEZONES) await ctx.checkpoints.save(ROLLUP_JOB, rollupKey(timezone), ROLLUP_STALE);
}

/**
 * Keeps `requests_daily` in step with `requests` for every zone in TIMEZONES: the days a run touched, plus
 * everything since the last successful refresh (so a run that died between committing requests and refreshing
 * leaves no stale day behind). A zone never built, or a change of prices, rebuilds the zone in full, a month at a
 * time. The checkpoint is saved only after the refresh is committed.
 */
export async function maintainRequestRollup(
  ctx: Pick<JobContext, 'runtime' | 'checkpoints' | 'log' | 'now'>,
  touched: { from: Date; to: Date } | null,
  opts: { rebuild?: boolean } = {},
): Promise<void> {
  const { store, config } = ctx.runtime;
  const now = ctx.now();
  for (const timezone of config.TIMEZONES) {
    const through = await ctx.checkpoints.get(ROLLUP_JOB, rollupKey(timezone));
    if (!through || through === ROLLUP_STALE || opts.rebuild) {
      const [extent] = await requestsExtent(store, {});
      if (extent && extent.n > 0) {
        let start = DateTime.fromSQL(extent.first, { zone: 'utc' });
        const end = DateTime.fromSQL(extent.last, { zone: 'utc' }).plus({ milliseconds: 1 });
        while (start < end) {
          const next = DateTime.min(start.plus({ months: 1 }), end);
          await refreshRequestDays(store, timezone, start.toJSDate(), next.toJSDate());
          start = next;
        }
        ctx.log.info({ timezone, requests: extent.n }, 'requests_daily rebuilt');
      }
    } else {
      const from = touched ? new Date(Math.min(touched.from.getTime(), Date.parse(through))) : new Date(Date.parse(through));
      const to = touched ? new Date(Math.max(touched.to.getTime(), now.getTime())) : now;
      if (from < to) await refreshRequestDays(store, timezone, from, to);
    }
    await ctx.checkpoints.save(ROLLUP_JOB, rollupKey(timezone), now.toISOString());
  }
}

/** Whether the rollup of a zone exists (built at least once): the query API reads it then, else the raw table. */
export async function rollupReady(ctx: Pick<JobContext, 'checkpoints'>, timezone: string): Promise<boolean> {
  const through = await ctx.checkpoints.get(ROLLUP_JOB, rollupKey(timezone));
  return through !== undefined && through !== ROLLUP_STALE;
}
