// README: days are local days of the collected timezone, "the 23-hour spring-forward day" included. On
// 2026-03-08 in America/New_York the clocks go from 02:00 to 03:00: that local day has 23 hourly buckets. Oracle:
// the simulator's truth in that zone, and the literal 23.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DateTime } from 'luxon';
import { startSim, type Sim } from '../../src/sim/index.js';
import type { Runtime } from '../../src/runtime.js';
import { openTestRuntime, closeRuntime, queryRows } from '../support/store.js';
import { runJob } from '../support/jobs.js';
import { decimalToScaled } from '../../src/values.js';

const ZONE = 'America/New_York';
let rt: Runtime;
let sim: Sim;
beforeAll(async () => {
  rt = await openTestRuntime({ TIMEZONES: ZONE });
  sim = await startSim({ seed: 29, now: '2026-03-20T12:00:00Z', days: 30, apps: 10 });
  const apps = await runJob(rt, sim, 'apps');
  expect(apps.status, apps.error).toBe('ok');
});
afterAll(async () => {
  await sim?.close();
  await closeRuntime(rt);
});

describe('the 23-hour spring-forward day (2026-03-08, America/New_York)', () => {
  it('runner history has 23 hourly buckets per app that day, each equal to the truth', async () => {
    const run = await runJob(rt, sim, 'runners', { from: '2026-03-08', to: '2026-03-09', timezone: ZONE });
    expect(run.status, run.error).toBe('ok');
    const stored = await queryRows<{ name: string; ts: string; offset: string; running: number | null }>(
      rt,
      `SELECT name, toString(timestamp) AS ts, timestamp_offset_minutes AS offset, running FROM runner_history FINAL
       WHERE timezone = {tz:String} AND timeframe = 'hour' AND aggregation = 'max' ORDER BY name, timestamp`,
      { tz: ZONE },
    );
    const owned = sim.truth.apps().filter((a) => a.owned_by_caller);
    expect(owned.length).toBeGreaterThan(3);
    for (const a of owned) {
      const mine = stored.filter((s) => s.name === a.name);
      expect(mine, a.name).toHaveLength(23);
      // Local midnight is 05:00 UTC (EST, -300), local 03:00 is 07:00 UTC (EDT, -240).
      expect(mine[0].ts).toBe('2026-03-08 05:00:00.000');
      expect(Number(mine[0].offset)).toBe(-300);
      expect(Number(mine[mine.length - 1].offset)).toBe(-240);
      const truth = sim.truth.runnerHistory({ owner: a.owner, name: a.name, from: '2026-03-08', to: '2026-03-09', timezone: ZONE, aggregation: 'max' });
      expect(truth).toHaveLength(23);
      expect(mine.map((m) => m.running)).toEqual(truth.map((t) => t.running));
    }
  });

  it('the day\'s usage cost per app equals the truth for that 23-hour local day', async () => {
    const run = await runJob(rt, sim, 'usage', { from: '2026-03-01', to: '2026-03-15', timezone: ZONE });
    expect(run.status, run.error).toBe('ok');
    const stored = await queryRows<{ app: string; cost: string }>(
      rt,
      `SELECT app, toString(sum(cost_total)) AS cost FROM usage_buckets FINAL
       WHERE timezone = {tz:String} AND timeframe = 'day' AND bucket_date = '2026-03-08' GROUP BY app ORDER BY app`,
      { tz: ZONE },
    );
    const truth = new Map<string, bigint>();
    for (const r of sim.truth.usage({ from: '2026-03-08', to: '2026-03-09', timezone: ZONE, timeframe: 'day' })) {
      expect(DateTime.fromISO(r.bucket!, { setZone: true }).toISODate()).toBe('2026-03-08');
      truth.set(r.app, (truth.get(r.app) ?? 0n) + BigInt(r.cost_total_nanos));
    }
    const nonZero = [...truth].filter(([, v]) => v > 0n).sort(([a], [b]) => (a < b ? -1 : 1));
    expect(nonZero.length).toBeGreaterThan(3);
    expect(stored.map((s) => [s.app, decimalToScaled(s.cost, 9)]).filter(([, v]) => (v as bigint) > 0n)).toEqual(nonZero);
  });
});
