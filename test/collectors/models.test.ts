// Issue 15, acceptance 1-2 (collection): model cost per endpoint, currency and local day against the
// simulator's truth (integer nanos, computed from its world model, never from its HTTP answers), through faults,
// in three timezones, legacy rows included; re-collection changes nothing; an API-scope key fails the job
// with the 403 while the serverless usage job carries on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DateTime } from 'luxon';
import { startSim, type Sim } from '../../src/sim/index.js';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { decimalToScaled } from '../../src/values.js';
import { queryRows, testConfig } from '../support/store.js';
import { runJob, simClient } from '../support/jobs.js';
import { financeReport } from '../../src/api/finance.js';
import { parse as parseCsv } from 'csv-parse/sync';
import { checkFocusCsv } from '../support/focus/check.js';

const NOW = '2026-11-21T12:00:00Z';
// History starts 2026-10-12 12:00 (40 days): rows before 2026-11-01 (UTC) are served in the legacy cost-only
// shape (so the local day around the 2026-10-15 price change has two legacy rows per key, which must be
// summed); prices change on the 15th; America/New_York leaves DST on 2026-11-01.
const FROM = '2026-10-13';
const TO = '2026-11-22';

const TOKEN = 'test-token-0123456789abcdef';
let rt: Service;
let sim: Sim;
beforeAll(async () => {
  sim = await startSim({ seed: 7, now: NOW, days: 40, faultRate: 0.2 });
  rt = await startService(testConfig({ PORT: '0', API_TOKENS: TOKEN, TIMEZONES: 'UTC,America/New_York,Asia/Kolkata' }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension()],
  });
});
afterAll(async () => {
  await rt?.close();
  await sim?.close();
});

async function api(path: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${rt.url}/api/v1${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return { status: res.status, body: await res.json() };
}

type Totals = Map<string, bigint>;

function truthDaily(timezone: string): Totals {
  const out: Totals = new Map();
  for (const r of sim.truth.modelUsage({ from: FROM, to: TO, timezone })) {
    const key = `${DateTime.fromISO(r.bucket!, { setZone: true }).toISODate()}|${r.endpoint_id}|${r.currency}`;
    out.set(key, (out.get(key) ?? 0n) + r.cost_total_nanos);
  }
  return out;
}

async function storedDaily(timezone: string): Promise<Totals> {
  const rows = await queryRows<{ day: string; endpoint_id: string; currency: string; cost: string }>(
    rt,
    `SELECT toString(bucket_date) AS day, endpoint_id, currency, toString(sum(cost_total)) AS cost
     FROM model_usage_buckets FINAL
     WHERE timezone = {tz:String} AND timeframe = 'day' AND bucket_date >= {from:Date} AND bucket_date < {to:Date}
     GROUP BY day, endpoint_id, currency`,
    { tz: timezone, from: FROM, to: TO },
  );
  return new Map(rows.map((r) => [`${r.day}|${r.endpoint_id}|${r.currency}`, decimalToScaled(r.cost, 9)]));
}

const sorted = (m: Totals) => [...m.entries()].filter(([, v]) => v !== 0n).sort(([a], [b]) => a.localeCompare(b));

describe('models collector against the simulator (fault rate 0.2)', () => {
  it.each(['UTC', 'America/New_York', 'Asia/Kolkata'])(
    'model cost per endpoint, currency and local day equals the truth to the nano in %s; re-collecting changes nothing',
    async (timezone) => {
      const truth = truthDaily(timezone);
      expect(truth.size).toBeGreaterThan(38 * 11);
      const legacyDays = new Set(sim.truth.modelUsage({ from: FROM, to: TO, timezone }).filter((r) => r.legacy).map((r) => r.bucket));
      expect(legacyDays.size).toBeGreaterThan(5);
      const first = await runJob(rt, sim, 'models', { from: FROM, to: TO, timezone });
      expect(first.status, first.error).toBe('ok');
      expect(sorted(await storedDaily(timezone))).toEqual(sorted(truth));
      const again = await runJob(rt, sim, 'models', { from: FROM, to: TO, timezone });
      expect(again.status, again.error).toBe('ok');
      expect(sorted(await storedDaily(timezone))).toEqual(sorted(truth));
    },
  );

  it('stores cost per API key as the truth has it, and both currencies apart', async () => {
    const truth = new Map<string, bigint>();
    for (const r of sim.truth.modelUsage({ from: FROM, to: TO, timezone: 'UTC' })) {
      const key = `${r.api_key_label}|${r.currency}`;
      truth.set(key, (truth.get(key) ?? 0n) + r.cost_total_nanos);
    }
    expect([...truth.keys()].sort()).toEqual([
      'Batch Key|EUR', 'Batch Key|USD', 'Dev Key|EUR', 'Dev Key|USD', 'Production Key|EUR', 'Production Key|USD',
      'alice (dashboard login)|EUR', 'alice (dashboard login)|USD',
    ]);
    const rows = await queryRows<{ label: string; currency: string; cost: string }>(
      rt,
      `SELECT api_key_label AS label, currency, toString(sum(cost_total)) AS cost FROM model_usage_buckets FINAL
       WHERE timezone = 'UTC' AND bucket_date >= {from:Date} AND bucket_date < {to:Date} GROUP BY label, currency`,
      { from: FROM, to: TO },
    );
    expect(new Map(rows.map((r) => [`${r.label}|${r.currency}`, decimalToScaled(r.cost, 9)]))).toEqual(truth);
  });

  it('/cost?product=model_api&group_by=endpoint,api_key equals the truth per key; serverless groups are refused', async () => {
    const truth = new Map<string, bigint>();
    for (const r of sim.truth.modelUsage({ from: '2026-11-01', to: TO, timezone: 'America/New_York' })) {
      const key = `${r.endpoint_id}|${r.api_key_label}|${r.currency}`;
      truth.set(key, (truth.get(key) ?? 0n) + r.cost_total_nanos);
    }
    expect(truth.size).toBeGreaterThan(30);
    const res = await api(`/cost?product=model_api&group_by=endpoint,api_key&from=2026-11-01&to=${TO}&timezone=America/New_York`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const got = new Map<string, bigint>(res.body.rows.map((r: any) => [`${r.endpoint}|${r.api_key}|${r.currency}`, decimalToScaled(r.cost, 9)]));
    expect(got).toEqual(truth);
    const refused = await api('/cost?product=model_api&group_by=machine_type&from=2026-11-01&to=2026-11-02');
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('machine_type do not apply to product=model_api');
  });

  it('stores every billed call once, with its cost, and the prices and catalogue', async () => {
    const calls = sim.truth.modelCalls({ from: FROM, to: TO });
    expect(calls.length).toBeGreaterThan(1000);
    const rows = await queryRows<{ request_id: string; cost: string }>(
      rt,
      `SELECT request_id, toString(cost_total) AS cost FROM model_billing_events FINAL`,
      {},
    );
    const stored = new Map(rows.map((r) => [r.request_id, decimalToScaled(r.cost, 9)]));
    const missing = calls.filter((c) => stored.get(c.request_id) !== c.cost_total_nanos);
    expect(missing.slice(0, 5)).toEqual([]);
    const prices = await queryRows<{ endpoint_id: string; unit_price: string; currency: string }>(
      rt,
      `SELECT endpoint_id, toString(unit_price) AS unit_price, currency FROM model_prices WHERE endpoint_id IN ('svc-ai/flux-dev', 'svc-ai/recraft-v3') ORDER BY endpoint_id LIMIT 1 BY endpoint_id`,
      {},
    );
    // Hand-derived: flux-dev 0.025 + two 0.0025 steps (Oct 15, Nov 15); recraft-v3 0.04 EUR, never changed.
    expect(prices).toEqual([
      { endpoint_id: 'svc-ai/flux-dev', unit_price: '0.03', currency: 'USD' },
      { endpoint_id: 'svc-ai/recraft-v3', unit_price: '0.04', currency: 'EUR' },
    ]);
    const catalogue = await queryRows<{ n: string }>(rt, `SELECT count() AS n FROM models FINAL WHERE status = 'deprecated'`, {});
    expect(Number(catalogue[0].n)).toBe(1);
  });

  it('the finance report: both product lines, totals per product and currency equal the truth and the platform summary', async () => {
    expect((await runJob(rt, sim, 'usage', { from: '2026-11-01', to: TO, timezone: 'UTC' })).status).toBe('ok');
    const report = await financeReport(rt.store, '2026-11', 'UTC', new Date(NOW));
    const sumBy = (rows: Array<{ currency: string; cost_total_nanos: bigint | number }>) => {
      const m = new Map<string, bigint>();
      for (const r of rows) m.set(r.currency, (m.get(r.currency) ?? 0n) + BigInt(r.cost_total_nanos));
      return m;
    };
    const modelDaily = sumBy(sim.truth.modelUsage({ from: '2026-11-01', to: TO, timezone: 'UTC' }));
    const modelSummary = sumBy(sim.truth.modelUsageSummary({ from: '2026-11-01', to: TO, timezone: 'UTC' }));
    const serverlessDaily = sumBy(sim.truth.usage({ from: '2026-11-01', to: TO, timezone: 'UTC' }).map((r) => ({ ...r, currency: r.currency as string })));
    expect([...modelDaily.keys()].sort()).toEqual(['EUR', 'USD']);
    const sub = (product: string, currency: string) => report.product_totals.find((r) => r.product === product && r.currency === currency)!;
    for (const currency of ['EUR', 'USD']) {
      expect(decimalToScaled(sub('model_api', currency).total, 9), currency).toBe(modelDaily.get(currency));
      expect(decimalToScaled(sub('model_api', currency).platform_summary_total!, 9), currency).toBe(modelSummary.get(currency));
    }
    expect(decimalToScaled(sub('serverless', 'USD').total, 9)).toBe(serverlessDaily.get('USD'));
    // Per currency overall: both products; EUR is model APIs alone, never added to USD.
    const total = (currency: string) => decimalToScaled(report.totals.find((r) => r.currency === currency)!.total, 9);
    expect(total('USD')).toBe(serverlessDaily.get('USD')! + modelDaily.get('USD')!);
    expect(total('EUR')).toBe(modelDaily.get('EUR'));
    expect(report.reconciliation.summary_ranges.model_api).toEqual({ from: '2026-11-01', to: '2026-11-22' });
    // flux-dev was billed at two prices this month (0.0275, then 0.03 from the 15th): its total is the truth's.
    const fluxTruth = sim.truth.modelUsage({ from: '2026-11-01', to: TO, timezone: 'UTC' }).filter((r) => r.endpoint_id === 'svc-ai/flux-dev' && !r.legacy);
    expect(new Set(fluxTruth.map((r) => r.unit_price_nanos))).toEqual(new Set([27_500_000, 30_000_000]));
    const fluxRows = report.rows.filter((r) => r.endpoint_id === 'svc-ai/flux-dev');
    expect(fluxRows.length).toBeGreaterThan(1); // one per key
    expect(fluxRows.reduce((a, r) => a + decimalToScaled(r.total, 9), 0n)).toBe(fluxTruth.reduce((a, r) => a + r.cost_total_nanos, 0n));
  });

  it('the FOCUS file of November passes the spec-derived check; BilledCost per currency equals the finance totals; list and contracted costs are price x quantity', async () => {
    const report = await financeReport(rt.store, '2026-11', 'UTC', new Date(NOW));
    const res = await fetch(`${rt.url}/api/v1/reports/focus?month=2026-11`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/csv/);
    const text = await res.text();
    // The spec-derived check (test/support/focus/check.ts: columns, types, allowed values, nullability, cross-column rules).
    expect(checkFocusCsv(text)).toEqual([]);
    const rows = parseCsv(text, { columns: true }) as Array<Record<string, string>>;
    expect(rows.length).toBeGreaterThan(100);
    const billed = new Map<string, bigint>();
    for (const r of rows) billed.set(r.BillingCurrency, (billed.get(r.BillingCurrency) ?? 0n) + decimalToScaled(r.BilledCost, 12));
    expect(billed).toEqual(new Map(report.totals.map((t) => [t.currency, decimalToScaled(t.total, 12)])));
    expect(new Set(rows.map((r) => r.x_Product))).toEqual(new Set(['serverless', 'model_api']));
  });

  it('an API-scope key: the models job fails naming the 403, and the serverless usage job still succeeds', async () => {
    const apiOnly = simClient(sim, { api: sim.keys.api, admin: sim.keys.api });
    try {
      const models = await runJob(rt, sim, 'models', { from: '2026-11-20', to: '2026-11-21' }, { platform: apiOnly });
      expect(models.status).toBe('failed');
      expect(models.error).toMatch(/403/);
      const usage = await runJob(rt, sim, 'usage', { from: '2026-11-20', to: '2026-11-21' });
      expect(usage.status, usage.error).toBe('ok');
    } finally {
      await apiOnly.close();
    }
  });
});
