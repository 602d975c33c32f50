import { z } from 'zod';
import { chDecimal, defineTable, namedQuery } from './table.js';

/** One price history entry (sql/008_create_unit_prices.sql), loaded from PRICES_FILE. */
export const UnitPriceRow = z.object({
  endpoint_id: z.string(),
  effective_from: z.string(), // DateTime64(3) UTC text
  unit_price: z.string().regex(/^\d+(\.\d+)?$/), // currency per billable unit
  currency: z.string(),
  source: z.string(),
  version: z.number().int().nonnegative(),
  loaded_at: z.string(),
});
export type UnitPriceRow = z.input<typeof UnitPriceRow>;

export const unitPrices = defineTable('unit_prices', UnitPriceRow);

/** Every stored price entry (the table is small: one row per endpoint and price change), oldest first. */
export const storedUnitPrices = namedQuery(
  'stored_unit_prices',
  `SELECT endpoint_id, toString(effective_from) AS effective_from, toString(unit_price) AS unit_price, currency
   FROM unit_prices FINAL
   ORDER BY endpoint_id, effective_from`,
  z.object({ endpoint_id: z.string(), effective_from: z.string(), unit_price: chDecimal, currency: z.string() }),
);
