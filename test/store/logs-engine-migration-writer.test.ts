// Migration 023 copies `logs` into a new table and renames it in. On a server store another writer (a second
// instance, a CLI fill, an older version during an upgrade) may insert into the old table after the copy read it
// and before the renames: that row must be in the new table, not dropped with the old one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/client.js';
import { loadMigrations, migrate } from '../../src/store/migrate.js';
import { migrationsBefore, processDataDir, queryRows } from '../support/store.js';

let store: Store;
beforeAll(async () => {
  store = await openStore({ dataDir: processDataDir(), database: 'logs_engine_writer_test' });
});
afterAll(async () => {
  await store.close();
});

const row = (message: string, app: string, stored: string) =>
  `('2026-11-20 10:00:00.001', 'INFO', '${app}', 'req-1', 'w1', '${message}', '${stored}', '00000000-0000-4000-8000-000000000001', 1, 'drain', '${stored}')`;
const INSERT = 'INSERT INTO logs (timestamp, level, app, request_id, worker, message, received_at, batch_id, line, origin, stored_at) VALUES';

describe('migration 023 beside another writer', () => {
  it('keeps a row inserted into the old table between the copy and the renames', async () => {
    await migrate(store, { dir: migrationsBefore(23) });
    await store.client.command({ query: `${INSERT} ${row('before', 'a', '2026-11-20 10:05:00.000')}` });
    const [m023] = loadMigrations().filter((m) => m.version === 23);
    const copied = m023.statements.findIndex((s) => /CREATE TABLE IF NOT EXISTS logs_023_copy/.test(s)) + 1;
    expect(copied).toBeGreaterThan(0);
    for (const query of m023.statements.slice(0, copied)) await store.client.command({ query });
    // Another instance's drain stores a line into `logs` (still the old table) now.
    await store.client.command({ query: `${INSERT} ${row('during', 'b', '2026-11-20 10:06:00.000')}` });
    for (const query of m023.statements.slice(copied)) await store.client.command({ query });
    const rows = await queryRows<{ message: string }>({ store }, 'SELECT message FROM logs FINAL ORDER BY message');
    expect(rows.map((r) => r.message)).toEqual(['before', 'during']);
    const [engine] = await queryRows<{ engine: string }>({ store }, "SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = 'logs'");
    expect(engine.engine).toBe('ReplacingMergeTree');
  });
});
