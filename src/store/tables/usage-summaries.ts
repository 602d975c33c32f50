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

/** The platform summaries of a month collected so far: the last range end (the whole month once it is over). */
export const summaryRangeOfMonth = namedQuery(
  'summary_range_of_month',
  `SELECT toString(max(range_end)) AS last_end, count() AS n
   FROM usage_summaries FINAL
   WHERE timezone = {timezone:String} AND range_start = {from:Date} AND range_end <= {to:Date}`,
  z.object({ last_end: z.string(), n: z.union([z.string(), z.number()]) }),
);

/** The platform's own totals for a month (up to `end`), per app, machine type and currency. */
export const summaryTotalsByAppMachine = namedQuery(
  'summary_totals_by_app_machine',
  `SELECT app, machine_type, currency, toString(sum(cost_total)) AS total
   FROM usage_summaries FINAL
   WHERE timezone = {timezone:String} AND range_start = {from:Date} AND range_end = {end:Date}
   GROUP BY app, machine_type, currency`,
  z.object({ app: z.string(), machine_type: z.string(), currency: z.string(), total: z.string() }),
);
