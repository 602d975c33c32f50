// Issue 19: with COLLECTOR_SHARD, shard 0 applies the migrations and the other instances wait for them; two
// instances starting together on one ClickHouse server (the test HTTP endpoint) run each migration once.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startClickHouseHttp, type ClickHouseHttp } from '../support/clickhouse-http.js';
import { openRuntime, closeRuntime } from '../../src/service.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { loadMigrations } from '../../src/store/migrate.js';
import { tempDataDir, testConfig, queryRows } from '../support/store.js';

let ch: ClickHouseHttp;
beforeAll(async () => {
  ch = await startClickHouseHttp({ dataDir: tempDataDir() });
});
afterAll(async () => {
  await ch?.close();
});

const open = (shard: string) =>
  openRuntime(testConfig({ CLICKHOUSE_URL: ch.url, CLICKHOUSE_DATABASE: 'shards', COLLECTOR_SHARD: shard, DATA_DIR: tempDataDir() }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
  });

describe('migrations with several instances', () => {
  it('shard 1 waits until shard 0 has applied every migration; each is recorded once', async () => {
    let shard1Ready = false;
    const shard1 = open('1/2').then((rt) => {
      shard1Ready = true;
      return rt;
    });
    // Shard 1 is waiting: it has asked for the applied migrations twice (a second ask comes only after the first found
    // some pending), no migration table exists yet, and it has not finished opening. A state, not a fixed sleep.
    const ledgerReads = () => ch.requests().filter((r) => /\bFROM\s+schema_migrations\b/i.test(r.query) && !/^\s*(CREATE|ALTER|INSERT)/i.test(r.query)).length;
    await vi.waitFor(() => expect(ledgerReads()).toBeGreaterThanOrEqual(2), { timeout: 60_000, interval: 50 });
    expect(shard1Ready).toBe(false);
    const ddl = ch.requests().filter((r) => /^\s*(CREATE|ALTER)\s+TABLE/i.test(r.query));
    expect(ddl).toEqual([]);

    const shard0 = await open('0/2');
    const rt1 = await shard1;
    try {
      const rows = await queryRows<{ version: string; n: string }>(shard0, 'SELECT version, count() AS n FROM schema_migrations GROUP BY version ORDER BY version');
      expect(rows.map((r) => [Number(r.version), Number(r.n)])).toEqual(loadMigrations().map((m) => [m.version, 1]));
    } finally {
      await closeRuntime(rt1);
      await closeRuntime(shard0);
    }
  });
});
