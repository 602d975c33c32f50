import { z } from 'zod';
import { ANALYTICS_METRIC_NAMES, type AnalyticsMetricName } from '../../platform/schemas.js';
import { chNumber, defineTable, namedQuery } from './table.js';
import { LATENCY_METRICS } from './analytics-buckets.js';

// The platform's whole-range summary per endpoint (sql/036): a local day's or month's percentiles as the platform
// computed them over all of the range's requests. Stored as delivered (doubles round-trip in Float64).

const metricColumns = Object.fromEntries(
  ANALYTICS_METRIC_NAMES.map((m) => [m, m.endsWith('_count') ? z.number().int().nonnegative().nullable() : z.number().nullable()]),
) as Record<AnalyticsMetricName, z.ZodNullable<z.ZodNumber>>;

export const SUMMARY_PERIODS = ['day', 'month'] as const;
export type SummaryPeriod = (typeof SUMMARY_PERIODS)[number];

export const AnalyticsSummaryRow = z.object({
  kind: z.enum(['serverless', 'models']),
  timezone: z.string(),
  period: z.enum(SUMMARY_PERIODS),
  range_start: z.string(), // DateTime64(3) UTC text
  range_end: z.string(),
  range_offset_minutes: z.number().int(),
  covered_until: z.string(),
  endpoint_id: z.string(),
  endpoint_scope: z.enum(['app', 'route', 'model']),
  ...metricColumns,
  success_rate: z.number().nullable(),
  error_rate: z.number().nullable(),
  raw: z.string(),
  version: z.number().int().nonnegative(),
  collected_at: z.string(),
});
export type AnalyticsSummaryRow = z.input<typeof AnalyticsSummaryRow>;

export const analyticsSummaries = defineTable('analytics_summaries', AnalyticsSummaryRow);

const nullableNumber = chNumber.nullable();

/**
 * The stored platform summaries of exactly the range [from, to) in one timezone (GET /latency): one row per
 * endpoint, with the latency percentiles and counts they were taken over. None when that range was not collected.
 */
export const latencySummaries = namedQuery(
  'analytics_latency_summaries',
  `SELECT endpoint_id, endpoint_scope, period, toString(covered_until) AS covered_until, toString(collected_at) AS collected_at,
          ${LATENCY_METRICS.join(', ')}
   FROM analytics_summaries FINAL
   WHERE kind = {kind:String} AND timezone = {timezone:String}
     AND range_start = parseDateTime64BestEffort({from:String}, 3, 'UTC') AND range_end = parseDateTime64BestEffort({to:String}, 3, 'UTC')
     AND (length({endpoint_ids:Array(String)}) = 0 OR has({endpoint_ids:Array(String)}, endpoint_id))
   ORDER BY endpoint_id`,
  z.object({
    endpoint_id: z.string(),
    endpoint_scope: z.string(),
    period: z.string(),
    covered_until: z.string(),
    collected_at: z.string(),
    ...(Object.fromEntries(LATENCY_METRICS.map((m) => [m, nullableNumber])) as Record<(typeof LATENCY_METRICS)[number], typeof nullableNumber>),
  }),
);
