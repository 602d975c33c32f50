// Issue 34.5: settled months of `requests` are merged into one part each (sql/028), so the raw cost queries' FINAL
// reads them without merging. The answer must not change: GET /cost/requests from the requests themselves (zones
// outside TIMEZONES) equals the simulator's truth with requests stored twice (a re-collection), before and
// after the months are merged, across a month boundary, a price change within a day and an endpoint priced only
// from the middle of the range.
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
import { queryRows, testConfig } from '../support/store.js';

const NOW = '2026-11-01T18:00:00Z';
const FROM = '2026-10-29';
const TO = '2026-11-03';
const prices: Array<{ endpoint_id: string; unit_price: string; currency: string; effective_from: string }> = [];
let sim: Sim;
let service: Service;

beforeAll(async () => {
  sim = await startSim({ seed: 34, now: NOW, days: 6, apps: 4, requestsPerHour: 25 });
  const endpoints = sim.truth.apps().filter((a) => a.owned_by_caller).flatMap((a) => a.endpoints);
  expect(endpoints.length).toBeGreaterThan(2);
  // endpoints[0] changes price in the middle of a day (UTC and Kolkata alike); endpoints[1] has no price before
  // 10-31 12:00 UTC (its earlier requests are unpriced); the others are priced throughout.
  endpoints.forEach((endpoint_id, i) => {
    if (i !== 1) prices.push({ endpoint_id, unit_price: i === 0 ? '0.0005' : '0.00031', currency: 'USD', effective_from: '2026-10-01T00:00:00Z' });
  });
  prices.push({ endpoint_id: endpoints[0], unit_price: '0.000123456789', currency: 'USD', effective_from: '2026-10-31T06:30:00Z' });
  prices.push({ endpoint_id: endpoints[1], unit_price: '0.002', currency: 'USD', effective_from: '2026-10-31T12:00:00Z' });
  const dir = mkdtempSync(join(tmpdir(), 'th-prices-'));
  writeFileSync(join(dir, 'prices.json'), JSON.stringify(prices));
  service = await startService(testConfig({ PORT: '0', TIMEZONES: 'UTC', PRICES_FILE: join(dir, 'prices.json') }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension([requestCostRoutes])],
  });
  expect((await runJob(service, sim, 'apps')).status).toBe('ok');
  const first = await runJob(service, sim, 'requests', { 'lookback-hours': '96' });
  expect(first.status, first.error).toBe('ok');
  // 40 minutes on, the whole range again: every request is stored a second time, more of them billed.
  sim.clock.advance(40 * 60_000);
  const again = await runJob(service, sim, 'requests', { from: FROM, to: TO });
  expect(again.status, again.error).toBe('ok');
}, 180_000);

afterAll(async () => {
  await service?.close();
  await sim?.close();
});

function priceAt(endpointId: string, endedAt: string): bigint | null {
  let best: (typeof prices)[number] | undefined;
  for (const p of prices) {
    if (p.endpoint_id !== endpointId || Date.parse(p.effective_from) > Date.parse(endedAt)) continue;
    if (!best || Date.parse(p.effective_from) > Date.parse(best.effective_from)) best = p;
  }
  return best ? decimalToScaled(best.unit_price, 12) : null;
}

type Figures = { request_count: number; unbilled: number; unpriced: number; units: bigint; cost: bigint | null };

/** The simulator's truth at its "now", per endpoint (and local day in `timezone` when byDay). */
function truth(timezone: string, byDay: boolean): Map<string, Figures> {
  const out = new Map<string, Figures>();
  const now = sim.clock.now().getTime();
  for (const endpointId of new Set(sim.truth.apps().filter((a) => a.owned_by_caller).flatMap((a) => a.endpoints))) {
    for (const r of sim.truth.requestList({ endpointId, from: '2026-10-27T00:00:00Z', to: '2026-11-04T00:00:00Z' })) {
      if (r.endpoint_id !== endpointId) continue; // a bare owner/app id also lists its routes
      const day = DateTime.fromISO(r.ended_at, { zone: timezone }).toISODate()!;
      if (day < FROM || day >= TO || Date.parse(r.ended_at) >= now) continue;
      const key = byDay ? `${r.endpoint_id}|${day}` : r.endpoint_id;
      const t = out.get(key) ?? { request_count: 0, unbilled: 0, unpriced: 0, units: 0n, cost: null };
      t.request_count++;
      if (Date.parse(r.billed_at) > now) t.unbilled++;
      else {
        const units = decimalToScaled(String(r.billable_units), 9);
        t.units += units;
        const price = priceAt(r.endpoint_id, r.ended_at);
        if (price === null) t.unpriced++;
        else t.cost = (t.cost ?? 0n) + units * price; // scale 9 + 12 = 21
      }
      out.set(key, t);
    }
  }
  return out;
}

type Row = { endpoint_id: string; day?: string; request_count: number; unbilled_requests: number; unpriced_requests: number; billable_units: string; cost: string | null };

async function rawAnswer(timezone: string, byDay: boolean): Promise<Map<string, Row>> {
  const res = await fetch(
    `${service.url}/api/v1/cost/requests?from=${FROM}&to=${TO}&timezone=${encodeURIComponent(timezone)}${byDay ? '&group_by=day' : ''}`,
  );
  expect(res.status).toBe(200);
  const body = (await res.json()) as { source: string; rows: Row[] };
  expect(body.source).toBe('requests');
  return new Map(body.rows.map((r) => [byDay ? `${r.endpoint_id}|${r.day}` : r.endpoint_id, r]));
}

async function expectTruth(): Promise<void> {
  for (const [timezone, byDay] of [['Asia/Kolkata', true], ['Etc/UTC', false], ['America/New_York', true]] as const) {
    const want = truth(timezone, byDay);
    const got = await rawAnswer(timezone, byDay);
    expect([...got.keys()].sort(), timezone).toEqual([...want.keys()].sort());
    for (const [key, t] of want) {
      const r = got.get(key)!;
      expect([r.request_count, r.unbilled_requests, r.unpriced_requests], `${timezone} ${key}`).toEqual([t.request_count, t.unbilled, t.unpriced]);
      expect(decimalToScaled(r.billable_units, 9), `${timezone} ${key}`).toBe(t.units);
      expect(r.cost === null ? null : decimalToScaled(r.cost, 21), `${timezone} ${key}`).toBe(t.cost);
    }
  }
}

describe('GET /cost/requests from the requests, settled months merged (sql/028)', () => {
  it('the requests table merges a month once all its parts are an hour old, into one part', async () => {
    const [table] = await queryRows<{ q: string }>(service, "SELECT create_table_query AS q FROM system.tables WHERE database = currentDatabase() AND name = 'requests'");
    expect(table.q).toContain('min_age_to_force_merge_seconds = 3600');
    expect(table.q).toContain('min_age_to_force_merge_on_partition_only = 1');
  });

  it('equals the truth with requests stored twice, before and after the months are merged into one part each', async () => {
    const [copies] = await queryRows<{ stored: string; distinct: string }>(
      service,
      'SELECT count() AS stored, (SELECT count() FROM requests FINAL) AS distinct FROM requests',
    );
    expect(Number(copies.distinct)).toBeGreaterThan(100);
    // Merges may already have dropped some copies; FINAL has the rest to resolve.
    expect(Number(copies.stored)).toBeGreaterThan(Number(copies.distinct) + 1000);
    const all = truth('Etc/UTC', false);
    expect([...all.values()].reduce((s, t) => s + t.unpriced, 0)).toBeGreaterThan(0);
    expect([...all.values()].reduce((s, t) => s + t.unbilled, 0)).toBeGreaterThan(0);
    await expectTruth();

    // What the engine does to a settled month (sql/028), done now rather than an hour from now.
    await service.store.client.command({ query: 'OPTIMIZE TABLE requests FINAL' });
    const parts = await queryRows<{ partition: string; parts: string }>(
      service,
      "SELECT partition, count() AS parts FROM system.parts WHERE database = currentDatabase() AND table = 'requests' AND active GROUP BY partition ORDER BY partition",
    );
    expect(parts).toEqual([{ partition: '202610', parts: '1' }, { partition: '202611', parts: '1' }]);
    const [merged] = await queryRows<{ stored: string }>(service, 'SELECT count() AS stored FROM requests');
    expect(merged.stored).toBe(copies.distinct);
    await expectTruth();
  });
});
