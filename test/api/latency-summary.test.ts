// Issue 50.2: a period's percentiles are the platform's own (expand=summary), not a merge of buckets; a platform
// that refuses the summary leaves the job ok with one note, and /latency falls back and says so.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { startSim, type Sim } from '../../src/sim/index.js';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { analyticsRoutes } from '../../src/api/analytics-routes.js';
import { createRegistry } from '../../src/metrics.js';
import { runJob } from '../support/jobs.js';
import { testConfig } from '../support/store.js';

let sim: Sim;
let service: Service;
const lines: Array<Record<string, unknown>> = [];
type Summary = { endpoint_id: string; percentiles_source: string; covered_until: string | null; request_count: number; p95_duration: number | null; p99_duration: number | null };

async function latency(q: string): Promise<{ summary: Summary[]; rows: Array<Record<string, unknown>> }> {
  const res = await fetch(`${service.url}/api/v1/latency?${q}`);
  expect(res.status).toBe(200);
  return (await res.json()) as { summary: Summary[]; rows: Array<Record<string, unknown>> };
}

beforeAll(async () => {
  sim = await startSim({ seed: 50, now: '2026-11-21T12:00:00Z', days: 22, apps: 4 });
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  service = await startService(testConfig({ PORT: '0', TIMEZONES: 'UTC,America/New_York,Asia/Kolkata' }), {
    logger: pino({ level: 'info' }, stream),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension([analyticsRoutes])],
  });
  const apps = await runJob(service, sim, 'apps');
  expect(apps.status, apps.error).toBe('ok');
}, 120_000);

afterAll(async () => {
  await service?.close();
  await sim?.close();
});

const endpoints = () => sim.truth.apps().filter((a) => a.owned_by_caller).flatMap((a) => a.endpoints);

describe('analytics summary: a month and a day by the platform\'s own percentiles', () => {
  it('a platform refusing expand=summary: the job ends ok with one note and one log line; /latency falls back to bucket_max and says so', async () => {
    sim.setRefusedExpand(['summary']);
    let run;
    try {
      run = await runJob(service, sim, 'analytics', { from: '2026-11-01', to: '2026-11-21', timezone: 'Asia/Kolkata', timeframe: 'day' });
    } finally {
      sim.setRefusedExpand([]);
    }
    expect(run.status, run.error).toBe('ok');
    expect(run.note).toMatch(/expand=summary.*not served/);
    expect(run.note!.match(/expand=summary/g)).toHaveLength(1);
    expect(lines.filter((l) => String(l.msg).includes('refused the analytics summary'))).toHaveLength(1);

    const body = await latency('from=2026-11-01&to=2026-12-01&timezone=Asia/Kolkata&timeframe=day');
    const ids = endpoints();
    expect(body.summary.map((s) => s.endpoint_id).sort()).toEqual([...ids].sort());
    for (const s of body.summary) {
      expect(s.percentiles_source).toBe('bucket_max');
      expect(s.covered_until).toBeNull();
      // The buckets the backfill stored (to is exclusive): the month's first 20 days.
      const days = sim.truth.analytics({ endpointIds: [s.endpoint_id], from: '2026-11-01', to: '2026-11-21', timezone: 'Asia/Kolkata', timeframe: 'day' });
      const p99s = days.map((d) => d.p99_duration as number | null).filter((v): v is number => v !== null);
      expect(s.p99_duration).toBe(p99s.length ? Math.max(...p99s) : null);
      expect(s.request_count).toBe(days.reduce((n, d) => n + (d.request_count as number), 0));
    }
  }, 120_000);

  it.each(['UTC', 'America/New_York'])('%s: the month\'s and a day\'s p95/p99 from /latency are the simulator\'s summary of that range', async (timezone) => {
    const run = await runJob(service, sim, 'analytics', { from: '2026-11-01', to: '2026-11-21', timezone, timeframe: 'day' });
    expect(run.status, run.error).toBe('ok');
    expect(run.note ?? '').not.toMatch(/summary/);
    const ids = endpoints();
    let differs = 0;
    for (const [from, to] of [['2026-11-01', '2026-12-01'], ['2026-11-15', '2026-11-16']]) {
      const body = await latency(`from=${from}&to=${to}&timezone=${timezone}&timeframe=day`);
      expect(body.summary.map((s) => s.endpoint_id).sort()).toEqual([...ids].sort());
      const truth = sim.truth.analyticsSummary({ endpointIds: ids, from, to, timezone });
      for (const t of truth) {
        const s = body.summary.find((r) => r.endpoint_id === t.endpoint_id)!;
        expect(s.percentiles_source, `${t.endpoint_id} ${from}`).toBe('platform_summary');
        expect(s.p99_duration, `${t.endpoint_id} ${from} p99`).toBe(t.p99_duration);
        expect(s.p95_duration, `${t.endpoint_id} ${from} p95`).toBe(t.p95_duration);
        expect(s.request_count).toBe(t.request_count);
        const bucketMax = Math.max(...body.rows.filter((r) => r.endpoint_id === t.endpoint_id && r.p99_duration !== null).map((r) => r.p99_duration as number));
        if (bucketMax !== t.p99_duration) differs++;
      }
      expect(truth.some((t) => (t.request_count as number) > 0)).toBe(true);
    }
    // The month's own p99 is not what merging its days would give (why the summary is collected).
    expect(differs).toBeGreaterThan(0);
    // The month so far: the summary says up to when it covers.
    const month = await latency(`from=2026-11-01&to=2026-12-01&timezone=${timezone}&timeframe=day`);
    expect(month.summary[0].covered_until).toBe('2026-11-21T12:00:00Z');
  }, 120_000);
});
