import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DateTime } from 'luxon';
import { parse as parseCsv } from 'csv-parse/sync';
import { startSim, type Sim } from '../../src/sim/index.js';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { analyticsRoutes } from '../../src/api/analytics-routes.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { runJob } from '../support/jobs.js';
import { testConfig } from '../support/store.js';

let sim: Sim;
let service: Service;
const FROM = '2026-11-19';
const TO = '2026-11-21';

async function api<T>(path: string): Promise<{ status: number; body: T }> {
  const res = await fetch(`${service.url}/api/v1${path}`);
  return { status: res.status, body: (await res.json()) as T };
}

beforeAll(async () => {
  sim = await startSim({ seed: 21, now: '2026-11-21T12:00:00Z', days: 5, apps: 6 });
  service = await startService(testConfig({ PORT: '0', TIMEZONES: 'UTC,Asia/Kolkata' }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension([analyticsRoutes])],
  });
  for (const job of ['apps', 'analytics', 'runners']) {
    const run = await runJob(service, sim, job, { from: FROM, to: TO });
    expect(run.status, `${job}: ${run.error}`).toBe('ok');
  }
}, 120_000);

afterAll(async () => {
  await service?.close();
  await sim?.close();
});

const sameInstant = (a: string, b: string) => DateTime.fromISO(a).toMillis() === DateTime.fromISO(b).toMillis();

describe('GET /latency and /errors', () => {
  it('return the percentiles and error-type counts per endpoint and bucket exactly as the platform computed them', async () => {
    const endpoint = sim.truth.apps().find((a) => a.owned_by_caller && a.endpoints.length > 1)!.endpoints[1];
    const truth = sim.truth
      .analytics({ endpointIds: [endpoint], from: FROM, to: TO, timezone: 'Asia/Kolkata', timeframe: 'hour' })
      .filter((r) => Number(r.request_count) > 0);
    expect(truth.length).toBeGreaterThan(5);
    const latency = await api<{ rows: Array<Record<string, string | number | null>> }>(
      `/latency?from=${FROM}&to=${TO}&timezone=Asia/Kolkata&timeframe=hour&endpoint_id=${encodeURIComponent(endpoint)}`,
    );
    expect(latency.status).toBe(200);
    const errors = await api<{ rows: Array<Record<string, string | number | null>> }>(
      `/errors?from=${FROM}&to=${TO}&timezone=Asia/Kolkata&timeframe=hour&endpoint_id=${encodeURIComponent(endpoint)}`,
    );
    for (const t of truth) {
      const l = latency.body.rows.find((r) => sameInstant(String(r.bucket), t.bucket))!;
      expect(l, t.bucket).toBeDefined();
      expect(String(l.bucket)).toMatch(/\+05:30$/);
      for (const m of ['p50_duration', 'p90_duration', 'p99_duration', 'p95_prepare_duration', 'cold_boot_count', 'request_count']) {
        expect(l[m], `${t.bucket} ${m}`).toBe(t[m] ?? null);
      }
      const e = errors.body.rows.find((r) => sameInstant(String(r.bucket), t.bucket))!;
      for (const m of ['success_count', 'user_error_count', 'error_count', 'startup_error_count', 'connection_error_count', 'timeout_error_count', 'runtime_error_count']) {
        expect(e[m], `${t.bucket} ${m}`).toBe(t[m]);
      }
    }
  });

  it('answers CSV, and rejects bad parameters naming them', async () => {
    const res = await fetch(`${service.url}/api/v1/errors?from=${FROM}&to=${TO}&format=csv`);
    expect(res.status).toBe(200);
    const rows = parseCsv(await res.text(), { columns: true }) as Array<Record<string, string>>;
    expect(rows.length).toBeGreaterThan(0);
    expect(Object.keys(rows[0])).toContain('timeout_error_count');
    for (const [path, parameter] of [
      ['/latency?from=2026-11-19&to=2026-11-18', 'to'],
      ['/latency?from=yesterday&to=2026-11-18', 'from'],
      ['/latency?from=2026-11-19&to=2026-11-20&timezone=Mars/Base', 'timezone'],
      ['/latency?from=2026-11-19&to=2026-11-20&timeframe=fortnight', 'timeframe'],
      ['/latency?from=2026-11-19&to=2026-11-20&kind=everything', 'kind'],
      ['/runners?from=2026-11-19&to=2026-11-20&aggregation=median', 'aggregation'],
    ] as const) {
      const r = await api<{ error: { parameter: string } }>(path);
      expect(r.status, path).toBe(400);
      expect(r.body.error.parameter, path).toBe(parameter);
    }
  });
});

describe('GET /runners', () => {
  it('returns the runner-state history per app equal to the truth', async () => {
    const app = sim.truth.apps().find((a) => a.owned_by_caller)!;
    const truth = sim.truth.runnerHistory({ owner: app.owner, name: app.name, from: FROM, to: TO, timeframe: 'hour', aggregation: 'max' });
    const got = await api<{ rows: Array<{ endpoint_id: string; bucket: string; running: number; idle: number; pending: number; draining: number }> }>(
      `/runners?from=${FROM}&to=${TO}&timeframe=hour&aggregation=max&endpoint_id=${encodeURIComponent(app.endpoint_id)}`,
    );
    expect(got.status).toBe(200);
    expect(got.body.rows).toHaveLength(truth.length);
    for (const [i, t] of truth.entries()) {
      const r = got.body.rows[i];
      expect(sameInstant(r.bucket, t.timestamp)).toBe(true);
      expect([r.running, r.idle, r.pending, r.draining]).toEqual([t.running, t.idle, t.pending, t.draining]);
    }
  });
});
