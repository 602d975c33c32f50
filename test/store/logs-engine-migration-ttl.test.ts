// Migration 023 copies `logs` into a new table. A store kept for LOG_RETENTION_DAYS=90 (applyLogRetention changed
// the old table's TTL) holds lines older than the migration file's 30 days: the copy must not give them a TTL that
// a merge acts on before the service sets LOG_RETENTION_DAYS on the new table again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/client.js';
import { migrate } from '../../src/store/migrate.js';
import { applyLogRetention } from '../../src/store/tables/logs.js';
import { migrationsBefore, processDataDir, queryRows } from '../support/store.js';

let store: Store;
beforeAll(async () => {
  store = await openStore({ dataDir: processDataDir(), database: 'logs_engine_ttl_test' });
});
afterAll(async () => {
  await store.close();
});

describe('migration 023 and a longer log retention', () => {
  it('keeps lines older than 30 days that LOG_RETENTION_DAYS=90 kept, through merges, until the retention is applied again', async () => {
    await migrate(store, { dir: migrationsBefore(23) });
    expect(await applyLogRetention(store, 90)).toBe(true);
    // Lines 60 days old (inside 90 days, outside 30), one per day over three days, and one of today.
    await store.client.command({
      query: `INSERT INTO logs (timestamp, level, app, request_id, worker, message, received_at, batch_id, line, origin)
        SELECT now64(3) - toIntervalDay(60 + number), 'INFO', 'a', '', 'w', concat('old-', toString(number)), now64(3), generateUUIDv4(), 1, 'history'
        FROM numbers(3)`,
    });
    await store.client.command({
      query: `INSERT INTO logs (timestamp, level, app, request_id, worker, message, received_at, batch_id, line, origin)
        VALUES (now64(3), 'INFO', 'a', '', 'w', 'new', now64(3), generateUUIDv4(), 1, 'drain')`,
    });
    await migrate(store);
    // A background merge may run before the service starts the drain (and applies the retention): forced here.
    await store.client.command({ query: 'OPTIMIZE TABLE logs FINAL' });
    const rows = await queryRows<{ message: string }>({ store }, 'SELECT message FROM logs FINAL ORDER BY message');
    expect(rows.map((r) => r.message)).toEqual(['new', 'old-0', 'old-1', 'old-2']);
    await applyLogRetention(store, 90);
    const [ttl] = await queryRows<{ engine_full: string }>({ store }, "SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = 'logs'");
    expect(ttl.engine_full).toMatch(/TTL toDateTime\(timestamp\) \+ toIntervalDay\(90\)/);
    await store.client.command({ query: 'OPTIMIZE TABLE logs FINAL' });
    const after = await queryRows<{ message: string }>({ store }, 'SELECT message FROM logs FINAL ORDER BY message');
    expect(after.map((r) => r.message)).toEqual(['new', 'old-0', 'old-1', 'old-2']);
  });
});
