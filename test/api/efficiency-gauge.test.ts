// tallyhouse_idle_cost_ratio: each app's idle cost / cost of the last 7 local days, equal to what the simulator's
// truth gives for the same days (its own split of the same rule), for a simulator whose "now" is the wall clock.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DateTime } from 'luxon';
import { Registry } from 'prom-client';
import type { Runtime } from '../../src/runtime.js';
import { startSim, type Sim } from '../../src/sim/index.js';
import { registerBusinessMetrics } from '../../src/http/business-metrics.js';
import { idleCostShare } from '../../src/api/efficiency-gauges.js';
import { openTestRuntime, closeRuntime } from '../support/store.js';
import { runJob } from '../support/jobs.js';

let rt: Runtime;
let sim: Sim;
// The service clock and the simulator's: a fixed instant (the gauge's last 7 days end on its day).
const NOW = new Date('2026-11-26T12:00:00Z');
const today = DateTime.fromJSDate(NOW, { zone: 'utc' }).startOf('day');
const from = today.minus({ days: 6 }).toISODate()!;
const to = today.plus({ days: 1 }).toISODate()!;

beforeAll(async () => {
  rt = { ...(await openTestRuntime()), now: () => NOW };
  sim = await startSim({ seed: 4, now: NOW, days: 3, apps: 5 });
  for (const job of ['apps', 'usage', 'runners']) expect((await runJob(rt, sim, job, { from, to, timezone: 'UTC' })).status).toBe('ok');
});
afterAll(async () => {
  await sim.close();
  await closeRuntime(rt);
});

describe('tallyhouse_idle_cost_ratio', () => {
  it('is the idle share of each app\u2019s cost over the last 7 days', async () => {
    const registry = new Registry();
    registerBusinessMetrics({ ...rt, registry }, [idleCostShare]);
    const lines = (await registry.metrics()).split('\n').filter((l) => l.startsWith('tallyhouse_idle_cost_ratio{'));
    const perApp = new Map<string, { idle: bigint; cost: bigint }>();
    for (const t of sim.truth.efficiency({ from, to })) {
      const e = perApp.get(t.app) ?? { idle: 0n, cost: 0n };
      // Over attributed cost only: an app-day without billed runners in its history has no split (issue 45.2).
      const w = t.weights_milli;
      if (w.running + w.idle + w.draining === 0) continue;
      e.idle += t.idle_picos;
      e.cost += t.cost_total_picos;
      perApp.set(t.app, e);
    }
    const expected = [...perApp].filter(([, e]) => e.cost > 0n).map(([app, e]) => `tallyhouse_idle_cost_ratio{app="${app}",currency="USD",timezone="UTC"} ${Number((e.idle * 1_000_000n) / e.cost) / 1e6}`);
    expect(expected.length).toBeGreaterThan(1);
    expect(lines.sort()).toEqual(expected.sort());
  });
});
