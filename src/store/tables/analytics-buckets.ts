import { z } from 'zod';
import { ANALYTICS_METRIC_NAMES, type AnalyticsMetricName } from '../../platform/schemas.js';
import { chNumber, defineTable, namedQuery } from './table.js';

// Metric values are JSON numbers: the collector parses them into doubles and stores those doubles as they
// are (Float64 round-trips them exactly), so a stored percentile is the delivered one. They are durations
// and counts, not money; nothing sums or averages percentiles.

export const ANALYTICS_COUNT_METRICS = ANALYTICS_METRIC_NAMES.filter((m) => m.endsWith('_count'));
export const ANALYTICS_DURATION_METRICS = ANALYTICS_METRIC_NAMES.filter((m) => !m.endsWith('_count'));

const metricColumns = Object.fromEntries(
  ANALYTICS_METRIC_NAMES.map((m) => [m, m.endsWith('_count') ? z.number().int().nonnegative().nullable() : z.number().nullable()]),
) as Record<AnalyticsMetricName, z.ZodNullable<z.ZodNumber>>;

export const AnalyticsBucketRow = z.object({
  kind: z.enum(['serverless', 'models']),
  timezone: z.string(),
  timeframe: z.string(),
  bucket: z.string(), // DateTime64(3) UTC text
  bucket_offset_minutes: z.number().int(),
  endpoint_id: z.string(),
  endpoint_scope: z.enum(['app', 'route', 'model']),
  ...metricColumns,
  // The interface's rates (sql/031), 0-1; NULL when the platform gave counts instead.
  success_rate: z.number().nullable().optional(),
  error_rate: z.number().nullable().optional(),
  raw: z.string(),
  version: z.number().int().nonnegative(),
  collected_at: z.string(),
});
export type AnalyticsBucketRow = z.input<typeof AnalyticsBucketRow>;

export const analyticsBuckets = defineTable('analytics_buckets', AnalyticsBucketRow);

const nullableNumber = chNumber.nullable();
const metricsOut = <const M extends readonly string[]>(names: M) =>
  Object.fromEntries(names.map((m) => [m, nullableNumber])) as Record<M[number], typeof nullableNumber>;

/** Common parameters: one timezone and timeframe, [from, to) on the bucket start, endpoint ids (empty: all). */
export interface AnalyticsRangeParams extends Record<string, unknown> {
  kind: 'serverless' | 'models';
  timezone: string;
  timeframe: string;
  /** DateTime64(3) UTC text or ISO. */
  from: string;
  to: string;
  endpoint_ids: string[];
}

const RANGE_WHERE = `kind = {kind:String} AND timezone = {timezone:String} AND timeframe = {timeframe:String}
     AND bucket >= parseDateTime64BestEffort({from:String}, 3, 'UTC') AND bucket < parseDateTime64BestEffort({to:String}, 3, 'UTC')
     AND (length({endpoint_ids:Array(String)}) = 0 OR has({endpoint_ids:Array(String)}, endpoint_id))`;

export const LATENCY_METRICS = [
  'request_count',
  'cold_boot_count',
  ...ANALYTICS_DURATION_METRICS.filter((m) => m !== 'total_billable_duration'),
] as const;

/** The key columns of every by-bucket query; `bucket_utc` is the bucket start, 'YYYY-MM-DD hh:mm:ss.sss' UTC. */
const BucketKeys = z.object({
  endpoint_id: z.string(),
  endpoint_scope: z.string(),
  bucket_utc: z.string(),
  bucket_offset_minutes: chNumber,
});

/**
 * A query per endpoint and bucket of a range, in that order, reading the columns `row` adds to BucketKeys: the
 * by-bucket queries differ only in what they read.
 */
function byBucket<R extends z.ZodObject>(name: string, row: R) {
  const columns = Object.keys(row.shape).filter((c) => !(c in BucketKeys.shape));
  return namedQuery(
    name,
    `SELECT endpoint_id, endpoint_scope, toString(bucket) AS bucket_utc, bucket_offset_minutes, ${columns.join(', ')}
   FROM analytics_buckets FINAL
   WHERE ${RANGE_WHERE}
   ORDER BY endpoint_id, bucket`,
    row,
  );
}

/**
 * Latency per endpoint and bucket (GET /latency): every percentile exactly as delivered, with the request and
 * cold-boot counts they were taken over. A NULL percentile is a bucket without requests.
 */
export const latencyByBucket = byBucket('analytics_latency_by_bucket', BucketKeys.extend(metricsOut(LATENCY_METRICS)));

/** The outcome and error-type counts, in the order /errors answers them. */
export const ERROR_METRICS = [
  'request_count',
  'success_count',
  'user_error_count',
  'error_count',
  'startup_error_count',
  'connection_error_count',
  'timeout_error_count',
  'runtime_error_count',
] as const;

/** Outcomes and error-type counts per endpoint and bucket (GET /errors). */
export const errorsByBucket = byBucket('analytics_errors_by_bucket', BucketKeys.extend(metricsOut(ERROR_METRICS)));

/** What the anomalies job judges per endpoint and bucket: requests, 5xx and the p95 duration (seconds). */
export const anomalyInputsByBucket = byBucket('analytics_anomaly_inputs_by_bucket', BucketKeys.extend(metricsOut(['request_count', 'error_count', 'p95_duration'] as const)));

/**
 * Outcome and error-type counts summed over a range per endpoint (counts add up; percentiles do not, so none
 * are offered here). `app` rows already include their routes: do not add them to their route rows.
 */
export const errorTotals = namedQuery(
  'analytics_error_totals',
  `SELECT endpoint_id, endpoint_scope, count() AS buckets,
          ${[...ERROR_METRICS, 'cold_boot_count'].map((m) => `sum(${m}) AS ${m}`).join(', ')},
          sum(total_billable_duration) AS total_billable_duration
   FROM analytics_buckets FINAL
   WHERE ${RANGE_WHERE}
   GROUP BY endpoint_id, endpoint_scope
   ORDER BY endpoint_id`,
  z.object({
    endpoint_id: z.string(),
    endpoint_scope: z.string(),
    buckets: chNumber,
    ...metricsOut([...ERROR_METRICS, 'cold_boot_count', 'total_billable_duration']),
  }),
);

/** Every stored metric of a range, per endpoint and bucket (exports, comparisons). */
export const analyticsByBucket = byBucket('analytics_by_bucket', BucketKeys.extend({ ...metricsOut(ANALYTICS_METRIC_NAMES), raw: z.string() }));
