// Issue 50.1: `sim --strict-interface` serves exactly what platform-interface.md lists. The notes-only endpoints are
// absent (404), analytics `expand` is refused with 422 for a name the interface does not list, the base analytics
// carry success and error rates instead of counts, and runner history goes 24 hours back; what it does serve has
// the same ground truth as the default simulator. Oracle: the default simulator of the same seed, and its truth.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import { call } from './helpers.js';

let strict: Sim;
let plain: Sim;
const NOW = '2026-11-21T12:00:00Z';

beforeAll(async () => {
  strict = await startSim({ seed: 3, now: NOW, apps: 4, days: 3, strictInterface: true });
  plain = await startSim({ seed: 3, now: NOW, apps: 4, days: 3 });
});
afterAll(async () => {
  await strict.close();
  await plain.close();
});

const app = () => strict.truth.apps().find((a) => a.owned_by_caller)!;
const endpoint = () => `${app().owner}/${app().name}`;

describe('sim --strict-interface (issue 50.1)', () => {
  it('answers 404 for what only the notes name, and serves the interface endpoints', async () => {
    const { owner, name } = app();
    const notesOnly: Array<[string, 'GET' | 'POST']> = [
      [`/v1/models/pricing?endpoint_id=svc-ai/flux-dev`, 'GET'],
      [`/v1/models/billing-events?start=2026-11-20&end=2026-11-21`, 'GET'],
      [`/v1/serverless/apps/${owner}/${name}/queue`, 'GET'],
      ['/v1/serverless/logs/history', 'POST'],
      ['/v1/serverless/logs/stream', 'POST'],
      ['/v1/serverless/metrics', 'GET'],
    ];
    for (const [path, method] of notesOnly) {
      expect((await call(strict.url, path, { key: strict.keys.admin, method, body: method === 'POST' ? [] : undefined })).status, path).toBe(404);
      const served = await call(plain.url, path.replace('/v1/serverless/logs/stream', '/v1/serverless/logs/history'), { key: plain.keys.admin, method, body: method === 'POST' ? [] : undefined });
      expect(served.status, path).toBe(200);
    }
    for (const path of ['/v1/serverless/apps', '/v1/models?limit=10', '/metrics', `/v1/serverless/apps/${owner}/${name}/events`, '/v1/meta']) {
      expect((await call(strict.url, path, { key: strict.keys.api })).status, path).toBe(200);
    }
  });

  it('refuses an analytics expand name outside the interface with 422, and accepts the interface set', async () => {
    const q = `endpoint_id=${endpoint()}&start=2026-11-21T00:00:00Z&end=2026-11-21T06:00:00Z&timeframe=hour`;
    const refused = await call(strict.url, `/v1/serverless/analytics?${q}&expand=time_series&expand=p50_duration`, { key: strict.keys.api });
    expect(refused.status).toBe(422);
    expect(refused.body.error.message).toContain("'p50_duration' is not an analytics metric name");
    expect((await call(plain.url, `/v1/serverless/analytics?${q}&expand=time_series&expand=p50_duration`, { key: plain.keys.api })).status).toBe(200);
    const ok = await call(strict.url, `/v1/serverless/analytics?${q}&expand=time_series&expand=p95_duration&expand=timeout_error_count`, { key: strict.keys.api });
    expect(ok.status).toBe(200);
    const truth = strict.truth.analytics({ endpointIds: [endpoint()], from: '2026-11-21T00:00:00Z', to: '2026-11-21T06:00:00Z', timeframe: 'hour' });
    const rows = ok.body.time_series.map((b: { bucket: string; results: Array<Record<string, unknown>> }) => ({ bucket: b.bucket, ...b.results[0] }));
    expect(rows).toHaveLength(6);
    expect(truth.reduce((n, t) => n + Number(t.request_count), 0)).toBeGreaterThan(0);
    rows.forEach((row: Record<string, unknown>, i: number) => {
      const t = truth[i];
      const count = Number(t.request_count);
      // Rates, not counts; the rest exactly the truth.
      expect(row).not.toHaveProperty('success_count');
      expect(row).not.toHaveProperty('error_count');
      expect(row).toEqual({
        bucket: t.bucket,
        endpoint_id: endpoint(),
        request_count: count,
        success_rate: count === 0 ? null : Number(t.success_count) / count,
        error_rate: count === 0 ? null : Number(t.error_count) / count,
        p50_duration: t.p50_duration,
        p75_duration: t.p75_duration,
        p90_duration: t.p90_duration,
        p95_duration: t.p95_duration,
        timeout_error_count: t.timeout_error_count,
      });
    });
  });

  it('serves runner history 24 hours back, and refuses further with 422', async () => {
    const { owner, name } = app();
    const path = (start: string) => `/v1/serverless/apps/${owner}/${name}/runners/history?start=${start}&end=2026-11-21T12:00:00Z&timeframe=hour`;
    expect((await call(strict.url, path('2026-11-20T12:00:00Z'), { key: strict.keys.api })).status).toBe(200);
    const refused = await call(strict.url, path('2026-11-20T11:00:00Z'), { key: strict.keys.api });
    expect(refused.status).toBe(422);
    expect(refused.body.error.message).toContain('24 hours back');
    expect((await call(plain.url, path('2026-11-19T00:00:00Z'), { key: plain.keys.api })).status).toBe(200);
  });
});
