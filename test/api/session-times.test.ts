// Issue 30.14: session answers give their times as ISO 8601 with Z, as the rest of the API does (they were the
// store's "2026-11-26 05:01:59.631"). Hand-built rows; the expected strings are written from the row times.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { sessionRoutes } from '../../src/api/session-routes.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { testConfig } from '../support/store.js';

// An hour ago, on a whole minute, plus 631 ms (faro_items keep 90 days).
// wall-clock: log rows must sit inside the logs TTL, which ClickHouse applies on the machine's clock
const BASE_MS = Math.floor(Date.now() / 60_000) * 60_000 - 3_600_000 + 631;
const sqlTime = new Date(BASE_MS).toISOString().replace('T', ' ').replace('Z', '');
const isoTime = new Date(BASE_MS).toISOString();

let service: Service;
beforeAll(async () => {
  service = await startService(testConfig({ PORT: '0' }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension([sessionRoutes])],
  });
  const insert = (table: string, values: unknown[]) => service.store.client.insert({ table, values, format: 'JSONEachRow' });
  await insert('faro_items', [
    {
      received_at: sqlTime, timestamp: sqlTime, kind: 'event', app: 'shop-web', app_namespace: '', release: '', app_version: '', environment: 'production',
      session_id: 'sess-iso', user_id: '', page_url: '', level: '', message: 'fetch', domain: '', values: {}, attributes: {},
      trace_id: '', span_id: '', request_id: 'req-iso', raw: '{}',
    },
  ]);
  await insert('requests', [{ request_id: 'req-iso', endpoint_id: 'acme/api', ended_at: sqlTime, status_code: 200, duration: 1.5, billable_units: '2', raw: '', version: 1, collected_at: sqlTime }]);
});
afterAll(async () => {
  await service?.close();
});

describe('session times', () => {
  it('GET /sessions/{id} and GET /sessions answer ISO 8601 with Z', async () => {
    const one = (await (await fetch(`${service.url}/api/v1/sessions/sess-iso`)).json()) as { items: Array<{ timestamp: string; received_at: string }>; requests: Array<{ ended_at: string }> };
    expect(isoTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.631Z$/);
    expect([one.items[0].timestamp, one.items[0].received_at, one.requests[0].ended_at]).toEqual([isoTime, isoTime, isoTime]);
    const list = (await (await fetch(`${service.url}/api/v1/sessions`)).json()) as { sessions: Array<Record<string, unknown>> };
    const row = list.sessions.find((s) => s.session_id === 'sess-iso')!;
    expect([row.first_seen, row.last_seen]).toEqual([isoTime, isoTime]);
  });
});
