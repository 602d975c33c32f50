import { z } from 'zod';
import { defineJob, type JobContext } from '../src/collectors/job.js';
import { commaList, recollectHours } from '../src/jobs/options.js';
import type { TimeRange } from '../src/collectors/time-args.js';
import {
  analyticsTargets,
  collectAnalyticsRange,
  rangeChunks,
  warnRefused,
  type AnalyticsKind,
  type AnalyticsTargets,
  type AnalyticsTimeframe,
  type RefusedEndpoints,
} from '../src/collectors/analytics.js';
import { collectAnalyticsSummaries } from '../src/collectors/analytics-summary.js';
import { bucketStart, TIMEFRAMES } from '../src/collectors/time.js';
import { runResumable } from '../src/jobs/resumable.js';

const HOUR_MS = 3_600_000;
/** A first run (no checkpoint) collects this far back: quick, and a day of context for the dashboards. */
const FIRST_RUN_HOURS = 24;
/** A run that finds its checkpoint older than this collects only this far back (use --from/--to beyond). */
const MAX_CATCH_UP_DAYS = 31;
const DEFAULT_RECOLLECT_HOURS = 2;

/**
 * Serverless and models analytics: the time series of every metric per endpoint and bucket, per configured
 * timezone, at ANALYTICS_TIMEFRAME (default hour). A scheduled run collects from where the last run got to,
 * re-collecting the last --recollect-hours (the current bucket is partial; recent ones may still fill in).
 * With --from/--to it backfills that range in chunks and resumes after an interruption. Endpoints the platform
 * refuses (not owned) are skipped with one warning naming them. Then the platform's whole-range summary of each
 * local day and calendar month the run covered (src/collectors/analytics-summary.ts), optional: a platform that
 * refuses `expand=summary` is noted once and the run ends ok.
 */
export const analyticsJob = defineJob({
  name: 'analytics',
  description: 'serverless and models analytics (counts, error types, latency percentiles) per endpoint and bucket',
  defaultCron: '*/15 * * * *',
  scope: 'api',
  sharded: true,
  label: 'the analytics collector',
  range: 'times',
  options: z.object({
    timeframe: z.enum(TIMEFRAMES).optional().describe('minute, hour or day (default: ANALYTICS_TIMEFRAME)'),
    kinds: commaList(z.enum(['serverless', 'models'])).default(['serverless', 'models']).describe('serverless,models (default: both)'),
    'recollect-hours': recollectHours(DEFAULT_RECOLLECT_HOURS),
  }),
  async run(ctx, options) {
    const config = ctx.runtime.config;
    const timezones = ctx.timezone ? [ctx.timezone] : config.TIMEZONES;
    const timeframe = options.timeframe ?? config.ANALYTICS_TIMEFRAME;
    const kinds = options.kinds;
    const targets = await analyticsTargets(ctx, kinds);
    const refused: RefusedEndpoints = new Map();
    try {
      const range = ctx.range;
      if (range) {
        for (const timezone of timezones) await backfill(ctx, range, { timezone, timeframe, kinds, targets, refused });
      } else {
        for (const timezone of timezones) await scheduled(ctx, { timezone, timeframe, kinds, targets, refused }, options['recollect-hours']);
      }
    } finally {
      warnRefused(ctx, refused);
    }
    // Every endpoint refused: nothing to show, and most likely the key itself lacks access. Fail with its message.
    const all = [...targets.serverless, ...targets.models];
    if (all.length > 0 && all.every((id) => refused.has(id))) throw refused.get(all[0])!;
  },
});

interface RunPlan {
  timezone: string;
  timeframe: AnalyticsTimeframe;
  kinds: AnalyticsKind[];
  targets: AnalyticsTargets;
  refused: RefusedEndpoints;
}

async function scheduled(ctx: JobContext, plan: RunPlan, recollectHours: number): Promise<void> {
  const { timezone, timeframe } = plan;
  const nowMs = ctx.now().getTime();
  const key = `scheduled:${timezone}:${timeframe}:${plan.kinds.join(',')}`;
  // The checkpoint is the start of the first bucket that was not complete when the last run ended.
  const saved = await ctx.checkpoints.get('analytics', key);
  const recollectFrom = bucketStart(nowMs - recollectHours * HOUR_MS, timeframe, timezone);
  let from = saved ? Math.min(Date.parse(saved), recollectFrom) : bucketStart(nowMs - FIRST_RUN_HOURS * HOUR_MS, timeframe, timezone);
  const floor = bucketStart(nowMs - MAX_CATCH_UP_DAYS * 24 * HOUR_MS, timeframe, timezone);
  if (from < floor) {
    ctx.log.warn({ timezone, checkpoint: saved }, `analytics were last collected more than ${MAX_CATCH_UP_DAYS} days ago; collect older data with --from/--to`);
    from = floor;
  }
  const current = bucketStart(nowMs, timeframe, timezone);
  for (const c of rangeChunks(from, nowMs, timeframe, timezone)) {
    ctx.signal.throwIfAborted();
    await collectAnalyticsRange(ctx, { timezone, timeframe, ...c }, plan.targets, plan.refused);
    await ctx.checkpoints.save('analytics', key, new Date(Math.min(c.endMs, current)).toISOString());
  }
  // The platform's own summary of every local day and month the run touched (the current ones re-collected as
  // they fill in): a period's percentiles are the platform's, not a merge of buckets.
  await collectAnalyticsSummaries(ctx, { timezone, fromMs: from, toMs: nowMs }, plan.targets, plan.refused);
}

async function backfill(ctx: JobContext, range: TimeRange, plan: RunPlan): Promise<void> {
  const { timezone, timeframe } = plan;
  const { fromMs: from, toMs } = range.instants(timezone);
  const to = Math.min(toMs, ctx.now().getTime());
  if (to <= from) throw new Error(`--to (${range.to}) must be after --from (${range.from}) and not after now; --to is exclusive`);
  await runResumable(ctx, {
    job: 'analytics',
    key: `backfill:${timezone}:${timeframe}:${plan.kinds.join(',')}:${range.from}:${range.to}`,
    chunks: rangeChunks(from, to, timeframe, timezone),
    label: `analytics ${timezone} ${range.from}..${range.to}`,
    position: (c) => new Date(c.startMs).toISOString(),
    logFields: { timezone },
    work: async (c) => {
      const result = await collectAnalyticsRange(ctx, { timezone, timeframe, ...c }, plan.targets, plan.refused);
      return `${new Date(c.startMs).toISOString()}: ${result.rows} rows`;
    },
  });
  await collectAnalyticsSummaries(ctx, { timezone, fromMs: from, toMs: to }, plan.targets, plan.refused);
}
