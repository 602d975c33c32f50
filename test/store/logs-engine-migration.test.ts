// Issue 28.2: migration 023 moves `logs` onto a ReplacingMergeTree over the record's identity. The rows stored
// before it are all kept, copies of a record collapse to one (the drain's), and the migration run again from the
// top, whichever point an interrupted run reached, ends in the same table.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/client.js';
import { loadMigrations, migrate } from '../../src/store/migrate.js';
import { migrationsBefore, processDataDir, queryRows } from '../support/store.js';

let store: Store;
beforeAll(async () => {
  store = await openStore({ dataDir: processDataDir(), database: 'logs_engine_test' });
});
afterAll(async () => {
  await store.close();
});

/** Migrations up to 022 only (the store as it was before 023). */
// Three records: r1 by history and again by the drain, r2 by history twice (two fills), r3 by the drain once.
const OLD_ROWS = `INSERT INTO logs (timestamp, level, app, request_id, worker, message, received_at, batch_id, line, origin, stored_at) VALUES
  ('2026-11-20 10:00:00.001', 'INFO', 'a', 'req-1', 'w1', 'r1', '2026-11-20 10:05:00', '00000000-0000-4000-8000-000000000001', 1, 'history', '2026-11-20 10:05:00.000'),
  ('2026-11-20 10:00:00.001', 'INFO', 'a', 'req-1', 'w1', 'r1', '2026-11-20 10:09:00', '00000000-0000-4000-8000-000000000002', 7, 'drain', '2026-11-20 10:09:00.000'),
  ('2026-11-20 10:00:00.002', 'WARN', 'a', 'req-1', 'w1', 'r2', '2026-11-20 10:05:00', '00000000-0000-4000-8000-000000000001', 2, 'history', '2026-11-20 10:05:00.000'),
  ('2026-11-20 10:00:00.002', 'WARN', 'a', 'req-1', 'w1', 'r2', '2026-11-20 10:06:00', '00000000-0000-4000-8000-000000000003', 2, 'history', '2026-11-20 10:06:00.000'),
  ('2026-11-21 23:59:59.999', 'ERROR', 'b', '', 'w2', 'r3', '2026-11-22 00:00:01', '00000000-0000-4000-8000-000000000002', 8, 'drain', '2026-11-22 00:00:01.000')`;

const records = () =>
  queryRows<{ message: string; origin: string; batch_id: string }>(
    { store },
    'SELECT message, origin, toString(batch_id) AS batch_id FROM logs FINAL ORDER BY message',
  );
const EXPECTED = [
  { message: 'r1', origin: 'drain', batch_id: '00000000-0000-4000-8000-000000000002' },
  { message: 'r2', origin: 'history', batch_id: '00000000-0000-4000-8000-000000000001' }, // the first stored
  { message: 'r3', origin: 'drain', batch_id: '00000000-0000-4000-8000-000000000002' },
];

describe('migration 023: logs keyed by the record', () => {
  it('keeps every record stored before it, once, the drain\'s copy first, and runs again from any point', async () => {
    await migrate(store, { dir: migrationsBefore(23) });
    await store.client.command({ query: OLD_ROWS });
    const [m023] = loadMigrations().filter((m) => m.version === 23);
    const run = async (statements: string[]) => {
      for (const query of statements) await store.client.command({ query });
    };
    // Interrupted at every point, then run again from the top (as the migrator does: nothing was recorded).
    for (let stop = 1; stop <= m023.statements.length; stop++) {
      await run(m023.statements.slice(0, stop));
      await run(m023.statements);
      expect(await records(), `stopped after statement ${stop}`).toEqual(EXPECTED);
      const tables = await queryRows<{ name: string }>({ store }, "SELECT name FROM system.tables WHERE database = currentDatabase() AND startsWith(name, 'logs')");
      expect(tables.map((t) => t.name)).toEqual(['logs']);
    }
    const [engine] = await queryRows<{ engine: string }>({ store }, "SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = 'logs'");
    expect(engine.engine).toBe('ReplacingMergeTree');
    // The migrator applies it and records it.
    const result = await migrate(store);
    expect(result.applied).toEqual(loadMigrations().filter((m) => m.version >= 23).map((m) => m.name));
    expect(await records()).toEqual(EXPECTED);
  });
});
