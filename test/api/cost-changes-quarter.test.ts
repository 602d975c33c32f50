// Acceptance 1 of issue 32: in a simulated quarter with a known price change (svc-ai/flux-pro, from October 1)
// and volume changes (svc-ai/fast-sdxl x3, and one app x2, from the same day), GET /api/v1/cost/changes for
// October against September equals, per group, each effect computed HERE from the simulator's truth by the
// README's formulas (volume = (q1 - q0) x p0, price = (p1 - p0) x q1, discount = -(d1 - d0), new/gone whole,
// per priced item with p = s / q), and the parts sum to the difference. The world is small (4 apps, 2 requests
// an hour) so the test stays quick.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseCsv } from 'csv-parse/sync';
import { startSim, type Sim } from '../../src/sim/index.js';
import { parseScenario, scenarioTruth } from '../../src/sim/scenario.js';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { decimalToScaled } from '../../src/values.js';
import { runJob } from '../support/jobs.js';
import { testConfig } from '../support/store.js';
import { nonZero } from '../support/truth.js';

let sim: Sim;
let service: Service;
const TOKEN = 'test-token-0123456789abcdef';
let scaledApp = '';

const api = (path: string) => fetch(`${service.url}/api/v1${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });

beforeAll(async () => {
  // The app to scale: the first owned app of this seed's world (read from a world built without the scenario).
  const probe = await startSim({ seed: 11, now: '2026-11-21T12:00:00Z', days: 110, apps: 4, requestsPerHour: 2 });
  const app = probe.world.apps.find((a) => a.ownedByCaller)!;
  scaledApp = `${app.owner}/${app.name}`;
  await probe.close();
  const scenario = parseScenario({
    name: 'quarter',
    events: [
      { kind: 'price', endpoint: 'svc-ai/flux-pro', from: '2026-10-01T00:00:00Z', unit_price: '0.06' },
      { kind: 'volume', target: 'svc-ai/fast-sdxl', from: '2026-10-01T00:00:00Z', factor: 3 },
      { kind: 'volume', target: scaledApp, from: '2026-10-01T00:00:00Z', factor: 2 },
    ],
  });
  sim = await startSim({ seed: 11, now: '2026-11-21T12:00:00Z', days: 110, apps: 4, requestsPerHour: 2, scenario });
  service = await startService(testConfig({ PORT: '0', API_TOKENS: TOKEN, TIMEZONES: 'UTC' }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension()],
  });
  for (const job of ['usage', 'models']) {
    const run = await runJob(service, sim, job, { from: '2026-09-01', to: '2026-11-01', timezone: 'UTC' });
    expect(run.status, run.error).toBe('ok');
  }
}, 300_000);

afterAll(async () => {
  await service?.close();
  await sim?.close();
});

/** 12-decimal scaled integers: nanos x 1000. */
const N = 1000n;
interface Sums { q: bigint; s: bigint; d: bigint }
type Side = Map<string, Map<string, Sums>>; // group -> item -> sums

function add(side: Side, group: string, item: string, q: number, sNanos: bigint, dNanos: bigint) {
  expect(Number.isInteger(q), `quantity ${q} is whole`).toBe(true);
  const items = side.get(group) ?? new Map<string, Sums>();
  side.set(group, items);
  const cur = items.get(item) ?? { q: 0n, s: 0n, d: 0n };
  items.set(item, { q: cur.q + BigInt(q), s: cur.s + sNanos * N, d: cur.d + dNanos * N });
}

/** The truth of a month, per group and priced item, by product. */
function truthOf(from: string, to: string): Side {
  const side: Side = new Map();
  for (const r of sim.truth.usage({ from, to, timezone: 'UTC', timeframe: 'day' })) {
    add(side, `serverless|${r.app}|USD`, `${r.app} ${r.machine_type}${r.is_surge ? ' surge' : ''}`, r.quantity, BigInt(r.cost_subtotal_nanos), BigInt(r.cost_discount_nanos));
  }
  for (const r of sim.truth.modelUsage({ from, to, timezone: 'UTC', timeframe: 'day' })) {
    expect(r.legacy, 'no legacy-shaped bucket in the compared months').toBe(false);
    add(side, `model_api|${r.endpoint_id}|${r.currency}`, `${r.endpoint_id} ${r.unit}`, r.quantity, r.cost_subtotal_nanos, r.cost_discount_nanos);
  }
  return side;
}

/** round(a / b) half away from zero. */
function divRound(a: bigint, b: bigint): bigint {
  const neg = a < 0n !== b < 0n;
  const x = a < 0n ? -a : a, y = b < 0n ? -b : b;
  const q = x / y + ((x % y) * 2n >= y ? 1n : 0n);
  return neg ? -q : q;
}

function expected(before: Side, after: Side) {
  const out = new Map<string, { difference: bigint; volume: bigint; price: bigint; discount: bigint; new: bigint; gone: bigint }>();
  for (const group of new Set([...before.keys(), ...after.keys()])) {
    const b = before.get(group), c = after.get(group);
    const e = { difference: 0n, volume: 0n, price: 0n, discount: 0n, new: 0n, gone: 0n };
    for (const item of new Set([...(b?.keys() ?? []), ...(c?.keys() ?? [])])) {
      const x = b?.get(item) ?? { q: 0n, s: 0n, d: 0n };
      const y = c?.get(item) ?? { q: 0n, s: 0n, d: 0n };
      const diff = y.s - y.d - (x.s - x.d);
      e.difference += diff;
      if (!b) { e.new += diff; continue; }
      if (!c) { e.gone += diff; continue; }
      // volume = (q1 - q0) x p0 with p0 = s0 / q0; an item new in its group is priced at p1 (all volume).
      const volume = x.q > 0n ? divRound((y.q - x.q) * x.s, x.q) : y.s;
      e.volume += volume;
      e.price += y.s - x.s - volume;
      e.discount += -(y.d - x.d);
    }
    out.set(group, e);
  }
  return out;
}

const scaled = (v: string) => decimalToScaled(v, 12);

interface Answer {
  groups: Array<{ product: string; group: Record<string, string>; currency: string; status: string; difference: string; volume: string; price: string; discount: string; new: string; gone: string }>;
  totals: Array<{ currency: string; difference: string; volume: string; price: string; discount: string; new: string; gone: string }>;
}

describe('GET /api/v1/cost/changes over a simulated quarter (issue 32, acceptance 1)', () => {
  it('equals the decomposition of the truth per group, and the parts sum to the difference', async () => {
    const res = await api('/cost/changes?from=2026-10-01&to=2026-11-01&baseline_from=2026-09-01&baseline_to=2026-10-01&group_by=app,endpoint');
    expect(res.status).toBe(200);
    const answer = (await res.json()) as Answer;
    const want = expected(truthOf('2026-09-01', '2026-10-01'), truthOf('2026-10-01', '2026-11-01'));
    nonZero([...want.values()], 'changes between September and October', (e) => e.difference);
    const got = new Map(
      answer.groups.map((g) => [
        `${g.product}|${g.product === 'serverless' ? g.group.app : g.group.endpoint}|${g.currency}`,
        { difference: scaled(g.difference), volume: scaled(g.volume), price: scaled(g.price), discount: scaled(g.discount), new: scaled(g.new), gone: scaled(g.gone) },
      ]),
    );
    expect([...got.keys()].sort()).toEqual([...want.keys()].sort());
    for (const [k, w] of want) expect(got.get(k), k).toEqual(w);
    for (const g of answer.groups) {
      expect(scaled(g.volume) + scaled(g.price) + scaled(g.discount) + scaled(g.new) + scaled(g.gone), 'parts of a group').toBe(scaled(g.difference));
    }
    for (const t of answer.totals) {
      expect(scaled(t.volume) + scaled(t.price) + scaled(t.discount) + scaled(t.new) + scaled(t.gone), `parts of ${t.currency}`).toBe(scaled(t.difference));
      const sum = answer.groups.filter((g) => g.currency === t.currency).reduce((a, g) => a + scaled(g.difference), 0n);
      expect(scaled(t.difference)).toBe(sum);
    }
  });

  it('puts the injected price change in the price effect of its endpoint: (p1 - p0) x q1 from the truth', async () => {
    const events = scenarioTruth(sim.world).events;
    expect(events.map((e) => e.kind)).toEqual(['price', 'volume', 'volume']);
    const res = await api('/cost/changes?from=2026-10-01&to=2026-11-01&baseline_from=2026-09-01&baseline_to=2026-10-01&product=model_api&group_by=endpoint');
    const answer = (await res.json()) as Answer;
    const flux = answer.groups.find((g) => g.group.endpoint === 'svc-ai/flux-pro')!;
    const q1 = sim.truth.modelUsage({ from: '2026-10-01', to: '2026-11-01', timezone: 'UTC', timeframe: 'day' })
      .filter((r) => r.endpoint_id === 'svc-ai/flux-pro').reduce((a, r) => a + r.quantity, 0);
    expect(q1).toBeGreaterThan(0);
    // p0 = 0.05 (the world's price of flux-pro), p1 = 0.06 (the scenario's): price = 0.01 x q1.
    expect(scaled(flux.price)).toBe(scaled('0.01') * BigInt(q1));
    const sdxl = answer.groups.find((g) => g.group.endpoint === 'svc-ai/fast-sdxl')!;
    expect(sdxl.price).toBe('0');
    expect(scaled(sdxl.volume)).toBeGreaterThan(0n);
  });

  it('answers the same figures as CSV, with a total row per currency', async () => {
    const json = (await (await api('/cost/changes?from=2026-10-01&to=2026-11-01&group_by=endpoint&product=model_api')).json()) as Answer;
    const res = await api('/cost/changes?from=2026-10-01&to=2026-11-01&group_by=endpoint&product=model_api&format=csv');
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    const rows = parseCsv(await res.text(), { columns: true }) as Array<Record<string, string>>;
    expect(rows.filter((r) => r.row_type === 'group').map((r) => [r.endpoint, r.difference, r.volume, r.price])).toEqual(
      json.groups.map((g) => [g.group.endpoint, g.difference, g.volume, g.price]),
    );
    expect(rows.filter((r) => r.row_type === 'total').map((r) => [r.currency, r.difference])).toEqual(json.totals.map((t) => [t.currency, t.difference]));
  });

  it('refuses a time group and a reversed range with a 400 naming the parameter', async () => {
    const a = await api('/cost/changes?from=2026-10-01&to=2026-11-01&group_by=day');
    expect(a.status).toBe(400);
    expect(((await a.json()) as { error: { parameter: string } }).error.parameter).toBe('group_by');
    const b = await api('/cost/changes?from=2026-10-01&to=2026-09-01');
    expect(b.status).toBe(400);
  });
});
