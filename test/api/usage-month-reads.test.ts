// Issue 34.4: the cost queries of a range of local days read only the granules that hold those days (sql/029: a
// minmax index on usage_buckets.bucket_date), not the whole usage table, and their answers stay the simulator's
// truth, with the usage of every day collected twice (a second collection writes newer versions that FINAL must
// pick). One zone: the engine reads with FINAL every granule whose sorting-key range meets a granule it keeps, and
// in a store this small a part of two zones spans from the first zone's keys to the second's, so every part would
// meet every other (a large store's granules hold one zone each). The answers in several zones, with the index in
// place, are test/api/cost.test.ts's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { decimalToScaled } from '../../src/values.js';
import { runJob } from '../support/jobs.js';
import { queryRows, testConfig } from '../support/store.js';

const ZONES = ['UTC'] as const;
let sim: Sim;
let service: Service;
/** Every query of usage_buckets by range the service sent since the last reset (FINAL), with its parameters. */
let sent: Array<{ query: string; query_params?: Record<string, unknown> }> = [];
/** The store client's own query, which records nothing. */
let unrecorded: Service['store']['client']['query'];

beforeAll(async () => {
  sim = await startSim({ seed: 29, now: '2026-11-21T12:00:00Z', days: 120, apps: 6 });
  service = await startService(testConfig({ PORT: '0', TIMEZONES: ZONES.join(',') }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension()],
  });
  for (let pass = 0; pass < 2; pass++) {
    for (const timezone of ZONES) {
      const run = await runJob(service, sim, 'usage', { from: '2026-07-25', to: '2026-11-22', timezone });
      expect(run.status, run.error).toBe('ok');
    }
  }
  const client = service.store.client;
  const query = (unrecorded = client.query.bind(client));
  client.query = ((params: Parameters<typeof query>[0]) => {
    if (/FROM usage_buckets FINAL/.test(params.query)) sent.push({ query: params.query, query_params: params.query_params });
    return query(params);
  }) as typeof client.query;
}, 180_000);

afterAll(async () => {
  await service?.close();
  await sim?.close();
});

const nanos = (v: string) => decimalToScaled(v, 9);

/** The truth's cost of [from, to) in `timezone`, per key, without zero entries. */
function truthBy(timezone: string, from: string, to: string, key: (r: { app: string; machine_type: string }) => string): Array<[string, bigint]> {
  const out = new Map<string, bigint>();
  for (const r of sim.truth.usage({ from, to, timezone, timeframe: 'day' })) {
    const k = key(r);
    out.set(k, (out.get(k) ?? 0n) + BigInt(r.cost_total_nanos));
  }
  return [...out].filter(([, v]) => v !== 0n).sort(([a], [b]) => a.localeCompare(b));
}

/**
 * What the usage queries sent since the reset read (the engine's statistics of each, run again as sent), and what
 * reading only the right granules costs: the rows of the parts whose bucket_date range meets [from, to) (each part
 * of this small store is one granule, so the index can skip whole parts and nothing finer).
 */
async function reads(from: string, to: string) {
  const readRows: number[] = [];
  for (const s of sent.splice(0)) {
    const rs = await unrecorded({ query: s.query, query_params: s.query_params, format: 'JSON' });
    readRows.push(Number(((await rs.json()) as { statistics: { rows_read: number } }).statistics.rows_read));
  }
  const parts = await queryRows<{ part: string; first: string; last: string; n: string }>(
    service,
    'SELECT _part AS part, toString(min(bucket_date)) AS first, toString(max(bucket_date)) AS last, toString(count()) AS n FROM usage_buckets GROUP BY _part',
  );
  const meeting = parts.filter((p) => p.first < to && p.last >= from).reduce((s, p) => s + Number(p.n), 0);
  const total = parts.reduce((s, p) => s + Number(p.n), 0);
  return { readRows, meeting, total };
}

describe('cost of a month from usage_buckets (sql/029)', () => {
  it('the table carries the bucket_date index, as does model_usage_buckets', async () => {
    for (const table of ['usage_buckets', 'model_usage_buckets']) {
      const [{ statement }] = await queryRows<{ statement: string }>(service, `SHOW CREATE TABLE ${table}`);
      expect(statement).toContain('INDEX bucket_date_minmax bucket_date TYPE minmax GRANULARITY 1');
    }
  });

  for (const timezone of ZONES) {
    it(`GET /reports/finance of September in ${timezone} equals the truth and reads only the parts of its days`, async () => {
      sent = [];
      const res = await fetch(`${service.url}/api/v1/reports/finance?month=2026-09&timezone=${encodeURIComponent(timezone)}`);
      expect(res.status).toBe(200);
      const report = (await res.json()) as { rows: Array<{ product: string; app: string; machine_type: string; total: string }> };
      const got = report.rows
        .filter((r) => r.product === 'serverless')
        .map((r): [string, bigint] => [`${r.app}|${r.machine_type}`, nanos(r.total)])
        .filter(([, v]) => v !== 0n)
        .sort(([a], [b]) => a.localeCompare(b));
      const truth = truthBy(timezone, '2026-09-01', '2026-10-01', (r) => `${r.app}|${r.machine_type}`);
      expect(truth.length).toBeGreaterThan(3);
      expect(got).toEqual(truth);

      const { readRows, meeting, total } = await reads('2026-09-01', '2026-10-01');
      expect(readRows.length).toBeGreaterThan(0);
      // Five months are in the store; September's days are in at most two months' parts.
      expect(meeting).toBeLessThan(total / 2);
      for (const n of readRows) expect(n).toBe(meeting);
    });

    it(`GET /cost of 10 days of October by app in ${timezone} equals the truth and reads only the parts of its days`, async () => {
      sent = [];
      const res = await fetch(`${service.url}/api/v1/cost?from=2026-10-10&to=2026-10-20&group_by=app&timezone=${encodeURIComponent(timezone)}`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { rows: Array<{ app: string; cost: string }> };
      const got = body.rows
        .map((r): [string, bigint] => [r.app, nanos(r.cost)])
        .filter(([, v]) => v !== 0n)
        .sort(([a], [b]) => a.localeCompare(b));
      expect(got).toEqual(truthBy(timezone, '2026-10-10', '2026-10-20', (r) => r.app));

      const { readRows, meeting, total } = await reads('2026-10-10', '2026-10-20');
      expect(meeting).toBeLessThan(total / 2);
      expect(readRows.length).toBeGreaterThan(0);
      for (const n of readRows) expect(n).toBe(meeting);
    });
  }
});
