// The simulator's model APIs: usage rows, billing events and prices agree with each other, and the shapes the
// notes describe (legacy rows, keys, a second currency, a price change on the 15th) are really served.
// Oracle: the simulator's endpoints against each other and hand-derived figures (prices from the pricing table
// written below), not the code that computes them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import { call, pageAll } from './helpers.js';

let sim: Sim;
beforeAll(async () => {
  sim = await startSim({ seed: 3, apps: 5 });
});
afterAll(async () => {
  await sim?.close();
});

describe('model APIs in the simulator', () => {
  it('bills every call once: usage subtotals equal the billing events, per endpoint and currency', async () => {
    const q = 'start=2026-11-01&end=2026-11-21&timeframe=day&timezone=UTC&expand=time_series,auth_method_structured';
    const pages = await pageAll(sim.url, `/v1/models/usage?${q}`, { key: sim.keys.admin });
    const rows = pages.flatMap((p: any) => p.time_series.flatMap((b: any) => b.results));
    expect(rows.length).toBeGreaterThan(100);
    const events = (await pageAll(sim.url, '/v1/models/billing-events?start=2026-11-01&end=2026-11-21&limit=10000', { key: sim.keys.admin }))
      .flatMap((p: any) => p.billing_events);
    expect(events.length).toBeGreaterThan(100);
    // Quantity per endpoint is the same both ways.
    const sum = (list: any[], key: (x: any) => string, value: (x: any) => number) => {
      const m = new Map<string, number>();
      for (const x of list) m.set(key(x), (m.get(key(x)) ?? 0) + value(x));
      return m;
    };
    expect(sum(rows, (r) => r.endpoint_id, (r) => r.quantity)).toEqual(sum(events, (e) => e.endpoint_id, (e) => e.output_units));
    // Legacy rows (before 2026-11-06) carry only cost; newer ones the discount fields.
    const legacy = rows.filter((r: any) => r.cost_total === undefined);
    expect(legacy.length).toBeGreaterThan(0);
    for (const r of legacy) expect(Object.keys(r).sort()).toEqual(['auth_method_structured', 'cost', 'currency', 'endpoint_id', 'quantity', 'unit']);
    expect(new Set(rows.map((r: any) => r.currency))).toEqual(new Set(['USD', 'EUR']));
    // flux-dev: 0.025 per image until the 15th, 0.0275 after (hand-derived from a 10% step).
    const flux = rows.filter((r: any) => r.endpoint_id === 'svc-ai/flux-dev' && r.unit_price !== undefined);
    expect(new Set(flux.map((r: any) => r.unit_price))).toEqual(new Set([0.025, 0.0275]));
    // Keys: the Batch Key's rows carry 25 % discount.
    const batch = rows.filter((r: any) => r.auth_method_structured?.api_key_id === 'key_91c2e7b4' && r.cost_total !== undefined);
    expect(batch.length).toBeGreaterThan(0);
    for (const r of batch) expect(r.percent_discount).toBe(25);
  });

  it('serves the current price and refuses an unknown model', async () => {
    const res = await call(sim.url, '/v1/models/pricing?endpoint_id=svc-ai/flux-dev,svc-ai/recraft-v3', { key: sim.keys.api });
    expect(res.body.prices).toEqual([
      { endpoint_id: 'svc-ai/flux-dev', unit_price: 0.0275, unit: 'image', currency: 'USD' },
      { endpoint_id: 'svc-ai/recraft-v3', unit_price: 0.04, unit: 'image', currency: 'EUR' },
    ]);
    expect((await call(sim.url, '/v1/models/pricing?endpoint_id=svc-ai/nope', { key: sim.keys.api })).status).toBe(404);
    expect((await call(sim.url, '/v1/models/usage', { key: sim.keys.api })).status).toBe(403);
  });
});
