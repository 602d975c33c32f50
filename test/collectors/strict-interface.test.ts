// Issue 50 acceptance: against a platform that serves exactly the interface (the simulator's strictInterface) with
// 20% faults, every scheduled job ends ok; usage, requests and analytics equal its truth for what it serves; each
// extra the platform refused is named in the run's note and the tallyhouse_platform_endpoint_served gauge, and the
// analytics refusal is logged once. Oracle: the simulator's truth (analytics rates derived from its counts).
import { Writable } from 'node:stream';
import pino from 'pino';
import { DateTime } from 'luxon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import type { Runtime } from '../../src/runtime.js';
import { allJobs } from '../../jobs/index.js';
import { INTERFACE_EXPAND_METRICS, EXTRA_EXPAND_METRICS, EXTRAS_ENDPOINT } from '../../src/collectors/analytics.js';
import { requestCostByEndpointDay } from '../../src/store/tables/requests.js';
import { toDateTime64, decimalToScaled } from '../../src/values.js';
import { openTestRuntime, closeRuntime, queryRows } from '../support/store.js';
import { runJob } from '../support/jobs.js';
import { nonZero } from '../support/truth.js';

const NOW = '2026-11-21T11:50:00Z';
let rt: Runtime;
let sim: Sim;
const lines: Array<Record<string, unknown>> = [];
const results = new Map<string, { status: string; error: string; note?: string }>();

beforeAll(async () => {
  const base = await openTestRuntime();
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  rt = { ...base, logger: pino({ level: 'info' }, stream) };
  sim = await startSim({ seed: 11, now: NOW, apps: 5, days: 3, faultRate: 0.2, slowMs: 200, strictInterface: true });
  // Every scheduled job, in the start-up order (jobs/index.ts), twice: a second run must not log a refusal again.
  for (let pass = 0; pass < 2; pass++) {
    for (const job of allJobs) {
      const r = await runJob(rt, sim, job.name);
      results.set(`${pass}:${job.name}`, r);
    }
  }
}, 600_000);
afterAll(async () => {
  await sim.close();
  await closeRuntime(rt);
});

describe('a platform serving exactly the interface, with 20% faults (issue 50 acceptance)', () => {
  it('every scheduled job ends ok', () => {
    const failed = [...results.entries()].filter(([, r]) => r.status !== 'ok').map(([name, r]) => `${name}: ${r.status} ${r.error}`);
    expect(failed).toEqual([]);
    expect(results.size).toBe(2 * allJobs.length);
  });

  it("names each refused extra in the run's note, and logs the analytics refusal once", async () => {
    expect(results.get('0:analytics')!.note).toContain(EXTRAS_ENDPOINT);
    expect(results.get('0:models')!.note).toContain('/v1/models/pricing not served');
    expect(results.get('0:models')!.note).toContain('/v1/models/billing-events not served');
    expect(results.get('0:queue')!.note).toContain('/queue not served');
    // A first run asks for the whole hour that began 24 hours ago: refused, noted, and the 24 hours collected.
    expect(results.get('0:runners')!.note).toContain('runner history beyond 24 hours not served');
    expect(results.get('1:runners')!.note ?? '').not.toContain('not served'); // the next run starts at its checkpoint
    const refusals = lines.filter((l) => l.endpoint === EXTRAS_ENDPOINT && l.level === 40);
    expect(refusals).toHaveLength(1);
    const served = await rt.registry.getSingleMetric('tallyhouse_platform_endpoint_served')!.get();
    const byEndpoint = Object.fromEntries(served.values.map((v) => [v.labels.endpoint, v.value]));
    expect(byEndpoint).toMatchObject({ [EXTRAS_ENDPOINT]: 0, '/v1/models/pricing': 0, '/v1/models/billing-events': 0 });
  });

  it('usage equals the truth per app and day, to the nano', async () => {
    const truth = new Map<string, bigint>();
    for (const r of sim.truth.usage({ from: '2026-11-18', to: '2026-11-21', timezone: 'UTC', timeframe: 'day' })) {
      const key = `${DateTime.fromISO(r.bucket!, { setZone: true }).toISODate()}|${r.app}`;
      truth.set(key, (truth.get(key) ?? 0n) + BigInt(r.cost_total_nanos));
    }
    nonZero(truth, 'usage 18-21 November', ([, v]) => v);
    const rows = await queryRows<{ day: string; app: string; cost: string }>(
      rt,
      `SELECT toString(bucket_date) AS day, app, toString(sum(cost_total)) AS cost FROM usage_buckets FINAL
       WHERE timezone = 'UTC' AND timeframe = 'day' AND bucket_date >= '2026-11-18' AND bucket_date < '2026-11-21' GROUP BY day, app`,
    );
    const stored = new Map(rows.map((r) => [`${r.day}|${r.app}`, decimalToScaled(r.cost, 9)]));
    const sorted = (m: Map<string, bigint>) => [...m.entries()].filter(([, v]) => v !== 0n).sort(([a], [b]) => a.localeCompare(b));
    expect(sorted(stored)).toEqual(sorted(truth));
  });

  it('requests equal the truth per endpoint and day over the first run\'s 24 hours', async () => {
    const to = new Date(NOW);
    const from = new Date(to.getTime() - 24 * 3_600_000);
    const truth = new Map<string, { requests: number; unitsMilli: bigint }>();
    for (const r of sim.truth.requests({ from: from.toISOString(), to: to.toISOString(), timezone: 'UTC' })) {
      truth.set(`${r.endpoint_id}|${r.day}`, { requests: r.request_count, unitsMilli: BigInt(r.billable_units_billed_milli) });
    }
    nonZero(truth, 'requests of the last 24 hours', ([, v]) => v.requests);
    const rows = await requestCostByEndpointDay(rt.store, { from: toDateTime64(from), to: toDateTime64(to), endpoint_ids: [...new Set([...truth.keys()].map((k) => k.split('|')[0]))], timezone: 'UTC' });
    const stored = new Map(rows.map((r) => [`${r.endpoint_id}|${r.day}`, { requests: r.request_count, unitsMilli: decimalToScaled(r.billable_units, 3) }]));
    const sorted = <V>(m: Map<string, V>) => [...m.entries()].sort(([a], [b]) => a.localeCompare(b));
    expect(sorted(stored)).toEqual(sorted(truth));
  });

  it('analytics: the interface set per hour and endpoint equals the truth, rates stored as rates, extras NULL', async () => {
    const endpointIds = sim.truth.apps().filter((a) => a.owned_by_caller).flatMap((a) => a.endpoints);
    const from = '2026-11-20T12:00:00.000Z';
    const truth = sim.truth.analytics({ endpointIds, from, to: '2026-11-21T11:00:00.000Z', timezone: 'UTC', timeframe: 'hour' });
    nonZero(truth, 'analytics of the last day', (t) => Number(t.request_count));
    const stored = await queryRows<Record<string, unknown>>(
      rt,
      `SELECT endpoint_id, toString(bucket) AS bucket_utc, * EXCEPT (endpoint_id, bucket) FROM analytics_buckets FINAL
       WHERE kind = 'serverless' AND timezone = 'UTC' AND timeframe = 'hour' AND bucket >= '2026-11-20 12:00:00' AND bucket < '2026-11-21 11:00:00'`,
    );
    const byKey = new Map(stored.map((r) => [`${r.endpoint_id}|${r.bucket_utc}`, r]));
    expect(byKey.size).toBe(truth.length);
    const num = (v: unknown) => (v === null ? null : Number(v));
    for (const t of truth) {
      const key = `${t.endpoint_id}|${DateTime.fromISO(t.bucket, { setZone: true }).toUTC().toFormat('yyyy-MM-dd HH:mm:ss.SSS')}`;
      const s = byKey.get(key);
      expect(s, key).toBeDefined();
      const count = Number(t.request_count);
      const expected: Record<string, unknown> = {
        request_count: count,
        success_rate: count === 0 ? null : Number(t.success_count) / count,
        error_rate: count === 0 ? null : Number(t.error_count) / count,
        p50_duration: t.p50_duration,
        p75_duration: t.p75_duration,
        p90_duration: t.p90_duration,
      };
      for (const m of INTERFACE_EXPAND_METRICS) expected[m] = t[m];
      for (const m of EXTRA_EXPAND_METRICS) if (!(m in expected)) expected[m] = null;
      const got = Object.fromEntries(Object.keys(expected).map((m) => [m, num(s![m])]));
      expect(got, key).toEqual(expected);
    }
  });
});
