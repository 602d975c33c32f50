// Issue 44.3: an upgrade through migration 023 leaves each log record stored once, raw, not only under FINAL. 023's
// catch-up re-inserted every row of the old table (the copy held them already): every record was two rows until a
// merge, so a reader without FINAL (the old code after a rollback, a hand-written count) saw each line twice.
// sql/034 collapses them. Writers keep storing lines while the migrations run, as a second instance's drain and a
// history fill do on a server store during an upgrade.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/client.js';
import { loadMigrations, migrate } from '../../src/store/migrate.js';
import { migrationsBefore, processDataDir, queryRows } from '../support/store.js';

let store: Store;
beforeAll(async () => {
  store = await openStore({ dataDir: processDataDir(), database: 'logs_engine_raw_test' });
});
afterAll(async () => {
  await store.close();
});

// `n` distinct records (their message numbers from `first`), spread over three days and two apps.
const insertRecords = (first: number, n: number, origin: 'drain' | 'history') =>
  store.client.command({
    query: `INSERT INTO logs (timestamp, level, app, request_id, worker, message, received_at, batch_id, line, origin)
      SELECT toDateTime64('2026-11-18 00:00:00', 3, 'UTC') + toIntervalMillisecond(number * 7919 % 259200000),
             'INFO', if(number % 2 = 0, 'a', 'b'), concat('req-', toString(number % 97)), 'w1', concat('line ', toString(number)),
             toDateTime64('2026-11-21 00:00:00', 3, 'UTC'), generateUUIDv4(), 1, '${origin}'
      FROM numbers(${first}, ${n})`,
  });

/** The store as it was before 023 (each test starts from it; the migrations are idempotent). */
const storeBefore023 = async () => {
  await store.client.command({ query: 'DROP TABLE IF EXISTS logs' });
  await store.client.command({ query: 'DROP TABLE IF EXISTS schema_migrations' });
  await migrate(store, { dir: migrationsBefore(23) });
};

const counts = async () => {
  const [raw] = await queryRows<{ n: string }>({ store }, 'SELECT count() AS n FROM logs');
  const [final] = await queryRows<{ n: string }>({ store }, 'SELECT count() AS n FROM logs FINAL');
  return { raw: Number(raw.n), final: Number(final.n) };
};

describe('upgrade through migration 023 with writers running', () => {
  it('a batch stored between 023\'s copy and its renames: raw rows equal records after the migrations', async () => {
    await storeBefore023();
    await insertRecords(0, 3000, 'drain');
    await insertRecords(3000, 1000, 'history');
    const [m023] = loadMigrations().filter((m) => m.version === 23);
    const copied = m023.statements.findIndex((s) => /CREATE TABLE IF NOT EXISTS logs_023_copy/.test(s)) + 1;
    for (const query of m023.statements.slice(0, copied)) await store.client.command({ query });
    await insertRecords(4000, 25, 'drain'); // into the old table, after the copy read it
    for (const query of m023.statements.slice(copied)) await store.client.command({ query });
    // The migrator runs 023 again (nothing recorded it) and the rest.
    await migrate(store);
    expect(await counts()).toEqual({ raw: 4025, final: 4025 });
  });

  it('ends with as many raw rows as records (FINAL), every line written before and during it kept', async () => {
    await storeBefore023();
    await insertRecords(0, 3000, 'drain');
    await insertRecords(3000, 1000, 'history');

    // Concurrent writers: batches of new records land in `logs` (whichever table has the name) until the
    // migrations are done, and one more after; a batch that finds no `logs` (between 023's renames) is retried.
    let next = 4000;
    let done = false;
    let batchesDuring = 0;
    const writer = (async () => {
      for (;;) {
        const finished = done;
        try {
          await insertRecords(next, 25, batchesDuring % 2 ? 'history' : 'drain');
          next += 25;
          batchesDuring++;
        } catch {
          await new Promise((r) => setTimeout(r, 5));
          continue;
        }
        if (finished) return;
        await new Promise((r) => setTimeout(r, 1));
      }
    })();
    const result = await migrate(store);
    done = true;
    await writer;
    expect(result.applied).toContain('023_replace_logs_engine.sql');
    expect(batchesDuring).toBeGreaterThan(1);
    const [engine] = await queryRows<{ engine: string }>({ store }, "SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = 'logs'");
    expect(engine.engine).toBe('ReplacingMergeTree');
    // Every record written, once: raw rows equal FINAL rows equal the records written.
    expect(await counts()).toEqual({ raw: next, final: next });
  });
});
