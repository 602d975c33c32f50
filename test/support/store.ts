import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig, type Config } from '../../src/config.js';
import { openRuntime, closeRuntime } from '../../src/service.js';
import type { Runtime } from '../../src/runtime.js';
import { applyTtlDays } from '../../src/store/retention.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { MIGRATIONS_DIR, loadMigrations } from '../../src/store/migrate.js';

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
    FARO_RETENTION_DAYS: '3650',
    ...env,
  });
}

/**
 * Makes the store refuse every `DELETE FROM logs` as ClickHouse refuses a user without the ALTER DELETE grant
 * (ACCESS_DENIED, code 497); everything else goes through. Returns how to count the refusals and undo it.
 */
export function refuseLogDeletes(client: Runtime['store']['client']): { refused: () => number; restore: () => void } {
  const command = client.command.bind(client);
  let refused = 0;
  client.command = (async (params: Parameters<typeof client.command>[0]) => {
    if (!params.query.startsWith('DELETE FROM logs')) return command(params);
    refused++;
    throw Object.assign(new Error('Not enough privileges. To execute this query, it is necessary to have the grant ALTER DELETE ON logs'), { name: 'ClickHouseError', code: '497', type: 'ACCESS_DENIED' });
  }) as typeof client.command;
  return { refused: () => refused, restore: () => (client.command = command) };
}

/** A migrated store with a writer, on this process's embedded data directory (or CLICKHOUSE_URL in env). */
export async function openTestRuntime(env: Record<string, string | undefined> = {}): Promise<Runtime> {
  const config = testConfig(env);
  const rt = await openRuntime(config, { logger: createLogger(config.LOG_LEVEL), registry: createRegistry({ defaultMetrics: false }) });
  // Ten years (or the test's setting) on every table with a TTL: the logs and samples TTLs are what the drain and
  // jobs extensions apply at start; the others' 90 days are fixed by the migrations.
  const ttls = [
    ['logs', 'timestamp', config.LOG_RETENTION_DAYS],
    ['metric_samples', 'ts', config.METRICS_RETENTION_DAYS],
    ['queue_samples', 'sampled_at', 3650],
    ['scrapes', 'scraped_at', 3650],
    ['faro_items', 'timestamp', 3650],
    ['runner_metrics', 'ts', 3650],
  ] as const;
  for (const [table, column, days] of ttls) await applyTtlDays(rt.store, table, column, days, { rewriteExistingParts: false });
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

/** A copy of sql/ without the migrations from `version` on: a store as an older release left it. */
export function migrationsBefore(version: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'sql-'));
  cpSync(MIGRATIONS_DIR, dir, { recursive: true });
  for (const m of loadMigrations(dir)) if (m.version >= version) rmSync(join(dir, m.name));
  return dir;
}
