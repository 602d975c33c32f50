import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allTables } from '../../src/store/tables/index.js';
import { openTestRuntime, closeRuntime, queryRows } from '../support/store.js';
import type { Runtime } from '../../src/service.js';

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
});
