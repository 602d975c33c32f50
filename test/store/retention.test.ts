// README: LOG_RETENTION_DAYS and METRICS_RETENTION_DAYS are the TTLs of stored log lines and scraped samples; the
// service re-applies them at start-up when they differ from the migration's 30 days. Oracle: the table's own
// definition (SHOW CREATE TABLE), and a line older than the TTL that the store drops.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/runtime.js';
import { openTestRuntime, closeRuntime, queryRows } from '../support/store.js';
import { applyLogRetention, logs } from '../../src/store/tables/logs.js';
import { applyMetricsRetention } from '../../src/store/tables/metrics.js';

let rt: Runtime;
beforeAll(async () => {
  // The migrations' own 30 days (test/support otherwise gives tests ten years).
  rt = await openTestRuntime({ LOG_RETENTION_DAYS: '30', METRICS_RETENTION_DAYS: '30' });
});
afterAll(async () => {
  await closeRuntime(rt);
});

const ttlOf = async (table: string): Promise<string> => {
  const [row] = await queryRows<{ statement: string }>(rt, `SHOW CREATE TABLE ${table}`);
  return /TTL (.*?)(\n|SETTINGS)/s.exec(row.statement)?.[1].trim() ?? '';
};

describe('retention', () => {
  it('the migrations write 30 days; a different setting is applied to the table and applying it again changes nothing', async () => {
    expect(await ttlOf('logs')).toMatch(/toIntervalDay\(30\)|INTERVAL 30 DAY/);
    expect(await ttlOf('metric_samples')).toMatch(/toIntervalDay\(30\)|INTERVAL 30 DAY/);
    expect(await applyLogRetention(rt.store, 7)).toBe(true);
    expect(await applyMetricsRetention(rt.store, 90)).toBe(true);
    expect(await ttlOf('logs')).toMatch(/toIntervalDay\(7\)|INTERVAL 7 DAY/);
    expect(await ttlOf('metric_samples')).toMatch(/toIntervalDay\(90\)|INTERVAL 90 DAY/);
    expect(await applyLogRetention(rt.store, 7)).toBe(false);
  });

  it('a log line older than the TTL is dropped by the store; a recent one stays', async () => {
    const batch = randomUUID();
    const row = (timestamp: string, line: number) => ({
      timestamp, level: 'INFO', app: 'ttl-app', app_id: '', request_id: '', job_id: '', endpoint: '', node: '', worker: '',
      source: '', isolate_source: '', message: `line ${line}`, attributes: {}, received_at: timestamp, batch_id: batch, line,
    });
    // wall-clock: ClickHouse applies a TTL on the machine's clock
    const old = new Date(Date.now() - 10 * 86_400_000).toISOString().replace('T', ' ').replace('Z', '');
    // wall-clock: ClickHouse applies a TTL on the machine's clock
    const recent = new Date(Date.now() - 3_600_000).toISOString().replace('T', ' ').replace('Z', '');
    const done = rt.writer.insert(logs, [row(old, 1), row(recent, 2)]);
    await rt.writer.flush(logs);
    await done;
    await rt.store.client.command({ query: 'OPTIMIZE TABLE logs FINAL' });
    const left = await queryRows<{ message: string }>(rt, "SELECT message FROM logs WHERE app = 'ttl-app' ORDER BY message");
    expect(left.map((l) => l.message)).toEqual(['line 2']);
  });
});
