// What each collection read of a day's cost (sql/026): the evidence a day is final (src/insights/finality.ts).
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { chNumber, decimalText, defineTable, namedQuery } from './table.js';

export const CostDayCollectionRow = z.object({
  product: z.enum(['serverless', 'model_api']),
  timezone: z.string(),
  day: z.string(), // YYYY-MM-DD, local to timezone
  collected_at: z.string(), // DateTime64(3) UTC text, the platform's clock
  row_count: z.number().int().nonnegative(),
  cost_total: decimalText,
  fingerprint: z.string(),
});
export type CostDayCollectionRow = z.input<typeof CostDayCollectionRow>;

export const costDayCollections = defineTable('cost_day_collections', CostDayCollectionRow);

/** sha256 of a day's rows, each as one text line (keys, quantity, cost_total), sorted: the same rows, the same hash. */
export function dayFingerprint(lines: string[]): string {
  return createHash('sha256').update([...lines].sort().join('\n')).digest('hex');
}

/** Every collection of the days of a range, oldest first per day. */
export const dayCollections = namedQuery(
  'cost_day_collections_of_range',
  `SELECT toString(c.day) AS local_day, toString(c.collected_at) AS collected_text, c.fingerprint AS fingerprint
   FROM cost_day_collections AS c
   WHERE c.product = {product:String} AND c.timezone = {timezone:String} AND c.day >= {from:Date} AND c.day < {to:Date}
   ORDER BY c.day, c.collected_at`,
  z.object({ local_day: z.string(), collected_text: z.string(), fingerprint: z.string() }).transform((r) => ({ day: r.local_day, collected_at: r.collected_text, fingerprint: r.fingerprint })),
);

/** Every day collection (sql/026) of a product in a zone in [from, to) (local dates), as the local day and when it was read. */
export const collectedDays = namedQuery(
  'cost_day_collections_spans',
  `SELECT toString(day) AS local_day, toUnixTimestamp64Milli(collected_at) AS collected_ms
   FROM cost_day_collections
   WHERE product = {product:String} AND timezone = {zone:String} AND day >= {from:Date} AND day < {to:Date}
   ORDER BY day, collected_at`,
  z.object({ local_day: z.string(), collected_ms: chNumber }),
);
