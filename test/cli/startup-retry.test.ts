// Issue 28.9: a transient store error during the start-up migrations (an answer lost on the way back, a 503) is
// retried within CLICKHOUSE_CONNECT_TIMEOUT_MS (it exited 1 with a stack); a store that keeps failing is one line.
// The store is the test ClickHouse HTTP endpoint in this process; the CLI runs as a child against it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMigrations } from '../../src/store/migrate.js';
import { startClickHouseHttp, type ClickHouseHttp } from '../support/clickhouse-http.js';
import { runCli } from '../support/process.js';
import { tempDataDir } from '../support/store.js';

let ch: ClickHouseHttp;
beforeAll(async () => {
  ch = await startClickHouseHttp({ dataDir: tempDataDir() });
});
afterAll(async () => {
  await ch?.close();
});

describe('start-up migrations meet a transient store error', () => {
  it('a lost answer is retried: migrate exits 0 and records each migration once', async () => {
    ch.loseNextInsertAnswers(1); // the ledger row of the first migration is written, its answer lost
    const p = runCli(['migrate'], { DATA_DIR: tempDataDir(), CLICKHOUSE_URL: ch.url, CLICKHOUSE_DATABASE: 'retry_lost', CLI_LOG_LEVEL: 'silent' });
    const { code } = await p.exited;
    const migrations = loadMigrations();
    expect({ code, stderr: p.stderr() }).toEqual({ code: 0, stderr: `schema up to date: ${migrations.length} migrations applied\n` });
    const res = await fetch(`${ch.url}/?database=retry_lost`, { method: 'POST', body: 'SELECT version, count() AS n FROM schema_migrations GROUP BY version ORDER BY version FORMAT JSONEachRow' });
    const rows = (await res.text()).trim().split('\n').map((l) => JSON.parse(l) as { version: number; n: string });
    expect(rows.map((r) => [Number(r.version), Number(r.n)])).toEqual(migrations.map((m) => [m.version, 1]));
  });

  it('a store whose inserts keep failing: one line after CLICKHOUSE_CONNECT_TIMEOUT_MS, exit 1', async () => {
    ch.faultInserts({ kind: 'down' });
    try {
      const p = runCli(['migrate'], {
        DATA_DIR: tempDataDir(),
        CLICKHOUSE_URL: ch.url,
        CLICKHOUSE_DATABASE: 'retry_down',
        CLICKHOUSE_CONNECT_TIMEOUT_MS: '2000',
        CLI_LOG_LEVEL: 'silent',
      });
      expect((await p.exited).code).toBe(1);
      expect(p.stderr()).toBe(
        `tallyhouse: ClickHouse at ${ch.url} is unreachable: the migrations met ClickHouse CANNOT_SCHEDULE_TASK (code 439) until CLICKHOUSE_CONNECT_TIMEOUT_MS ran out\n`,
      );
    } finally {
      ch.faultInserts(null);
    }
  });
});
