// The query API reads through a read-only store with per-query limits, and refuses ranges longer than a route
// answers, naming the limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { logsRoutes } from '../../src/api/logs-routes.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { readOnlyStore } from '../../src/store/client.js';
import { testConfig } from '../support/store.js';
import { usageDayRow } from '../support/rows.js';

let service: Service;
const api = (path: string) => fetch(`${service.url}/api/v1${path}`);

beforeAll(async () => {
  service = await startService(testConfig({ PORT: '0', API_QUERY_MAX_RESULT_ROWS: '1' }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension([logsRoutes])],
  });
  await service.store.client.insert({ table: 'usage_buckets', values: [usageDayRow('2026-10-01', { app: 'a', quantity: '1', unit_price: '1' }), usageDayRow('2026-10-01', { app: 'b', quantity: '1', unit_price: '1' })], format: 'JSONEachRow' });
});
afterAll(async () => {
  await service?.close();
});

describe('query API limits', () => {
  it('a /logs range over API_LOGS_MAX_RANGE_DAYS (31) is a 400 naming the limit', async () => {
    const res = await api('/logs?from=1926-01-01T00:00:00Z&to=2026-01-01T00:00:00Z&contains=x');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: Record<string, unknown> }).error).toMatchObject({ parameter: 'to', message: expect.stringContaining('at most 31 days (API_LOGS_MAX_RANGE_DAYS)') });
  });

  it('a /cost range over API_MAX_RANGE_DAYS (400) is a 400 naming the limit', async () => {
    const res = await api('/cost?from=2025-01-01&to=2026-11-01');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain('at most 400 days (API_MAX_RANGE_DAYS)');
  });

  it('a query over its result-row limit is a 422 naming the limits, not a 500', async () => {
    const ok = await api('/cost?from=2026-10-01&to=2026-10-02');
    expect(ok.status).toBe(200); // one row: within the limit of 1
    const res = await api('/cost?from=2026-10-01&to=2026-10-02&group_by=app');
    expect(res.status).toBe(422);
    expect(((await res.json()) as { error: Record<string, unknown> }).error).toMatchObject({ type: 'query_limit', message: expect.stringContaining('result rows') });
  });

  it('the reader store refuses writes, by construction and in the engine', async () => {
    const reader = readOnlyStore(service.store, { maxExecutionSeconds: 5, maxMemoryBytes: 1e9, maxResultRows: 10 });
    expect(() => reader.client.command({ query: 'DROP TABLE usage_buckets' })).toThrow(/reads only/);
    const err = await reader.client.query({ query: 'CREATE TABLE x (a UInt8) ENGINE = Memory' }).catch((e) => e);
    expect(String(err.code)).toBe('164'); // READONLY
  });
});
