import { z } from 'zod';
import { defineTable, namedQuery } from './table.js';
import { usageValueColumns } from './usage-buckets.js';

export const UsageSummaryRow = z.object({
  timezone: z.string(),
  range_start: z.string(), // YYYY-MM-DD local, inclusive
  range_end: z.string(), // YYYY-MM-DD local, exclusive
  ...usageValueColumns,
});
export type UsageSummaryRow = z.input<typeof UsageSummaryRow>;

export const usageSummaries = defineTable('usage_summaries', UsageSummaryRow);

export const liveUsageSummaryKeys = namedQuery(
  'live_usage_summary_keys',
  `SELECT app, environment, machine_type, is_surge
   FROM usage_summaries FINAL
   WHERE timezone = {timezone:String} AND range_start = {start:Date} AND range_end = {end:Date}
     AND (length({apps:Array(String)}) = 0 OR has({apps:Array(String)}, app))`,
  z.object({ app: z.string(), environment: z.string(), machine_type: z.string(), is_surge: z.boolean() }),
);
