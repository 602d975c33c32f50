import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import type { Runtime } from '../../src/runtime.js';
import { decimalToScaled, toDateTime64 } from '../../src/values.js';
import { requestCostByEndpointDay, requestCosts } from '../../src/store/tables/requests.js';
import { openTestRuntime, closeRuntime, queryRows } from '../support/store.js';
import { runJob } from '../support/jobs.js';
import { Checkpoints } from '../../src/store/tables/checkpoints.js';

// Acceptance 1, 2 and 6 of issue 5 (requests and unit prices) against the simulator, without and with 20 %
// faults. Definitions (src/sim/README.md): a request belongs to the UTC day of its ended_at; billable_units is
// null in the list until the virtual clock passes billed_at = ended_at + 1..30 min; the truth's unbilled_count
// is "not billed at now". Costs are compared exactly: units (thousandths) x price (12 decimals), scale 10^15.

const HOUR = 3_600_000;
const COST_SCALE = 21; // Decimal(38, 9) x Decimal(38, 12)

const pricesDir = mkdtempSync(join(tmpdir(), 'th-prices-'));
const PRICES_FILE = join(pricesDir, 'prices.json');
writeFileSync(PRICES_FILE, '[]');

let rt: Runtime;
beforeAll(async () => {
  rt = await openTestRuntime({ PRICES_FILE, REQUESTS_RECOLLECT_HOURS: '6' });
});
afterAll(async () => {
  await closeRuntime(rt);
});

interface DayFigures {
  requests: number;
  unbilled: number;
  unitsMilli: bigint;
}
type ByDay = Map<string, DayFigures>;

function truthByDay(sim: Sim, from: Date, to: Date): ByDay {
  const out: ByDay = new Map();
  for (const r of sim.truth.requests({ from: from.toISOString(), to: to.toISOString(), timezone: 'UTC' })) {
    out.set(`${r.endpoint_id}|${r.day}`, {
      requests: r.request_count,
      unbilled: r.unbilled_count,
      unitsMilli: BigInt(r.billable_units_billed_milli),
    });
  }
  return out;
}

async function storedByDay(from: Date, to: Date, endpointIds: string[]): Promise<ByDay> {
  const rows = await requestCostByEndpointDay(rt.store, {
    from: toDateTime64(from),
    to: toDateTime64(to),
    endpoint_ids: endpointIds,
    timezone: 'UTC',
  });
  return new Map(
    rows.map((r) => [
      `${r.endpoint_id}|${r.day}`,
      { requests: r.request_count, unbilled: r.unbilled_requests, unitsMilli: decimalToScaled(r.billable_units, 3) },
    ]),
  );
}

/** Each simulator here is a new platform: forget the scheduled watermarks of the previous one. */
async function freshWatermarks(): Promise<void> {
  await new Checkpoints(rt.store, rt.writer).save('requests', 'scheduled', '{}');
}

const sorted = <V>(m: Map<string, V>) => [...m.entries()].sort(([a], [b]) => a.localeCompare(b));

interface Price {
  endpoint_id: string;
  unit_price: string;
  currency: string;
  effective_from: string;
}

/** The price in effect at `endedAt` (latest effective_from <= endedAt), as an integer at scale 12. */
function priceAt(prices: Price[], endpointId: string, endedAtMs: number): bigint | null {
  let best: Price | null = null;
  for (const p of prices) {
    if (p.endpoint_id !== endpointId || Date.parse(p.effective_from) > endedAtMs) continue;
    if (!best || Date.parse(p.effective_from) > Date.parse(best.effective_from)) best = p;
  }
  return best ? decimalToScaled(best.unit_price, 12) : null;
}

/** Truth cost per request (scale 10^21), for the requests billed at the simulator's now. */
function truthCosts(sim: Sim, endpointId: string, from: Date, to: Date, prices: Price[]): Map<string, bigint | null> {
  const nowMs = sim.clock.now().getTime();
  const out = new Map<string, bigint | null>();
  for (const r of sim.truth.requestList({ endpointId, from: from.toISOString(), to: to.toISOString() })) {
    if (r.endpoint_id !== endpointId) continue; // a bare id lists its routes too
    if (Date.parse(r.billed_at) > nowMs) {
      out.set(r.request_id, null);
      continue;
    }
    const price = priceAt(prices, endpointId, Date.parse(r.ended_at));
    const unitsMilli = BigInt(Math.round(r.billable_units * 1000));
    out.set(r.request_id, price === null ? null : unitsMilli * price * 10n ** BigInt(COST_SCALE - 15));
  }
  return out;
}

async function storedCosts(endpointId: string, from: Date, to: Date): Promise<Map<string, bigint | null>> {
  const rows = await requestCosts(rt.store, { from: toDateTime64(from), to: toDateTime64(to), endpoint_ids: [endpointId], limit: 1_000_000 });
  return new Map(rows.map((r) => [r.request_id, r.cost === null ? null : decimalToScaled(r.cost, COST_SCALE)]));
}

const scenarios = [
  { name: 'no faults', seed: 21, now: '2026-11-21T12:00:00Z', faultRate: 0 },
  { name: '20% faults', seed: 22, now: '2026-10-10T12:00:00Z', faultRate: 0.2 },
];

describe.each(scenarios)('requests collector against the simulator ($name)', ({ seed, now, faultRate }) => {
  let sim: Sim;
  const t0 = new Date(now);
  const from = new Date(t0.getTime() - 24 * HOUR); // the first run's look-back
  let endpoints: string[];
  let priced: string[];
  let prices: Price[];

  beforeAll(async () => {
    sim = await startSim({ seed, now, days: 3, apps: 6, requestsPerHour: 20, faultRate, slowMs: 200 });
    await freshWatermarks();
    endpoints = sim.truth.apps().filter((a) => a.owned_by_caller).flatMap((a) => a.endpoints).sort();
    // Price the two busiest endpoints (one of them a route when the world has one), with a change in the
    // middle of the collected range; the others stay unpriced.
    const busiest = [...truthByDay(sim, from, t0)]
      .map(([k, v]) => [k.split('|')[0], v.requests] as const)
      .sort((a, b) => b[1] - a[1])
      .map(([id]) => id);
    const route = busiest.find((id) => id.split('/').length > 2 && id !== busiest[0]);
    priced = [busiest[0], route ?? busiest[1]];
    prices = [
      { endpoint_id: priced[0], unit_price: '0.0004', currency: 'USD', effective_from: new Date(t0.getTime() - 72 * HOUR).toISOString() },
      { endpoint_id: priced[0], unit_price: '0.000123456789', currency: 'USD', effective_from: new Date(t0.getTime() - 7 * HOUR).toISOString() },
      { endpoint_id: priced[1], unit_price: '2.5', currency: 'EUR', effective_from: new Date(t0.getTime() - 30 * HOUR).toISOString().slice(0, 10) },
    ];
    writeFileSync(PRICES_FILE, JSON.stringify(prices));
  });
  afterAll(async () => {
    await sim.close();
  });

  it('first run: request count per endpoint per day equals the truth, and the null-unit count equals the unbilled count', async () => {
    const run = await runJob(rt, sim, 'requests');
    expect(run.status, run.error).toBe('ok');
    if (faultRate > 0) expect(run.retries).toBeGreaterThan(0);
    const truth = truthByDay(sim, from, t0);
    expect([...truth.values()].reduce((s, v) => s + v.requests, 0)).toBeGreaterThan(1000);
    expect([...truth.values()].reduce((s, v) => s + v.unbilled, 0)).toBeGreaterThan(0);
    expect(sorted(await storedByDay(from, t0, endpoints))).toEqual(sorted(truth));
  });

  it('after the billing delay passes, the next run fills in the units: sums per endpoint per day equal the truth', async () => {
    sim.clock.advance(HOUR);
    const t1 = sim.clock.now();
    const run = await runJob(rt, sim, 'requests');
    expect(run.status, run.error).toBe('ok');
    const truth = truthByDay(sim, from, t1);
    // Everything that ended before t0 is billed by now (billed_at <= ended_at + 30 min); the last hour is partly not.
    expect([...truthByDay(sim, from, t0).values()].every((v) => v.unbilled === 0)).toBe(true);
    expect(sorted(await storedByDay(from, t1, endpoints))).toEqual(sorted(truth));

    // The re-collection window reached back REQUESTS_RECOLLECT_HOURS before the first run's watermark.
    const calls = sim.requestLog().filter((c) => c.path === '/v1/serverless/requests/by-endpoint' && !c.query.cursor);
    const starts = new Set(calls.slice(-10).map((c) => c.query.start));
    expect(starts).toContain(new Date(t0.getTime() - 6 * HOUR).toISOString());
  });

  it('per-request cost, with a price change in the middle of the range, equals the truth exactly', async () => {
    const t1 = sim.clock.now();
    for (const id of priced) {
      const truth = truthCosts(sim, id, from, t1, prices);
      expect(truth.size).toBeGreaterThan(50);
      const stored = await storedCosts(id, from, t1);
      expect(sorted(stored)).toEqual(sorted(truth));
    }
    // Both prices of the first endpoint were used.
    const rows = await requestCosts(rt.store, { from: toDateTime64(from), to: toDateTime64(t1), endpoint_ids: [priced[0]], limit: 1_000_000 });
    expect(new Set(rows.map((r) => r.unit_price))).toEqual(new Set(['0.0004', '0.000123456789']));

    // The per-day aggregate is the sum of those costs, and unpriced endpoints have no cost.
    const days = await requestCostByEndpointDay(rt.store, { from: toDateTime64(from), to: toDateTime64(t1), endpoint_ids: [], timezone: 'UTC' });
    for (const d of days) {
      if (!priced.includes(d.endpoint_id)) {
        expect(d.cost).toBeNull();
        expect(d.unpriced_requests).toBe(d.billed_requests);
        continue;
      }
      const dayFrom = new Date(Math.max(Date.parse(`${d.day}T00:00:00Z`), from.getTime()));
      const dayTo = new Date(Math.min(Date.parse(`${d.day}T00:00:00Z`) + 24 * HOUR, t1.getTime()));
      const expected = [...truthCosts(sim, d.endpoint_id, dayFrom, dayTo, prices).values()].reduce<bigint>((s, c) => s + (c ?? 0n), 0n);
      expect(d.cost === null ? 0n : decimalToScaled(d.cost, COST_SCALE), `${d.endpoint_id} ${d.day}`).toBe(expected);
      expect(d.currency).toBe(prices.find((p) => p.endpoint_id === d.endpoint_id)!.currency);
      expect(d.unpriced_requests).toBe(0);
    }
  });

  it('a billed copy wins over a null copy collected after it', async () => {
    const t1 = sim.clock.now();
    const before = sorted(await storedByDay(from, t1, endpoints));
    // Back to t0: the last half hour before it is unbilled again on the platform side; collect it again.
    sim.clock.set(t0);
    try {
      const windowFrom = new Date(t0.getTime() - 2 * HOUR);
      const recent = sim.truth.requests({ from: windowFrom.toISOString(), to: t0.toISOString() });
      expect(recent.reduce((s, r) => s + r.unbilled_count, 0)).toBeGreaterThan(0);
      const run = await runJob(rt, sim, 'requests', { from: windowFrom.toISOString(), to: t0.toISOString() });
      expect(run.status, run.error).toBe('ok');
      expect(run.rows).toBe(recent.reduce((s, r) => s + r.request_count, 0));
    } finally {
      sim.clock.set(t1);
    }
    expect(sorted(await storedByDay(from, t1, endpoints))).toEqual(before);
    const [{ n }] = await queryRows<{ n: string }>(
      rt,
      `SELECT count() AS n FROM requests WHERE billable_units IS NULL AND ended_at >= {from:DateTime64(3, 'UTC')} AND ended_at < {to:DateTime64(3, 'UTC')}`,
      { from: toDateTime64(t0.getTime() - 2 * HOUR), to: toDateTime64(t0) },
    );
    expect(Number(n)).toBeGreaterThan(0); // the null copies are there; FINAL reads past them
  });

  it('a later price change adds to the history: earlier requests keep their price', async () => {
    const t1 = sim.clock.now();
    const costBefore = await storedCosts(priced[0], from, new Date(t0.getTime() - 2 * HOUR));
    // The file now lists only the newest price (from t0 - 2h): the earlier entries stay in effect where they were.
    const change: Price = { endpoint_id: priced[0], unit_price: '0.001', currency: 'USD', effective_from: new Date(t0.getTime() - 2 * HOUR).toISOString() };
    writeFileSync(PRICES_FILE, JSON.stringify([change]));
    const run = await runJob(rt, sim, 'requests');
    expect(run.status, run.error).toBe('ok');
    expect(sorted(await storedCosts(priced[0], from, new Date(t0.getTime() - 2 * HOUR)))).toEqual(sorted(costBefore));
    const all = [...prices, change];
    expect(sorted(await storedCosts(priced[0], from, t1))).toEqual(sorted(truthCosts(sim, priced[0], from, t1, all)));
    prices = all;
  });
});

describe('a bad PRICES_FILE', () => {
  it('fails the run with the entry and field named, and requests are collected anyway', async () => {
    const sim = await startSim({ seed: 23, now: '2026-09-01T12:00:00Z', days: 2, apps: 3, requestsPerHour: 10 });
    await freshWatermarks();
    try {
      const id = sim.truth.apps().find((a) => a.owned_by_caller)!.endpoint_id;
      writeFileSync(
        PRICES_FILE,
        JSON.stringify([
          { endpoint_id: id, unit_price: '0.1', currency: 'USD', effective_from: '2026-08-01T00:00:00Z' },
          { endpoint_id: id, unit_price: '1,5', currency: 'USD', effective_from: '2026-08-02T00:00:00Z' },
        ]),
      );
      const run = await runJob(rt, sim, 'requests');
      expect(run.status).toBe('failed');
      expect(run.error).toContain(`PRICES_FILE ${PRICES_FILE}: entry 2 (${id}), field unit_price: expected a decimal number`);
      const truth = sim.truth.requests({ from: '2026-08-31T12:00:00Z', to: '2026-09-01T12:00:00Z' });
      expect(run.rows).toBe(truth.reduce((s, r) => s + r.request_count, 0));
      const stored = await queryRows<{ n: string }>(
        rt,
        `SELECT count() AS n FROM unit_prices FINAL WHERE endpoint_id = {id:String}`,
        { id },
      );
      expect(Number(stored[0].n)).toBe(0); // nothing of a bad file is loaded
    } finally {
      writeFileSync(PRICES_FILE, '[]');
      await sim.close();
    }
  });
});
