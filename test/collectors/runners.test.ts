import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DateTime } from 'luxon';
import { startSim, type Sim } from '../../src/sim/index.js';
import type { Runtime } from '../../src/runtime.js';
import { runnerHistoryByBucket, runnerPeaks } from '../../src/store/tables/runner-history.js';
import { openTestRuntime, closeRuntime, queryRows } from '../support/store.js';
import { runJob } from '../support/jobs.js';

const NOW = '2026-11-21T12:00:00Z';
let rt: Runtime;
let sim: Sim;

beforeAll(async () => {
  rt = await openTestRuntime();
  sim = await startSim({ seed: 3, now: NOW, apps: 12, days: 5, slowMs: 200 });
  const apps = await runJob(rt, sim, 'apps');
  expect(apps.status, apps.error).toBe('ok');
});
afterAll(async () => {
  await sim.close();
  await closeRuntime(rt);
});

const owned = () => sim.truth.apps().filter((a) => a.owned_by_caller);
const utc = (iso: string) => DateTime.fromISO(iso, { setZone: true }).toUTC().toFormat('yyyy-MM-dd HH:mm:ss.SSS');

/** Stored runner history equals the truth for every owned app, bucket and state class. */
async function expectEqualToTruth(timezone: string, from: string, to: string, aggregation: 'max' | 'avg') {
  let compared = 0;
  let busy = 0;
  const stored = await runnerHistoryByBucket(rt.store, { timezone, timeframe: 'hour', aggregation, from, to, endpoint_ids: [] });
  for (const app of owned()) {
    const truth = sim.truth.runnerHistory({ owner: app.owner, name: app.name, from, to, timeframe: 'hour', aggregation, timezone });
    const mine = stored.filter((r) => r.endpoint_id === app.endpoint_id);
    expect(mine.map((r) => r.timestamp_utc)).toEqual(truth.map((t) => utc(t.timestamp)));
    mine.forEach((r, i) => {
      const t = truth[i];
      expect({ running: r.running, idle: r.idle, pending: r.pending, draining: r.draining }, `${app.endpoint_id} ${t.timestamp}`).toEqual({
        running: t.running,
        idle: t.idle,
        pending: t.pending,
        draining: t.draining,
      });
      expect(r.timestamp_offset_minutes).toBe(DateTime.fromISO(t.timestamp, { setZone: true }).offset);
      if (t.running + t.idle + t.pending + t.draining > 0) busy++;
      compared++;
    });
  }
  expect(busy).toBeGreaterThan(0);
  return compared;
}

describe('runners collector against the simulator', () => {
  it('a scheduled run stores the last 24 hours of runner counts by state (max and avg) exactly as the truth', async () => {
    const result = await runJob(rt, sim, 'runners');
    expect(result.status, result.error).toBe('ok');
    const from = DateTime.fromISO(NOW).minus({ hours: 24 }).toUTC().toISO()!;
    expect(await expectEqualToTruth('UTC', from, NOW, 'max')).toBe(24 * owned().length);
    expect(await expectEqualToTruth('UTC', from, NOW, 'avg')).toBe(24 * owned().length);
  });

  it('the next scheduled run, an hour later, continues from its checkpoint and re-collects the partial bucket', async () => {
    sim.clock.advance(75 * 60_000); // 13:15: the 12:00 bucket is complete, 13:00 is partial
    try {
      const result = await runJob(rt, sim, 'runners');
      expect(result.status, result.error).toBe('ok');
      const now = sim.clock.now().toISOString();
      const from = DateTime.fromISO(NOW).minus({ hours: 24 }).toUTC().toISO()!;
      expect(await expectEqualToTruth('UTC', from, now, 'max')).toBe(26 * owned().length);
      const [dups] = await queryRows<{ n: string }>(
        rt,
        `SELECT count() AS n FROM (SELECT endpoint_id, timezone, timeframe, aggregation, timestamp, count() AS c FROM runner_history FINAL GROUP BY ALL HAVING c > 1)`,
      );
      expect(Number(dups.n)).toBe(0);
    } finally {
      sim.clock.set(NOW);
    }
  });

  it('a backfill in Asia/Kolkata with 20% faults equals the truth, and a re-run changes nothing', async () => {
    const args = { from: '2026-11-17', to: '2026-11-20', timezone: 'Asia/Kolkata' };
    const from = DateTime.fromISO(args.from, { zone: args.timezone }).toISO()!;
    const to = DateTime.fromISO(args.to, { zone: args.timezone }).toISO()!;
    sim.setFaults(0.2);
    try {
      for (let i = 0; i < 2; i++) {
        const result = await runJob(rt, sim, 'runners', args);
        expect(result.status, result.error).toBe('ok');
        expect(await expectEqualToTruth(args.timezone, from, to, 'max')).toBe(72 * owned().length);
        expect(await expectEqualToTruth(args.timezone, from, to, 'avg')).toBe(72 * owned().length);
      }
    } finally {
      sim.setFaults(0);
    }
    const peaks = await runnerPeaks(rt.store, { timezone: args.timezone, timeframe: 'hour', from, to, endpoint_ids: [] });
    expect(peaks).toHaveLength(owned().length);
    for (const p of peaks) {
      const app = owned().find((a) => a.endpoint_id === p.endpoint_id)!;
      const truth = sim.truth.runnerHistory({ owner: app.owner, name: app.name, from, to, timeframe: 'hour', aggregation: 'max', timezone: args.timezone });
      expect(p.running).toBe(Math.max(...truth.map((t) => t.running)));
    }
  });

  it('a backfill reaching past the 90 days the platform keeps starts at the oldest bucket it serves', async () => {
    const result = await runJob(rt, sim, 'runners', { from: '2026-07-01', to: '2026-08-25', aggregations: 'max' });
    expect(result.status, result.error).toBe('ok');
    const [row] = await queryRows<{ first: string }>(
      rt,
      `SELECT toString(min(timestamp)) AS first FROM runner_history FINAL WHERE timezone = 'UTC' AND timestamp < '2026-09-01'`,
    );
    // 89 days before now (12:00), on the hour.
    expect(row.first).toBe('2026-08-24 12:00:00.000');
  });
});
