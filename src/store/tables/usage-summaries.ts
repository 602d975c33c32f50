import { z } from 'zod';
import { defineTable, namedQuery } from './table.js';

const decimalText = z.string().regex(/^-?\d+(\.\d+)?$/);

export const UsageSummaryRow = z.object({
  timezone: z.string(),
  range_start: z.string(), // YYYY-MM-DD local, inclusive
  range_end: z.string(), // YYYY-MM-DD local, exclusive
  app: z.string(),
  environment: z.string(),
  machine_type: z.string(),
  is_surge: z.boolean(),
  unit: z.string(),
  quantity: decimalText,
  unit_price: decimalText,
  percent_discount: decimalText.nullable(),
  cost_subtotal: decimalText.nullable(),
  cost_discount: decimalText.nullable(),
  cost_total: decimalText,
  currency: z.string(),
  raw: z.string(),
  version: z.number().int().nonnegative(),
  is_deleted: z.union([z.literal(0), z.literal(1)]),
  collected_at: z.string(),
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
