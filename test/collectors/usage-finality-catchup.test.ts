// Issue 44.4: after an upgrade, earlier months become final by a bounded background re-collection. A store filled
// before the version that records collections (sql/026) holds September and October usage with no collection
// record: those months stayed provisional for ever, as nothing re-collected them. Each scheduled usage run now
// re-collects one such month per zone, oldest first; two passes that read the same rows make its days final.
// Seen failing before: after four scheduled runs September and October were still provisional in both zones.
// Clock: the simulator's, set here (2026-11-21 12:00 UTC); zones UTC and America/New_York.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import type { Runtime } from '../../src/runtime.js';
import { loadFinality } from '../../src/api/finality-report.js';
import { Checkpoints } from '../../src/store/tables/checkpoints.js';
import { CATCHUP_MAX_PASSES } from '../../jobs/usage.js';
import { openTestRuntime, closeRuntime } from '../support/store.js';
import { runJob } from '../support/jobs.js';

const ZONES = ['UTC', 'America/New_York'];
const NOW = '2026-11-21T12:00:00Z';
let rt: Runtime;
let sim: Sim;

beforeAll(async () => {
  rt = await openTestRuntime({ TIMEZONES: ZONES.join(','), LATE_BILLING_WINDOW_HOURS: '48' });
  sim = await startSim({ seed: 44, now: NOW, days: 90, apps: 3 });
  for (const timezone of ZONES) {
    expect((await runJob(rt, sim, 'usage', { from: '2026-09-01', to: '2026-11-01', timezone })).status).toBe('ok');
  }
  // As a store from before sql/026 has it: the rows, no record of their collection.
  await rt.store.client.command({ query: 'TRUNCATE TABLE cost_day_collections' });
}, 120_000);
afterAll(async () => {
  await sim?.close();
  await closeRuntime(rt);
});

/** A scheduled run half an hour after the last (the usage job's schedule), at the simulator's clock. */
async function scheduledRun(): Promise<void> {
  sim.clock.set(new Date(sim.clock.now().getTime() + 30 * 60_000));
  expect((await runJob(rt, sim, 'usage')).status).toBe('ok');
}

const finality = (timezone: string, month: string, next: string) =>
  loadFinality(rt.store, { product: 'serverless', timezone, from: month, to: next, windowHours: 48, now: sim.clock.now() });

describe('the finality catch-up of the usage job', () => {
  it('makes earlier months final, one month per zone and run, oldest first, then stops', async () => {
    const months = [
      ['2026-09-01', '2026-10-01'],
      ['2026-10-01', '2026-11-01'],
    ] as const;
    for (const timezone of ZONES) for (const [from, to] of months) expect((await finality(timezone, from, to)).final).toBe(false);

    // Runs 1 and 2: September twice (one pass alone proves nothing: the second must read what the first read).
    await scheduledRun();
    for (const timezone of ZONES) expect((await finality(timezone, ...months[0])).final).toBe(false);
    await scheduledRun();
    for (const timezone of ZONES) {
      expect((await finality(timezone, ...months[0])).final).toBe(true);
      expect((await finality(timezone, ...months[1])).final).toBe(false);
    }
    // Runs 3 and 4: October.
    await scheduledRun();
    await scheduledRun();
    for (const timezone of ZONES) for (const [from, to] of months) expect((await finality(timezone, from, to)).final).toBe(true);

    // Nothing left: a fifth run re-collects no earlier month (the passes stay two per month).
    await scheduledRun();
    const checkpoints = new Checkpoints(rt.store, rt.writer);
    for (const timezone of ZONES) {
      expect(JSON.parse((await checkpoints.get('usage', `finality-catchup:${timezone}`)) ?? '{}')).toEqual({ '2026-09-01': 2, '2026-10-01': 2 });
    }
    expect(CATCHUP_MAX_PASSES).toBeGreaterThan(2);
  }, 240_000);
});
