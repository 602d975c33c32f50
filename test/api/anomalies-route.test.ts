import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { anomalyRoutes } from '../../src/api/anomaly-routes.js';
import { anomalies, type AnomalyRow } from '../../src/store/tables/anomalies.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { testConfig } from '../support/store.js';
import { anomaliesOpen } from '../../src/http/business-metrics.js';
import { toDateTime64 } from '../../src/values.js';

let service: Service;
// The service clock: the fixtures' findings are older than its last 48 hours.
const NOW = new Date('2026-11-20T08:00:00Z');

function row(over: Partial<AnomalyRow>): AnomalyRow {
  return {
    series_kind: 'app', series_id: 'acme/flux', measure: 'cost', grain: 'day', unit: 'USD', bucket: '2026-11-09 00:00:00.000', finding_id: 'f-cost',
    expected: 100, expected_low: 70, expected_high: 130, actual: 150, score: 8.5, direction: 'up', summary: 'cost of app acme/flux on 2026-11-09: 150 USD',
    explanation: 'price effect +50 USD on acme/flux', version: 1, is_deleted: 0, evaluated_at: '2026-11-10 06:00:00.000', ...over,
  };
}

beforeAll(async () => {
  service = await startService(testConfig({ PORT: '0' }), {
    now: () => NOW,
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension([anomalyRoutes])],
  });
  const w = service.writer;
  const written = Promise.all([
    // The cost finding evaluated twice (version 2 replaces 1), an error-rate hour, a finding re-evaluated away
    // (tombstone), and one outside the asked range.
    w.insert(anomalies, [row({ actual: 140, version: 1 })]),
    w.insert(anomalies, [row({ version: 2 })]),
    w.insert(anomalies, [row({ finding_id: 'f-err', series_kind: 'endpoint', series_id: 'acme/flux/infer', measure: 'error_rate', grain: 'hour', unit: 'ratio', bucket: '2026-11-09 14:00:00.000', expected: 0.01, expected_low: 0, expected_high: 0.08, actual: 0.3, score: 6.1, summary: '=cmd|error rate', explanation: '' })]),
    w.insert(anomalies, [row({ finding_id: 'f-gone', series_id: 'acme/other', version: 1 })]),
    w.insert(anomalies, [row({ finding_id: 'f-gone', series_id: 'acme/other', version: 2, is_deleted: 1 })]),
    w.insert(anomalies, [row({ finding_id: 'f-old', series_id: 'acme/old', bucket: '2026-10-01 00:00:00.000' })]),
  ]);
  await w.flush();
  await written;
}, 120_000);

afterAll(async () => {
  await service?.close();
});

describe('GET /api/v1/anomalies', () => {
  it('answers the current findings of the range, newest bucket first, one row per re-evaluated finding', async () => {
    const res = await fetch(`${service.url}/api/v1/anomalies?from=2026-11-08&to=2026-11-11`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { from: string; to: string; rows: Array<Record<string, unknown>> };
    expect(body.from).toBe('2026-11-08');
    expect(body.rows.map((r) => [r.finding_id, r.bucket, r.actual])).toEqual([
      ['f-err', '2026-11-09T14:00:00.000Z', 0.3],
      ['f-cost', '2026-11-09T00:00:00.000Z', 150],
    ]);
    expect(body.rows[1]).toMatchObject({ expected: 100, expected_low: 70, expected_high: 130, direction: 'up', explanation: 'price effect +50 USD on acme/flux', evaluated_at: '2026-11-10T06:00:00.000Z' });
  });

  it('filters by measure, and answers CSV through the shared writer (a cell starting with = is neutralised)', async () => {
    const json = (await (await fetch(`${service.url}/api/v1/anomalies?from=2026-11-08&to=2026-11-11&measure=cost`)).json()) as { rows: Array<{ finding_id: string }> };
    expect(json.rows.map((r) => r.finding_id)).toEqual(['f-cost']);
    const csv = await (await fetch(`${service.url}/api/v1/anomalies?from=2026-11-08&to=2026-11-11&measure=error_rate&format=csv`)).text();
    const [header, line] = csv.trim().split(/\r?\n/);
    expect(header).toBe('finding_id,series_kind,series_id,measure,grain,unit,bucket,expected,expected_low,expected_high,actual,score,direction,summary,explanation,evaluated_at');
    expect(line).toBe("f-err,endpoint,acme/flux/infer,error_rate,hour,ratio,2026-11-09T14:00:00.000Z,0.01,0,0.08,0.3,6.1,up,'=cmd|error rate,,2026-11-10T06:00:00.000Z");
  });

  it('a bad parameter is a 400 naming it', async () => {
    const res = await fetch(`${service.url}/api/v1/anomalies?measure=weather`);
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain('measure');
  });

  it('tallyhouse_anomalies_open counts the findings of the last 48 hours per measure, each once, 0 where none', async () => {
    // Two versions of one recent error-rate finding and a recent tombstoned volume one; the fixtures above are older.
    const recent = toDateTime64(new Date(NOW.getTime() - 3_600_000));
    const w = service.writer;
    const written = w.insert(anomalies, [
      row({ finding_id: 'r-err', measure: 'error_rate', grain: 'hour', bucket: recent, version: 1 }),
      row({ finding_id: 'r-err', measure: 'error_rate', grain: 'hour', bucket: recent, version: 2 }),
      row({ finding_id: 'r-vol', series_id: 'acme/v', measure: 'volume', grain: 'hour', bucket: recent, version: 1 }),
      row({ finding_id: 'r-vol', series_id: 'acme/v', measure: 'volume', grain: 'hour', bucket: recent, version: 2, is_deleted: 1 }),
    ]);
    await w.flush();
    await written;
    expect(await anomaliesOpen.read(service)).toEqual([
      { labels: { kind: 'cost' }, value: 0 },
      { labels: { kind: 'volume' }, value: 0 },
      { labels: { kind: 'error_rate' }, value: 1 },
      { labels: { kind: 'p95_latency' }, value: 0 },
    ]);
  });
});
