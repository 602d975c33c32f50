import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allTables } from '../../src/store/tables/index.js';
import { openTestRuntime, closeRuntime, queryRows } from '../support/store.js';
import type { Runtime } from '../../src/runtime.js';
import { USAGE_SCALES } from '../../src/store/tables/usage-buckets.js';
import { BILLABLE_UNITS_SCALE } from '../../src/store/tables/requests.js';
import { UNIT_PRICE_SCALE } from '../../src/collectors/prices.js';

let rt: Runtime;
beforeAll(async () => {
  rt = await openTestRuntime();
});
afterAll(async () => {
  await closeRuntime(rt);
});

describe('table modules match the migrated tables', () => {
  it.each(allTables.map((t) => [t.name, t] as const))('%s: DESCRIBE TABLE has exactly the schema columns', async (_name, table) => {
    const columns = await queryRows<{ name: string }>(rt, `DESCRIBE TABLE ${table.name}`);
    expect(columns.map((c) => c.name).sort()).toEqual([...table.columns].sort());
  });

  it('every table created by the migrations has a module', async () => {
    const tables = await queryRows<{ name: string }>(
      rt,
      "SELECT name FROM system.tables WHERE database = currentDatabase() AND engine NOT LIKE '%View' AND name != 'schema_migrations' AND NOT startsWith(name, '.inner')",
    );
    expect(tables.map((t) => t.name).sort()).toEqual(allTables.map((t) => t.name).sort());
  });

  it('the scales JSON numbers are rounded to are the Decimal columns\' own', async () => {
    const columns = await queryRows<{ table: string; name: string; type: string }>(
      rt,
      "SELECT table, name, type FROM system.columns WHERE database = currentDatabase() AND type LIKE '%Decimal%'",
    );
    const scaleOf = (table: string, name: string) => {
      const column = columns.find((c) => c.table === table && c.name === name);
      return Number(/Decimal\(\d+, (\d+)\)/.exec(column?.type ?? '')?.[1]);
    };
    for (const table of ['usage_buckets', 'usage_summaries']) {
      expect(scaleOf(table, 'quantity')).toBe(USAGE_SCALES.quantity);
      expect(scaleOf(table, 'unit_price')).toBe(USAGE_SCALES.unit_price);
      expect(scaleOf(table, 'percent_discount')).toBe(USAGE_SCALES.percent_discount);
      for (const cost of ['cost_subtotal', 'cost_discount', 'cost_total']) expect(scaleOf(table, cost)).toBe(USAGE_SCALES.cost);
    }
    expect(scaleOf('requests', 'billable_units')).toBe(BILLABLE_UNITS_SCALE);
    expect(scaleOf('unit_prices', 'unit_price')).toBe(UNIT_PRICE_SCALE);
  });
});
