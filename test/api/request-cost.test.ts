import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DateTime } from 'luxon';
import { startSim, type Sim } from '../../src/sim/index.js';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { requestCostRoutes } from '../../src/api/request-cost-routes.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { decimalToScaled } from '../../src/values.js';
import { runJob } from '../support/jobs.js';
import { testConfig } from '../support/store.js';

const NOW = '2026-11-21T12:00:00Z';
const FROM = '2026-11-19';
const TO = '2026-11-22';
const prices: Array<{ endpoint_id: string; unit_price: string; currency: string; effective_from: string }> = [];
let sim: Sim;
let service: Service;

beforeAll(async () => {
  sim = await startSim({ seed: 31, now: NOW, days: 5, apps: 5, requestsPerHour: 30 });
  const endpoints = sim.truth.apps().filter((a) => a.owned_by_caller).flatMap((a) => a.endpoints);
  // Every endpoint priced from the start; one of them changes price in the middle of the range.
  for (const endpoint_id of endpoints) prices.push({ endpoint_id, unit_price: '0.0005', currency: 'USD', effective_from: '2026-11-01T00:00:00Z' });
  prices.push({ endpoint_id: endpoints[0], unit_price: '0.000123456789', currency: 'USD', effective_from: '2026-11-20T06:30:00Z' });
  const dir = mkdtempSync(join(tmpdir(), 'th-prices-'));
  writeFileSync(join(dir, 'prices.json'), JSON.stringify(prices));
  service = await startService(testConfig({ PORT: '0', TIMEZONES: 'UTC', PRICES_FILE: join(dir, 'prices.json') }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension([requestCostRoutes])],
  });
  for (const job of ['apps', 'requests']) {
    const run = await runJob(service, sim, job, job === 'requests' ? { 'lookback-hours': '96' } : {});
    expect(run.status, run.error).toBe('ok');
  }
}, 120_000);

afterAll(async () => {
  await service?.close();
  await sim?.close();
});

const SCALE = 21;
function priceAt(endpointId: string, endedAt: string): bigint | null {
  let best: (typeof prices)[number] | undefined;
  for (const p of prices) {
    if (p.endpoint_id !== endpointId || Date.parse(p.effective_from) > Date.parse(endedAt)) continue;
    if (!best || Date.parse(p.effective_from) > Date.parse(best.effective_from)) best = p;
  }
  return best ? decimalToScaled(best.unit_price, 12) : null;
}

/** Truth per endpoint and local day at the simulator's "now": counts, billed units and cost at the prices in effect. */
function truth(timezone: string) {
  const out = new Map<string, { request_count: number; unbilled: number; units: bigint; cost: bigint }>();
  const now = sim.clock.now().getTime();
  for (const endpointId of new Set(prices.map((p) => p.endpoint_id))) {
    for (const r of sim.truth.requestList({ endpointId, from: '2026-11-18T00:00:00Z', to: '2026-11-23T00:00:00Z' })) {
      if (r.endpoint_id !== endpointId) continue; // a bare owner/app id also lists its routes
      const day = DateTime.fromISO(r.ended_at, { zone: timezone }).toISODate()!;
      if (day < FROM || day >= TO || Date.parse(r.ended_at) >= now) continue;
      const key = `${r.endpoint_id}|${day}`;
      const t = out.get(key) ?? { request_count: 0, unbilled: 0, units: 0n, cost: 0n };
      t.request_count++;
      if (Date.parse(r.billed_at) > now) t.unbilled++;
      else {
        const units = decimalToScaled(String(r.billable_units), 9);
        t.units += units;
        t.cost += units * priceAt(r.endpoint_id, r.ended_at)!; // scale 9 + 12 = 21
      }
      out.set(key, t);
    }
  }
  return out;
}

type Row = { endpoint_id: string; day: string; request_count: number; unbilled_requests: number; billable_units: string; cost: string | null; currency: string };

async function stored(timezone: string): Promise<{ source: string; rows: Map<string, Row> }> {
  const res = await fetch(`${service.url}/api/v1/cost/requests?from=${FROM}&to=${TO}&timezone=${encodeURIComponent(timezone)}&group_by=day`);
  expect(res.status).toBe(200);
  const body = (await res.json()) as { source: string; rows: Row[] };
  return { source: body.source, rows: new Map(body.rows.map((r) => [`${r.endpoint_id}|${r.day}`, r])) };
}

function compare(got: Map<string, Row>, want: ReturnType<typeof truth>) {
  expect([...got.keys()].sort()).toEqual([...want.keys()].sort());
  for (const [key, t] of want) {
    const r = got.get(key)!;
    expect([r.request_count, r.unbilled_requests], key).toEqual([t.request_count, t.unbilled]);
    expect(decimalToScaled(r.billable_units, 9), key).toBe(t.units);
    expect(decimalToScaled(r.cost ?? '0', SCALE), key).toBe(t.cost);
  }
}

describe('GET /cost/requests', () => {
  it('equals the truth per endpoint and day, unbilled requests included, before and after the billing delay', async () => {
    const before = truth('UTC');
    const unbilledBefore = [...before.values()].reduce((s, t) => s + t.unbilled, 0);
    expect(unbilledBefore).toBeGreaterThan(0);
    const rollup = await stored('UTC');
    expect(rollup.source).toBe('rollup');
    compare(rollup.rows, before);
    // A zone outside TIMEZONES is answered from the requests themselves, equally exact.
    const raw = await stored('Asia/Kolkata');
    expect(raw.source).toBe('requests');
    compare(raw.rows, truth('Asia/Kolkata'));

    sim.clock.advance(40 * 60_000);
    const run = await runJob(service, sim, 'requests');
    expect(run.status, run.error).toBe('ok');
    const after = truth('UTC');
    expect([...after.values()].reduce((s, t) => s + t.unbilled, 0)).toBeLessThan(unbilledBefore);
    compare((await stored('UTC')).rows, after);
  });

  it('names bad parameters', async () => {
    for (const [path, parameter] of [
      ['?from=2026-11-19&to=2026-11-18', 'to'],
      ['?from=2026-11-19&to=2026-11-20&timezone=Nowhere/Land', 'timezone'],
      ['?from=2026-11-19&to=2026-11-20&group_by=hour', 'group_by'],
      ["?from=2026-11-19&to=2026-11-20&endpoint_id=x'%20OR%201=1", null],
    ] as const) {
      const res = await fetch(`${service.url}/api/v1/cost/requests${path}`);
      if (parameter === null) {
        expect(res.status).toBe(200);
        expect(((await res.json()) as { rows: unknown[] }).rows).toEqual([]);
      } else {
        expect(res.status, path).toBe(400);
        expect(((await res.json()) as { error: { parameter: string } }).error.parameter).toBe(parameter);
      }
    }
  });
});
