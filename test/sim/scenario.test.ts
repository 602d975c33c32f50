// Simulator scenarios (issue 32.5): injected events change what the platform serves and what the truth says,
// and the truth endpoint lists them. Expected values are the scenario's own literals (a price, a zero before a
// start, the runaway key's share), never the simulator's output compared with itself.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { startSim, type Sim } from '../../src/sim/index.js';
import { parseScenario, ScenarioError } from '../../src/sim/scenario.js';

let sim: Sim;
let plain: Sim;
const world = { seed: 3, now: '2026-11-21T12:00:00Z', days: 30, apps: 3, requestsPerHour: 4 };

beforeAll(async () => {
  const scenario = parseScenario({
    name: 'test',
    events: [
      { kind: 'price', endpoint: 'svc-ai/flux-pro', from: '2026-11-10T00:00:00Z', unit_price: '0.075' },
      { kind: 'new_endpoint', endpoint: 'svc-ai/kling-video', from: '2026-11-15T00:00:00Z' },
      { kind: 'runaway_key', api_key_id: 'key_04bd5a66', endpoint: 'svc-ai/fast-sdxl', from: '2026-11-18T00:00:00Z', factor: 10 },
      { kind: 'holiday', from: '2026-11-12T00:00:00Z', to: '2026-11-13T00:00:00Z', factor: 0 },
    ],
  });
  sim = await startSim({ ...world, scenario });
  plain = await startSim(world);
}, 60_000);

afterAll(async () => {
  await sim?.close();
  await plain?.close();
});

const usage = (s: Sim, from: string, to: string) => s.truth.modelUsage({ from, to, timezone: 'UTC', timeframe: 'day' });

describe('sim --scenario', () => {
  it('prices a model endpoint at the scenario price from its time on, and the pricing endpoint says so', async () => {
    const before = usage(sim, '2026-11-01', '2026-11-10').filter((r) => r.endpoint_id === 'svc-ai/flux-pro');
    const after = usage(sim, '2026-11-10', '2026-11-21').filter((r) => r.endpoint_id === 'svc-ai/flux-pro');
    expect(before.length).toBeGreaterThan(0);
    expect(after.length).toBeGreaterThan(0);
    expect(new Set(before.map((r) => r.unit_price_nanos))).toEqual(new Set([50_000_000]));
    expect(new Set(after.map((r) => r.unit_price_nanos))).toEqual(new Set([75_000_000]));
    const res = await fetch(`${sim.url}/v1/models/pricing?endpoint_id=svc-ai/flux-pro`, { headers: { authorization: `Key ${sim.keys.api}` } });
    expect(((await res.json()) as { prices: Array<{ unit_price: number }> }).prices[0].unit_price).toBe(0.075);
  });

  it('has no calls to a new endpoint before its start, none on a holiday of factor 0, and the runaway key takes the added calls', () => {
    expect(usage(sim, '2026-11-01', '2026-11-15').filter((r) => r.endpoint_id === 'svc-ai/kling-video')).toEqual([]);
    expect(usage(sim, '2026-11-15', '2026-11-21').filter((r) => r.endpoint_id === 'svc-ai/kling-video').length).toBeGreaterThan(0);
    expect(usage(plain, '2026-11-01', '2026-11-15').filter((r) => r.endpoint_id === 'svc-ai/kling-video').length).toBeGreaterThan(0);
    expect(usage(sim, '2026-11-12', '2026-11-13')).toEqual([]);
    expect(usage(plain, '2026-11-12', '2026-11-13').length).toBeGreaterThan(0);
    const calls = sim.truth.modelCalls({ from: '2026-11-18', to: '2026-11-21' }).filter((c) => c.endpoint_id === 'svc-ai/fast-sdxl');
    const dev = calls.filter((c) => c.api_key_id === 'key_04bd5a66').length;
    // Dev Key: 90% of the calls are the runaway's (1 - 1/10), plus its usual 15% share of the rest: 91.5% expected.
    expect(calls.length).toBeGreaterThan(100);
    expect(dev / calls.length).toBeGreaterThan(0.85);
    const before = sim.truth.modelCalls({ from: '2026-11-14', to: '2026-11-17' }).filter((c) => c.endpoint_id === 'svc-ai/fast-sdxl');
    expect(before.filter((c) => c.api_key_id === 'key_04bd5a66').length / before.length).toBeLessThan(0.3);
  });

  it('lists the injected events at GET /_sim/truth?kind=scenario', async () => {
    const res = await fetch(`${sim.url}/_sim/truth?kind=scenario`, { headers: { authorization: `Key ${sim.keys.admin}` } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { name: string; events: Array<{ kind: string; from: string }> };
    expect(body.name).toBe('test');
    expect(body.events.map((e) => [e.kind, e.from])).toEqual([
      ['price', '2026-11-10T00:00:00Z'],
      ['new_endpoint', '2026-11-15T00:00:00Z'],
      ['runaway_key', '2026-11-18T00:00:00Z'],
      ['holiday', '2026-11-12T00:00:00Z'],
    ]);
  });

  it('refuses a bad scenario naming the event and field, and the shipped demo scenario parses', () => {
    expect(() => parseScenario({ events: [{ kind: 'price', endpoint: 'svc-ai/flux-pro', from: '2026-11-10', unit_price: 0.07 }] })).toThrow(ScenarioError);
    expect(() => parseScenario({ events: [{ kind: 'price', endpoint: 'svc-ai/flux-pro', from: '2026-11-10', unit_price: 0.07 }] })).toThrow(/events\[0\]\.unit_price/);
    expect(() => parseScenario({ events: [{ kind: 'explode', from: '2026-11-10' }] })).toThrow(/events\[0\]\.kind/);
    const demo = parseScenario(JSON.parse(readFileSync(new URL('../../src/sim/scenarios/demo.json', import.meta.url), 'utf8')));
    expect(demo.events.length).toBeGreaterThanOrEqual(5);
  });
});
