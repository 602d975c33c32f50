import type { JobContext, JobDefinition } from '../src/jobs/job.js';
import {
  analyticsTargets,
  collectAnalyticsRange,
  parseTimeArg,
  rangeChunks,
  warnRefused,
  type AnalyticsKind,
  type AnalyticsTargets,
  type AnalyticsTimeframe,
  type RefusedEndpoints,
} from '../src/collectors/analytics.js';
import { bucketStart } from '../src/collectors/time.js';
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
 * refuses (not owned) are skipped with one warning naming them.
 */
export const analyticsJob: JobDefinition = {
  name: 'analytics',
  description: 'serverless and models analytics (counts, error types, latency percentiles) per endpoint and bucket',
  defaultCron: '*/15 * * * *',
  scope: 'api',
  label: 'the analytics collector',
  options: {
    timeframe: { type: 'string', description: 'minute, hour or day (default: ANALYTICS_TIMEFRAME)' },
    kinds: { type: 'string', description: 'serverless,models (default: both)' },
    'recollect-hours': { type: 'string', description: `hours re-collected by a scheduled run (default ${DEFAULT_RECOLLECT_HOURS})` },
  },
  async run(ctx) {
    const config = ctx.runtime.config;
    const timezones = ctx.args.timezone ? [ctx.args.timezone] : config.TIMEZONES;
    const timeframe = parseTimeframe(ctx.args.timeframe ?? config.ANALYTICS_TIMEFRAME);
    const kinds = parseKinds(ctx.args.kinds);
    const targets = await analyticsTargets(ctx, kinds);
    const refused: RefusedEndpoints = new Map();
    try {
      if (ctx.args.from || ctx.args.to) {
        if (!ctx.args.from || !ctx.args.to) throw new Error('a backfill needs both --from and --to (YYYY-MM-DD or ISO 8601, --to exclusive)');
        for (const timezone of timezones) await backfill(ctx, { timezone, timeframe, kinds, targets, refused });
      } else {
        const recollectHours = Number(ctx.args['recollect-hours'] ?? DEFAULT_RECOLLECT_HOURS);
        if (!Number.isFinite(recollectHours) || recollectHours < 0) throw new Error('--recollect-hours must be a number >= 0');
        for (const timezone of timezones) await scheduled(ctx, { timezone, timeframe, kinds, targets, refused }, recollectHours);
      }
    } finally {
      warnRefused(ctx, refused);
    }
    // Every endpoint refused: nothing to show, and most likely the key itself lacks access. Fail with its message.
    const all = [...targets.serverless, ...targets.models];
    if (all.length > 0 && all.every((id) => refused.has(id))) throw refused.get(all[0])!;
  },
};

interface RunPlan {
  timezone: string;
  timeframe: AnalyticsTimeframe;
  kinds: AnalyticsKind[];
  targets: AnalyticsTargets;
  refused: RefusedEndpoints;
}

function parseTimeframe(value: string): AnalyticsTimeframe {
  if (value === 'minute' || value === 'hour' || value === 'day') return value;
  throw new Error(`--timeframe must be minute, hour or day, got ${JSON.stringify(value)}`);
}

function parseKinds(value: string | undefined): AnalyticsKind[] {
  if (!value) return ['serverless', 'models'];
  const kinds = value.split(',').map((s) => s.trim()).filter(Boolean);
  for (const k of kinds) if (k !== 'serverless' && k !== 'models') throw new Error(`--kinds takes serverless and/or models, got ${JSON.stringify(k)}`);
  return kinds as AnalyticsKind[];
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
}

async function backfill(ctx: JobContext, plan: RunPlan): Promise<void> {
  const { timezone, timeframe } = plan;
  const from = parseTimeArg(ctx.args.from!, timezone, '--from');
  const to = Math.min(parseTimeArg(ctx.args.to!, timezone, '--to'), ctx.now().getTime());
  if (to <= from) throw new Error(`--to (${ctx.args.to}) must be after --from (${ctx.args.from}) and not after now; --to is exclusive`);
  await runResumable(ctx, {
    job: 'analytics',
    key: `backfill:${timezone}:${timeframe}:${plan.kinds.join(',')}:${ctx.args.from}:${ctx.args.to}`,
    chunks: rangeChunks(from, to, timeframe, timezone),
    label: `analytics ${timezone} ${ctx.args.from}..${ctx.args.to}`,
    position: (c) => new Date(c.startMs).toISOString(),
    logFields: { timezone },
    work: async (c) => {
      const result = await collectAnalyticsRange(ctx, { timezone, timeframe, ...c }, plan.targets, plan.refused);
      return `${new Date(c.startMs).toISOString()}: ${result.rows} rows`;
    },
  });
}
