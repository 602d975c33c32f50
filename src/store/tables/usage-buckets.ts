import { z } from 'zod';
import { defineTable, namedQuery } from './table.js';

const decimalText = z.string().regex(/^-?\d+(\.\d+)?$/);

export const UsageBucketRow = z.object({
  timezone: z.string(),
  timeframe: z.string(),
  bucket: z.string(), // DateTime64(3) UTC text
  bucket_offset_minutes: z.number().int(),
  bucket_date: z.string(), // YYYY-MM-DD, local to `timezone`
  app: z.string(),
  environment: z.string(),
  machine_type: z.string(),
  is_surge: z.boolean(),
  unit: z.string(),
  quantity: decimalText, // machine-seconds
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
export type UsageBucketRow = z.input<typeof UsageBucketRow>;

export const usageBuckets = defineTable('usage_buckets', UsageBucketRow);

/** The identity of a usage row: what a re-collection replaces. */
export const USAGE_BUCKET_KEY = ['timezone', 'timeframe', 'bucket', 'app', 'environment', 'machine_type', 'is_surge'] as const;

/** Live rows of a collected range, to find those a re-collection no longer returns. */
export const liveUsageBucketKeys = namedQuery(
  'live_usage_bucket_keys',
  `SELECT toString(bucket) AS bucket_text, app, environment, machine_type, is_surge
   FROM usage_buckets FINAL
   WHERE timezone = {timezone:String} AND timeframe = {timeframe:String}
     AND bucket >= {from:DateTime64(3, 'UTC')} AND bucket < {to:DateTime64(3, 'UTC')}
     AND (length({apps:Array(String)}) = 0 OR has({apps:Array(String)}, app))`,
  z.object({
    bucket_text: z.string(),
    app: z.string(),
    environment: z.string(),
    machine_type: z.string(),
    is_surge: z.boolean(),
  }),
);
