// Issue 31: the README's "error-type counts" of GET /errors for webhook deliveries, against hand-built deliveries,
// and a delivery the platform repeated (same request id, stored twice) counted once: the query reads
// webhook_deliveries FINAL. Merges are stopped, so the two copies stay in separate parts and only FINAL folds them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { analyticsRoutes } from '../../src/api/analytics-routes.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { testConfig } from '../support/store.js';

const TOKEN = 'errors-token-0123456789';
let service: Service;

function delivery(request_id: string, status: string, error_types: string[], received_at: string) {
  return {
    request_id, gateway_request_id: request_id, user_id: 'u', status, error: status === 'ERROR' ? 'failed' : '', error_types, payload_error: '',
    signed_at: received_at.slice(0, 19), received_at, raw: '{}',
  };
}

beforeAll(async () => {
  service = await startService(testConfig({ PORT: '0', API_TOKENS: TOKEN }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension([analyticsRoutes])],
  });
  await service.store.client.command({ query: 'SYSTEM STOP MERGES webhook_deliveries' });
  await service.store.client.command({ query: 'SYSTEM STOP MERGES analytics_buckets' });
  const bucket = (version: number, counts: Record<string, number>) => ({
    kind: 'serverless', timezone: 'UTC', timeframe: 'hour', bucket: '2026-10-01 10:00:00.000', bucket_offset_minutes: 0, endpoint_id: 'acme/api', endpoint_scope: 'app',
    ...counts, raw: '{}', version, collected_at: '2026-10-01 12:00:00.000',
  });
  // The bucket as first collected, then re-collected (version 2) with the platform's final counts.
  for (const row of [
    bucket(1, { request_count: 10, success_count: 8, user_error_count: 1, error_count: 1, startup_error_count: 0, connection_error_count: 0, timeout_error_count: 1, runtime_error_count: 0 }),
    bucket(2, { request_count: 12, success_count: 7, user_error_count: 2, error_count: 3, startup_error_count: 1, connection_error_count: 0, timeout_error_count: 1, runtime_error_count: 1 }),
  ]) {
    await service.store.client.insert({ table: 'analytics_buckets', values: [row], format: 'JSONEachRow' });
  }
  const insert = (values: unknown[]) => service.store.client.insert({ table: 'webhook_deliveries', values, format: 'JSONEachRow' });
  await insert([
    delivery('w1', 'ERROR', ['timeout', 'runtime'], '2026-10-01 10:00:00.000'),
    delivery('w2', 'ERROR', ['timeout'], '2026-10-01 11:00:00.000'),
    delivery('w3', 'OK', [], '2026-10-01 12:00:00.000'),
    delivery('w4', 'ERROR', ['startup'], '2026-10-03 00:00:00.000'), // after the range
  ]);
  // The platform delivered w1 again a minute later: a second row, in a part of its own.
  await insert([delivery('w1', 'ERROR', ['timeout', 'runtime'], '2026-10-01 10:01:00.000')]);
});

afterAll(async () => {
  await service?.store.client.command({ query: 'SYSTEM START MERGES webhook_deliveries' }).catch(() => undefined);
  await service?.store.client.command({ query: 'SYSTEM START MERGES analytics_buckets' }).catch(() => undefined);
  await service?.close();
});

describe('GET /errors: webhook error-type counts', () => {
  it('counts each failed delivery once per error type, a repeated delivery once, in range only, most frequent first', async () => {
    const stored = await service.store.client.query({ query: "SELECT count() AS n FROM webhook_deliveries WHERE request_id = 'w1'", format: 'JSONEachRow' });
    expect(await stored.json()).toEqual([{ n: '2' }]); // both copies are there for FINAL to fold
    const res = await fetch(`${service.url}/api/v1/errors?from=2026-10-01&to=2026-10-02`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const body = (await res.json()) as { webhook_errors: Array<{ error_type: string; deliveries: number }> };
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.webhook_errors).toEqual([
      { error_type: 'timeout', deliveries: 2 },
      { error_type: 'runtime', deliveries: 1 },
    ]);
  });

  it('outcome and error-type counts per endpoint and bucket: the re-collected bucket once, with its final counts', async () => {
    const res = await fetch(`${service.url}/api/v1/errors?from=2026-10-01&to=2026-10-02`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const body = (await res.json()) as { rows: Array<Record<string, unknown>> };
    expect(res.status).toBe(200);
    expect(body.rows).toEqual([
      {
        endpoint_id: 'acme/api', endpoint_scope: 'app', bucket: '2026-10-01T10:00:00Z',
        request_count: 12, success_count: 7, user_error_count: 2, error_count: 3, startup_error_count: 1, connection_error_count: 0, timeout_error_count: 1, runtime_error_count: 1,
      },
    ]);
  });
});
