import type { DurationLikeObject } from 'luxon';
import type { JobContext } from './job.js';
import {
  ANALYTICS_METRIC_NAMES,
  AnalyticsRow,
  chunk,
  isPlatformError,
  ModelsPage,
  platformPaths,
  SeriesPage,
  type AnalyticsMetricName,
  type PlatformError,
} from '../platform/index.js';
import { analyticsBuckets, type AnalyticsBucketRow } from '../store/tables/analytics-buckets.js';
import { nextVersionMs, toDateTime64 } from '../values.js';
import { collectedRangeWrite } from './collected-range.js';
import { collectorRejects, commitRows, tableWrite, describeZodIssue, type CollectorRejects } from './common.js';
import { inShard, listEndpoints } from './endpoints.js';
import { bucketChunks, type Timeframe } from './time.js';
import { parseBucket } from './usage.js';
import { servedGauge } from './optional-endpoint.js';

export type AnalyticsKind = 'serverless' | 'models';
export type AnalyticsTimeframe = Timeframe;

const PATHS: Record<AnalyticsKind, string> = {
  serverless: platformPaths.serverlessAnalytics,
  models: platformPaths.modelsAnalytics,
};

/** The metric names platform-interface.md lists for `expand`: a platform serving the interface accepts these. */
export const INTERFACE_EXPAND_METRICS: readonly AnalyticsMetricName[] = [
  'startup_error_count', 'connection_error_count', 'timeout_error_count', 'runtime_error_count',
  'cold_boot_count', 'p50_cold_boot_duration', 'p75_cold_boot_duration', 'p90_cold_boot_duration',
  'p25_duration', 'p95_duration', 'p99_duration', 'p95_prepare_duration', 'p99_prepare_duration',
  'total_billable_duration',
];

/**
 * The names only platform-notes.md gives (counts where the interface gives rates, p50/p75/p90 by name, prepare
 * percentiles): optional (notes rule 3). Asked for beside the interface's set until the platform refuses them.
 */
export const EXTRA_EXPAND_METRICS: readonly AnalyticsMetricName[] = ANALYTICS_METRIC_NAMES.filter((m) => !INTERFACE_EXPAND_METRICS.includes(m));

/** What `expand=<extras>` got from a platform, per client (one platform): refused once, never asked again. */
const extrasState = new WeakMap<object, 'refused'>();
let extrasRefusalLogged = false;

/** The label the refusal is shown under (tallyhouse_platform_endpoint_served, the run's note). */
export const EXTRAS_ENDPOINT = 'analytics expand (notes-only metric names)';

export interface AnalyticsTargets {
  serverless: string[];
  models: string[];
}

/**
 * The endpoint ids to ask analytics for. Serverless: listEndpoints() (ENDPOINT_IDS, else the apps' endpoints).
 * Models: the public model endpoints of GET /v1/models (with ENDPOINT_IDS: those of its ids that are models);
 * each range then keeps only the models the caller used (see collectAnalyticsRange).
 */
export async function analyticsTargets(ctx: JobContext, kinds: readonly AnalyticsKind[]): Promise<AnalyticsTargets> {
  const modelIds = new Set<string>();
  // Model endpoints are the platform's, not apps: with COLLECTOR_SHARD, shard 0 reads all of them (one listing call).
  const shard = ctx.runtime.config.COLLECTOR_SHARD;
  if (kinds.includes('models') && (!shard || shard.index === 0)) {
    for await (const page of ctx.platform.paginate(platformPaths.models, { query: { limit: 100 }, schema: ModelsPage, itemsField: 'models', ctx: ctx.call })) {
      for (const m of page.models) modelIds.add(m.endpoint_id);
    }
  }
  const configured = ctx.runtime.config.ENDPOINT_IDS;
  if (configured && configured.length > 0) {
    const ids = [...new Set(configured)].filter((id) => modelIds.has(id) || inShard(shard, id));
    return {
      serverless: kinds.includes('serverless') ? ids.filter((id) => !modelIds.has(id)) : [],
      models: ids.filter((id) => modelIds.has(id)),
    };
  }
  return {
    serverless: kinds.includes('serverless') ? (await listEndpoints(ctx)).filter((id) => !modelIds.has(id)) : [],
    models: [...modelIds],
  };
}

export interface AnalyticsRange {
  timezone: string;
  timeframe: AnalyticsTimeframe;
  /** Epoch ms, on a bucket boundary of `timeframe` in `timezone`. */
  startMs: number;
  /** Epoch ms, exclusive. */
  endMs: number;
}

/** Endpoints the platform refused (403: not owned; 404: unknown) during a run, with the error. */
export type RefusedEndpoints = Map<string, PlatformError>;

export interface AnalyticsRangeResult {
  rows: number;
  rejected: number;
}

// Not-owned endpoints are found by halving a refused call rather than by trusting the apps listing: ownership
// is what the analytics call itself decides (teams, apps moved between owners, ENDPOINT_IDS naming any id), and
// the listing is up to an hour old. It costs about 2·log2(50) extra calls per refused endpoint, only in a run
// that meets one; the refused ids are then left out of the run's remaining chunks and timezones.

/**
 * Collects one range of analytics in one timezone: the time series of every target endpoint with every metric,
 * endpoint ids in calls of at most 50. A call the platform refuses (serverless analytics answers 403 unless the
 * caller owns every endpoint of the call) is split in halves until the refused endpoints stand alone; they are
 * added to `refused` and skipped, the others are collected. Endpoints already in `refused` are not asked for
 * again. Resolves once every row is committed.
 */
export async function collectAnalyticsRange(
  ctx: JobContext,
  range: AnalyticsRange,
  targets: AnalyticsTargets,
  refused: RefusedEndpoints,
): Promise<AnalyticsRangeResult> {
  const startedAt = ctx.now();
  const version = nextVersionMs();
  const collectedAt = toDateTime64(Date.now());
  const rejects = collectorRejects('analytics');
  const rows: AnalyticsBucketRow[] = [];
  const base = {
    start: new Date(range.startMs).toISOString(),
    end: new Date(range.endMs).toISOString(),
    timezone: range.timezone,
    timeframe: range.timeframe,
    bound_to_timeframe: 'true',
    limit: 1000,
  };

  const series = (kind: AnalyticsKind, ids: string[]): Promise<AnalyticsBucketRow[]> => withExtrasProbe(ctx, (withExtras) => seriesWith(kind, ids, withExtras));

  const seriesWith = async (kind: AnalyticsKind, ids: string[], withExtras: boolean): Promise<AnalyticsBucketRow[]> => {
    const out: AnalyticsBucketRow[] = [];
    const expand = ['time_series', ...INTERFACE_EXPAND_METRICS, ...(withExtras ? EXTRA_EXPAND_METRICS : [])];
    for await (const page of ctx.platform.paginate(PATHS[kind], {
      query: { ...base, endpoint_id: ids, expand },
      schema: SeriesPage,
      ctx: ctx.call,
    })) {
      for (const s of page.time_series ?? []) {
        const bucket = parseBucket(s.bucket, range.timezone);
        for (const raw of s.results) {
          if (typeof bucket === 'string') {
            rejects.add(raw, `bad bucket ${JSON.stringify(s.bucket)}: ${bucket}`);
            continue;
          }
          const parsed = AnalyticsRow.safeParse(raw);
          if (!parsed.success) {
            rejects.add(raw, describeZodIssue(parsed.error));
            continue;
          }
          out.push(toRow(kind, range, bucket, parsed.data, raw, version, collectedAt));
        }
      }
    }
    return out;
  };

  const live = (ids: string[]) => ids.filter((id) => !refused.has(id));
  for (const group of chunk(live(targets.serverless), 50)) {
    rows.push(...(await skippingRefused(group, refused, (ids) => series('serverless', ids))));
  }
  // Models: only those the caller used in the range (the summary says which), not a row per bucket for every
  // public model.
  for (const group of chunk(live(targets.models), 50)) {
    const used = await skippingRefused(group, refused, (ids) => usedModels(ctx, ids, base, rejects));
    for (const ids of chunk(used, 50)) rows.push(...(await skippingRefused(ids, refused, (g) => series('models', g))));
  }

  if (extrasState.get(ctx.platform) === 'refused') ctx.note(`${EXTRAS_ENDPOINT} not served: the interface's set collected`);
  else servedGauge(ctx).set({ endpoint: EXTRAS_ENDPOINT }, 1);
  const rejected = rejects.rows.length;
  const stored = await commitRows(ctx, [tableWrite(analyticsBuckets, rows)], rejects, { timezone: range.timezone, start: base.start, end: base.end });
  // The range vouches for its rows: recorded after they are stored, and only when no endpoint was left out or
  // refused by the store, as of when the reads began (coverage must never say complete for what was not read).
  if (stored.refused === 0 && refused.size === 0) await commitRows(ctx, [collectedRangeWrite('analytics', range, startedAt)], rejects);
  return { rows: rows.length, rejected };
}

/**
 * Runs `call` asking for the notes' extra metric names too, unless this platform refused them before. A platform
 * that checks `expand` against the interface refuses them (422, or 400 validation_error): noted once, and the
 * call made again with the interface's set only, as every later one is (issue 50.2).
 */
async function withExtrasProbe<T>(ctx: JobContext, call: (withExtras: boolean) => Promise<T>): Promise<T> {
  const withExtras = extrasState.get(ctx.platform) !== 'refused';
  try {
    return await call(withExtras);
  } catch (err) {
    if (!withExtras || !isPlatformError(err) || !(err.status === 422 || (err.status === 400 && err.type === 'validation_error'))) throw err;
    extrasState.set(ctx.platform, 'refused');
    noteExtrasRefused(ctx, err);
    return await call(false);
  }
}

function noteExtrasRefused(ctx: JobContext, err: PlatformError): void {
  servedGauge(ctx).set({ endpoint: EXTRAS_ENDPOINT }, 0);
  if (extrasRefusalLogged) return;
  extrasRefusalLogged = true;
  ctx.log.warn(
    { endpoint: EXTRAS_ENDPOINT, status: err.status, refused: EXTRA_EXPAND_METRICS },
    `the platform refused the analytics metric names only the platform notes give (${err.status}); collecting the interface's set (${EXTRA_EXPAND_METRICS.join(', ')} not collected)`,
  );
}

async function usedModels(
  ctx: JobContext,
  ids: string[],
  base: Record<string, string | number>,
  rejects: CollectorRejects,
): Promise<string[]> {
  return withExtrasProbe(ctx, (withExtras) => usedModelsWith(ctx, ids, base, rejects, withExtras));
}

async function usedModelsWith(
  ctx: JobContext,
  ids: string[],
  base: Record<string, string | number>,
  rejects: CollectorRejects,
  withExtras: boolean,
): Promise<string[]> {
  const used: string[] = [];
  // request_count is in the interface's base analytics ("request counts"); by name it is one of the notes' extras.
  for await (const page of ctx.platform.paginate(platformPaths.modelsAnalytics, {
    query: { ...base, endpoint_id: ids, expand: withExtras ? ['summary', 'request_count'] : ['summary'] },
    schema: SeriesPage,
    ctx: ctx.call,
  })) {
    for (const raw of page.summary ?? []) {
      const parsed = AnalyticsRow.safeParse(raw);
      if (!parsed.success) {
        rejects.add(raw, `summary: ${describeZodIssue(parsed.error)}`);
        continue;
      }
      // A row without request_count is kept: better a row of zeros than a model missed.
      if (parsed.data.request_count !== 0) used.push(parsed.data.endpoint_id);
    }
  }
  return [...new Set(used)];
}

function isRefusal(err: unknown): err is PlatformError {
  return isPlatformError(err) && (err.status === 403 || err.status === 404);
}

/** Runs `fetch` for the group; when the platform refuses it, halves it until the refused ids stand alone. */
async function skippingRefused<T>(ids: string[], refused: RefusedEndpoints, fetch: (ids: string[]) => Promise<T[]>): Promise<T[]> {
  if (ids.length === 0) return [];
  try {
    return await fetch(ids);
  } catch (err) {
    if (!isRefusal(err)) throw err;
    if (ids.length === 1) {
      refused.set(ids[0], err);
      return [];
    }
    const mid = Math.ceil(ids.length / 2);
    const left = await skippingRefused(ids.slice(0, mid), refused, fetch);
    const right = await skippingRefused(ids.slice(mid), refused, fetch);
    return [...left, ...right];
  }
}

function toRow(
  kind: AnalyticsKind,
  range: AnalyticsRange,
  bucket: { utc: string; offsetMinutes: number },
  r: AnalyticsRow,
  raw: unknown,
  version: number,
  collectedAt: string,
): AnalyticsBucketRow {
  const metrics = Object.fromEntries(ANALYTICS_METRIC_NAMES.map((m) => [m, r[m] ?? null])) as Record<AnalyticsMetricName, number | null>;
  const rate = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  return {
    kind,
    timezone: range.timezone,
    timeframe: range.timeframe,
    bucket: bucket.utc,
    bucket_offset_minutes: bucket.offsetMinutes,
    endpoint_id: r.endpoint_id,
    endpoint_scope: kind === 'models' ? 'model' : r.endpoint_id.split('/').length <= 2 ? 'app' : 'route',
    ...metrics,
    success_rate: rate(r.success_rate),
    error_rate: rate(r.error_rate),
    raw: JSON.stringify(raw),
    version,
    collected_at: collectedAt,
  };
}

// ---- windows ------------------------------------------------------------------------------------------------

/** How much one call covers: enough buckets to be worth a call, few enough pages to redo after a failure. */
const CHUNK: Record<AnalyticsTimeframe, DurationLikeObject> = {
  minute: { hours: 6 },
  hour: { days: 1 },
  day: { months: 1 },
};

/** Splits [startMs, endMs) into the chunks of one call each, beginning on bucket boundaries. */
export function rangeChunks(startMs: number, endMs: number, timeframe: AnalyticsTimeframe, timezone: string): Array<{ startMs: number; endMs: number }> {
  return bucketChunks(startMs, endMs, timeframe, timezone, CHUNK[timeframe]);
}

/** One warning per run naming every endpoint skipped, and why. */
export function warnRefused(ctx: JobContext, refused: RefusedEndpoints): void {
  if (refused.size === 0) return;
  const ids = [...refused.keys()].sort();
  const statuses = [...new Set([...refused.values()].map((e) => e.status))];
  ctx.log.warn(
    { endpoints: ids, statuses },
    `analytics skipped ${ids.length} endpoint(s) the platform refused (403: not owned by the caller; 404: unknown): ${ids.join(', ')}`,
  );
}
