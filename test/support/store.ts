import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig, type Config } from '../../src/config.js';
import { openRuntime, closeRuntime } from '../../src/service.js';
import type { Runtime } from '../../src/runtime.js';
import { applyLogRetention } from '../../src/store/tables/logs.js';
import { applyMetricsRetention } from '../../src/store/tables/metrics.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';

/** A fresh data directory for this test file (chDB binds one per process; vitest forks one process per file). */
export function tempDataDir(prefix = 'tallyhouse-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

let sharedDataDir: string | undefined;

/** The data directory of this test process's embedded store (one per process). */
export function processDataDir(): string {
  sharedDataDir ??= tempDataDir();
  return sharedDataDir;
}

export function testConfig(env: Record<string, string | undefined> = {}): Config {
  return parseConfig({
    DATA_DIR: processDataDir(),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    NODE_ENV: 'test',
    WRITER_FLUSH_INTERVAL_MS: '50',
    // Tests store lines and samples at fixed dates (the simulators' clocks): a 30-day TTL would let the store's
    // background merges drop them once the suite runs a month after those dates. Ten years, unless a test sets one.
    LOG_RETENTION_DAYS: '3650',
    METRICS_RETENTION_DAYS: '3650',
    ...env,
  });
}

/** A migrated store with a writer, on this process's embedded data directory (or CLICKHOUSE_URL in env). */
export async function openTestRuntime(env: Record<string, string | undefined> = {}): Promise<Runtime> {
  const config = testConfig(env);
  const rt = await openRuntime(config, { logger: createLogger(config.LOG_LEVEL), registry: createRegistry({ defaultMetrics: false }) });
  // What the drain and jobs extensions apply at start, for the tests that store without them.
  await applyLogRetention(rt.store, config.LOG_RETENTION_DAYS);
  await applyMetricsRetention(rt.store, config.METRICS_RETENTION_DAYS);
  // The tables whose 90 days the migrations fix: ten years too, for the same reason.
  for (const [table, column] of [['queue_samples', 'sampled_at'], ['scrapes', 'scraped_at'], ['faro_items', 'timestamp']]) {
    await rt.store.client.command({
      query: `ALTER TABLE ${table} MODIFY TTL toDateTime(${column}) + INTERVAL 3650 DAY`,
      clickhouse_settings: { materialize_ttl_after_modify: 0 },
    });
  }
  return rt;
}

export { closeRuntime };

/** Runs a query and returns its rows (JSONEachRow). */
export async function queryRows<T = Record<string, unknown>>(
  rt: Pick<Runtime, 'store'>,
  query: string,
  params: Record<string, unknown> = {},
): Promise<T[]> {
  const rs = await rt.store.client.query({ query, query_params: params, format: 'JSONEachRow' });
  return rs.json<T>();
}
