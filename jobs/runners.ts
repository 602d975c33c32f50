import type { JobContext, JobDefinition } from '../src/jobs/job.js';
import { listApps, type AppRef } from '../src/collectors/endpoints.js';
import { parseTimeArg } from '../src/collectors/analytics.js';
import {
  collectRunnerHistory,
  historyChunks,
  nextBucket,
  type RunnerAggregation,
  type RunnerTimeframe,
} from '../src/collectors/runners.js';
import { bucketStart } from '../src/collectors/time.js';
import { runResumable } from '../src/jobs/resumable.js';
import type { PlatformError } from '../src/platform/index.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const FIRST_RUN_HOURS = 24;
/** The platform serves runner history up to 90 days back; a day less leaves room for clock skew. */
const MAX_BACK_DAYS = 89;
const DEFAULT_RECOLLECT_HOURS = 2;

/**
 * Runner history per app: counts of running, idle, pending and draining runners per bucket, by `max` and
 * `avg`, per configured timezone. A scheduled run collects from where the last run got to (re-collecting
 * the last --recollect-hours: the current bucket is partial); --from/--to backfills (at most 90 days back).
 */
export const runnersJob: JobDefinition = {
  name: 'runners',
  description: 'runner counts by state (running, idle, pending, draining) per app and bucket',
  defaultCron: '*/15 * * * *',
  scope: 'api',
  label: 'the runners collector',
  options: {
    timeframe: { type: 'string', description: 'minute, hour or day (default hour)' },
    aggregations: { type: 'string', description: 'max,avg (default both)' },
    'recollect-hours': { type: 'string', description: `hours re-collected by a scheduled run (default ${DEFAULT_RECOLLECT_HOURS})` },
  },
  async run(ctx) {
    const timezones = ctx.args.timezone ? [ctx.args.timezone] : ctx.runtime.config.TIMEZONES;
    const timeframe = parseTimeframe(ctx.args.timeframe ?? 'hour');
    const aggregations = parseAggregations(ctx.args.aggregations);
    const apps = await listApps(ctx);
    const refused = new Map<string, PlatformError>();
    const plan = { timeframe, aggregations, apps, refused };
    try {
      if (ctx.args.from || ctx.args.to) {
        if (!ctx.args.from || !ctx.args.to) throw new Error('a backfill needs both --from and --to (YYYY-MM-DD or ISO 8601, --to exclusive)');
        for (const timezone of timezones) await backfill(ctx, { ...plan, timezone });
      } else {
        const recollectHours = Number(ctx.args['recollect-hours'] ?? DEFAULT_RECOLLECT_HOURS);
        if (!Number.isFinite(recollectHours) || recollectHours < 0) throw new Error('--recollect-hours must be a number >= 0');
        for (const timezone of timezones) await scheduled(ctx, { ...plan, timezone }, recollectHours);
      }
    } finally {
      if (refused.size > 0) {
        const ids = [...refused.keys()].sort();
        ctx.log.warn({ apps: ids }, `runner history skipped ${ids.length} app(s) the platform refused (403/404): ${ids.join(', ')}`);
      }
    }
  },
};

interface Plan {
  timezone: string;
  timeframe: RunnerTimeframe;
  aggregations: RunnerAggregation[];
  apps: AppRef[];
  refused: Map<string, PlatformError>;
}

function parseTimeframe(value: string): RunnerTimeframe {
  if (value === 'minute' || value === 'hour' || value === 'day') return value;
  throw new Error(`--timeframe must be minute, hour or day, got ${JSON.stringify(value)}`);
}

function parseAggregations(value: string | undefined): RunnerAggregation[] {
  if (!value) return ['max', 'avg'];
  const list = value.split(',').map((s) => s.trim()).filter(Boolean);
  for (const a of list) if (a !== 'max' && a !== 'avg') throw new Error(`--aggregations takes max and/or avg, got ${JSON.stringify(a)}`);
  return list as RunnerAggregation[];
}

async function collect(ctx: JobContext, plan: Plan, chunk: { startMs: number; endMs: number }) {
  const live = plan.apps.filter((a) => !plan.refused.has(a.endpoint_id));
  const result = await collectRunnerHistory(ctx, live, { timezone: plan.timezone, timeframe: plan.timeframe, aggregations: plan.aggregations, ...chunk });
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

async function backfill(ctx: JobContext, plan: Plan): Promise<void> {
  const nowMs = ctx.now().getTime();
  let from = parseTimeArg(ctx.args.from!, plan.timezone, '--from');
  const to = Math.min(parseTimeArg(ctx.args.to!, plan.timezone, '--to'), nowMs);
  const oldest = oldestAllowed(nowMs, plan);
  if (from < oldest) {
    ctx.log.warn({ from: ctx.args.from, oldest: new Date(oldest).toISOString() }, 'the platform keeps 90 days of runner history; collecting from the oldest bucket it serves');
    from = oldest;
  }
  if (to <= from) throw new Error(`--to (${ctx.args.to}) must be after --from (${ctx.args.from}) and not after now; --to is exclusive`);
  await runResumable(ctx, {
    job: 'runners',
    key: `backfill:${plan.timezone}:${plan.timeframe}:${plan.aggregations.join(',')}:${ctx.args.from}:${ctx.args.to}`,
    chunks: historyChunks(from, to, plan.timeframe, plan.timezone),
    label: `runners ${plan.timezone} ${ctx.args.from}..${ctx.args.to}`,
    position: (c) => new Date(c.startMs).toISOString(),
    logFields: { timezone: plan.timezone },
    work: async (c) => {
      const result = await collect(ctx, plan, c);
      return `${new Date(c.startMs).toISOString()}: ${result.rows} rows`;
    },
  });
}
