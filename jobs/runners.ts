import { z } from 'zod';
import { defineJob, type JobContext } from '../src/collectors/job.js';
import { commaList, recollectHours } from '../src/jobs/options.js';
import type { TimeRange } from '../src/collectors/time-args.js';
import { listApps, type AppRef } from '../src/collectors/endpoints.js';
import {
  collectRunnerHistory,
  historyChunks,
  nextBucket,
  type RunnerAggregation,
  type RunnerTimeframe,
} from '../src/collectors/runners.js';
import { bucketStart, TIMEFRAMES } from '../src/collectors/time.js';
import { runResumable } from '../src/jobs/resumable.js';
import { isPlatformError, type PlatformError } from '../src/platform/index.js';
import { servedGauge } from '../src/collectors/optional-endpoint.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const FIRST_RUN_HOURS = 24;
/** The platform serves runner history up to 90 days back; a day less leaves room for clock skew. */
const MAX_BACK_DAYS = 89;
const DEFAULT_RECOLLECT_HOURS = 2;
/**
 * The look-back the interface states for runner history (24 hours); anything older is the notes' 90 days, optional
 * (rule 3): asked for, and when refused, noted once and not asked again in the run (issue 50.2).
 */
const INTERFACE_LOOKBACK_MS = 24 * HOUR_MS;
const LOOKBACK_FEATURE = 'runner history beyond 24 hours';

/**
 * Runner history per app: counts of running, idle, pending and draining runners per bucket, by `max` and
 * `avg`, per configured timezone. A scheduled run collects from where the last run got to (re-collecting
 * the last --recollect-hours: the current bucket is partial); --from/--to backfills (at most 90 days back).
 */
export const runnersJob = defineJob({
  name: 'runners',
  description: 'runner counts by state (running, idle, pending, draining) per app and bucket',
  defaultCron: '*/15 * * * *',
  scope: 'api',
  sharded: true,
  label: 'the runners collector',
  range: 'times',
  options: z.object({
    timeframe: z.enum(TIMEFRAMES).default('hour').describe('minute, hour or day (default hour)'),
    aggregations: commaList(z.enum(['max', 'avg'])).default(['max', 'avg']).describe('max,avg (default both)'),
    'recollect-hours': recollectHours(DEFAULT_RECOLLECT_HOURS),
  }),
  async run(ctx, options) {
    const timezones = ctx.timezone ? [ctx.timezone] : ctx.runtime.config.TIMEZONES;
    const apps = await listApps(ctx);
    const refused = new Map<string, PlatformError>();
    const plan = { timeframe: options.timeframe, aggregations: options.aggregations, apps, refused, lookback: { refused: false } };
    try {
      const range = ctx.range;
      if (range) {
        for (const timezone of timezones) await backfill(ctx, range, { ...plan, timezone });
      } else {
        for (const timezone of timezones) await scheduled(ctx, { ...plan, timezone }, options['recollect-hours']);
      }
    } finally {
      if (refused.size > 0) {
        const ids = [...refused.keys()].sort();
        ctx.log.warn({ apps: ids }, `runner history skipped ${ids.length} app(s) the platform refused (403/404): ${ids.join(', ')}`);
      }
    }
  },
});

interface Plan {
  timezone: string;
  timeframe: RunnerTimeframe;
  aggregations: RunnerAggregation[];
  apps: AppRef[];
  refused: Map<string, PlatformError>;
  /** Shared by the run's timezones: the platform refused a start older than the interface's 24 hours. */
  lookback: { refused: boolean };
}

/** The first bucket start inside the interface's 24 hours: what every platform serves. */
function guaranteedFrom(nowMs: number, plan: Plan): number {
  const limit = nowMs - INTERFACE_LOOKBACK_MS;
  const s = bucketStart(limit, plan.timeframe, plan.timezone);
  return s < limit ? nextBucket(s, plan.timeframe, plan.timezone) : s;
}

/** A refusal of the range itself (422, or 400 validation_error), not of an app (403/404). */
function isRangeRefusal(err: unknown): err is PlatformError {
  return isPlatformError(err) && (err.status === 422 || (err.status === 400 && err.type === 'validation_error'));
}

async function collect(ctx: JobContext, plan: Plan, chunk: { startMs: number; endMs: number }): Promise<{ rows: number }> {
  const nowMs = ctx.now().getTime();
  const guaranteed = guaranteedFrom(nowMs, plan);
  if (plan.lookback.refused && chunk.startMs < guaranteed) {
    chunk = { startMs: guaranteed, endMs: chunk.endMs };
    if (chunk.startMs >= chunk.endMs) return { rows: 0 };
  }
  const live = plan.apps.filter((a) => !plan.refused.has(a.endpoint_id));
  let result;
  try {
    result = await collectRunnerHistory(ctx, live, { timezone: plan.timezone, timeframe: plan.timeframe, aggregations: plan.aggregations, ...chunk });
  } catch (err) {
    if (!isRangeRefusal(err) || chunk.startMs >= guaranteed) throw err;
    plan.lookback.refused = true;
    servedGauge(ctx).set({ endpoint: LOOKBACK_FEATURE }, 0);
    const note = `${LOOKBACK_FEATURE} not served (the platform answered ${err.status}): before ${new Date(guaranteed).toISOString()} not collected`;
    ctx.log.warn({ endpoint: LOOKBACK_FEATURE, status: err.status, notCollectedBefore: new Date(guaranteed).toISOString() }, note);
    ctx.note(note);
    return collect(ctx, plan, chunk);
  }
  for (const [id, err] of result.refused) plan.refused.set(id, err);
  return result;
}

/** The earliest bucket start the platform still serves (the first whole bucket inside its 90 days). */
function oldestAllowed(nowMs: number, plan: Plan): number {
  const limit = nowMs - MAX_BACK_DAYS * DAY_MS;
  const s = bucketStart(limit, plan.timeframe, plan.timezone);
  return s < limit ? nextBucket(s, plan.timeframe, plan.timezone) : s;
}

async function scheduled(ctx: JobContext, plan: Plan, recollectHours: number): Promise<void> {
  const nowMs = ctx.now().getTime();
  const key = `scheduled:${plan.timezone}:${plan.timeframe}:${plan.aggregations.join(',')}`;
  const saved = await ctx.checkpoints.get('runners', key);
  const recollectFrom = bucketStart(nowMs - recollectHours * HOUR_MS, plan.timeframe, plan.timezone);
  let from = saved ? Math.min(Date.parse(saved), recollectFrom) : bucketStart(nowMs - FIRST_RUN_HOURS * HOUR_MS, plan.timeframe, plan.timezone);
  const oldest = oldestAllowed(nowMs, plan);
  if (from < oldest) {
    ctx.log.warn({ timezone: plan.timezone, checkpoint: saved }, 'runner history was last collected before the 90 days the platform keeps; collecting from there');
    from = oldest;
  }
  const current = bucketStart(nowMs, plan.timeframe, plan.timezone);
  for (const c of historyChunks(from, nowMs, plan.timeframe, plan.timezone)) {
    ctx.signal.throwIfAborted();
    await collect(ctx, plan, c);
    await ctx.checkpoints.save('runners', key, new Date(Math.min(c.endMs, current)).toISOString());
  }
}

async function backfill(ctx: JobContext, range: TimeRange, plan: Plan): Promise<void> {
  const nowMs = ctx.now().getTime();
  const instants = range.instants(plan.timezone);
  let from = instants.fromMs;
  const to = Math.min(instants.toMs, nowMs);
  const oldest = oldestAllowed(nowMs, plan);
  if (from < oldest) {
    ctx.log.warn({ from: range.from, oldest: new Date(oldest).toISOString() }, 'the platform keeps 90 days of runner history; collecting from the oldest bucket it serves');
    from = oldest;
  }
  if (to <= from) throw new Error(`--to (${range.to}) must be after --from (${range.from}) and not after now; --to is exclusive`);
  await runResumable(ctx, {
    job: 'runners',
    key: `backfill:${plan.timezone}:${plan.timeframe}:${plan.aggregations.join(',')}:${range.from}:${range.to}`,
    chunks: historyChunks(from, to, plan.timeframe, plan.timezone),
    label: `runners ${plan.timezone} ${range.from}..${range.to}`,
    position: (c) => new Date(c.startMs).toISOString(),
    logFields: { timezone: plan.timezone },
    work: async (c) => {
      const result = await collect(ctx, plan, c);
      return `${new Date(c.startMs).toISOString()}: ${result.rows} rows`;
    },
  });
}
