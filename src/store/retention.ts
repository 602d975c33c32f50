import type { Logger } from '../log.js';
import type { Store } from './client.js';
import { renderStatement } from './migrate.js';

// The engine shows `+ toIntervalDay(30)`; a hand-written DDL may say `+ INTERVAL 30 DAY`.
const TTL_DAYS = /TTL\s+toDateTime\(\w+\)\s*\+\s*(?:toIntervalDay\((\d+)\)|INTERVAL\s+(\d+)\s+DAY)/i;

/**
 * Keeps a table's TTL at `days` (a configuration value): read from the engine, and changed with ALTER ... MODIFY
 * TTL only when it differs; existing parts are recomputed in the background or left to merges. `days` is a
 * validated positive integer: DDL takes no query parameters. Returns whether it changed anything.
 */
export async function applyTtlDays(
  store: Pick<Store, 'client' | 'cluster'>,
  table: 'logs' | 'metric_samples' | 'queue_samples' | 'scrapes' | 'faro_items' | 'runner_metrics',
  timeColumn: string,
  days: number,
  opts: { logger?: Logger; rewriteExistingParts: boolean },
): Promise<boolean> {
  if (!Number.isSafeInteger(days) || days <= 0) throw new Error(`${table} retention must be a positive number of days, got ${days}`);
  const rs = await store.client.query({
    query: 'SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = {table:String}',
    query_params: { table },
    format: 'JSONEachRow',
  });
  const [row] = await rs.json<{ engine_full: string }>();
  if (!row) throw new Error(`table ${table} does not exist (a migration is not applied)`);
  const current = TTL_DAYS.exec(row.engine_full);
  const currentDays = current ? Number(current[1] ?? current[2]) : null;
  if (currentDays === days) return false;
  await store.client.command({
    query: renderStatement(`ALTER TABLE ${table} MODIFY TTL toDateTime(${timeColumn}) + INTERVAL ${days} DAY`, store.cluster),
    clickhouse_settings: { materialize_ttl_after_modify: opts.rewriteExistingParts ? 1 : 0 },
  });
  opts.logger?.info({ table, from: currentDays, to: days }, `${table} retention set to ${days} days`);
  return true;
}
