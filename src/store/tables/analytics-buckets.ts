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
  raw: z.string(),
  version: z.number().int().nonnegative(),
  collected_at: z.string(),
});
export type AnalyticsBucketRow = z.input<typeof AnalyticsBucketRow>;

export const analyticsBuckets = defineTable('analytics_buckets', AnalyticsBucketRow);

const nullableNumber = chNumber.nullable();
const metricsOut = (names: readonly string[]) => Object.fromEntries(names.map((m) => [m, nullableNumber])) as Record<string, typeof nullableNumber>;

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

const LATENCY_METRICS = [
  'request_count',
  'cold_boot_count',
  ...ANALYTICS_DURATION_METRICS.filter((m) => m !== 'total_billable_duration'),
] as const;

/**
 * Latency per endpoint and bucket (GET /latency): every percentile exactly as delivered, with the request and
 * cold-boot counts they were taken over. A NULL percentile is a bucket without requests.
 */
export const latencyByBucket = namedQuery(
  'analytics_latency_by_bucket',
  `SELECT endpoint_id, endpoint_scope, toString(bucket) AS bucket_utc, bucket_offset_minutes, ${LATENCY_METRICS.join(', ')}
   FROM analytics_buckets FINAL
   WHERE ${RANGE_WHERE}
   ORDER BY endpoint_id, bucket`,
  z.object({
    endpoint_id: z.string(),
    endpoint_scope: z.string(),
    bucket_utc: z.string(), // bucket start, 'YYYY-MM-DD hh:mm:ss.sss' UTC
    bucket_offset_minutes: chNumber,
    ...metricsOut(LATENCY_METRICS),
  }),
);

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
export const errorsByBucket = namedQuery(
  'analytics_errors_by_bucket',
  `SELECT endpoint_id, endpoint_scope, toString(bucket) AS bucket_utc, bucket_offset_minutes, ${ERROR_METRICS.join(', ')}
   FROM analytics_buckets FINAL
   WHERE ${RANGE_WHERE}
   ORDER BY endpoint_id, bucket`,
  z.object({
    endpoint_id: z.string(),
    endpoint_scope: z.string(),
    bucket_utc: z.string(), // bucket start, 'YYYY-MM-DD hh:mm:ss.sss' UTC
    bucket_offset_minutes: chNumber,
    ...metricsOut(ERROR_METRICS),
  }),
);

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
export const analyticsByBucket = namedQuery(
  'analytics_by_bucket',
  `SELECT endpoint_id, endpoint_scope, toString(bucket) AS bucket_utc, bucket_offset_minutes, ${ANALYTICS_METRIC_NAMES.join(', ')}, raw
   FROM analytics_buckets FINAL
   WHERE ${RANGE_WHERE}
   ORDER BY endpoint_id, bucket`,
  z.object({
    endpoint_id: z.string(),
    endpoint_scope: z.string(),
    bucket_utc: z.string(), // bucket start, 'YYYY-MM-DD hh:mm:ss.sss' UTC
    bucket_offset_minutes: chNumber,
    ...metricsOut(ANALYTICS_METRIC_NAMES),
    raw: z.string(),
  }),
);
