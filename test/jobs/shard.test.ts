// Issue 19, acceptance 3: two instances sharing one store, with COLLECTOR_SHARD 0/2 and 1/2, make each collection
// call once per schedule tick (counted by the simulator), and between them cover every app. As a control, the same
// two instances without COLLECTOR_SHARD are seen calling twice: the count can tell.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import type { Runtime } from '../../src/runtime.js';
import { Scheduler } from '../../src/jobs/scheduler.js';
import { allJobs } from '../../jobs/index.js';
import { inShard } from '../../src/collectors/endpoints.js';
import { openTestRuntime, closeRuntime } from '../support/store.js';
import { simClient } from '../support/jobs.js';

let rt: Runtime;
let sim: Sim;
beforeAll(async () => {
  rt = await openTestRuntime();
  sim = await startSim({ seed: 41, now: '2026-11-21T12:00:00Z', apps: 24, days: 3 });
});
afterAll(async () => {
  await sim?.close();
  await closeRuntime(rt);
});

type Shard = { index: number; count: number } | undefined;

/** An instance's scheduler: this test's store and simulator, COLLECTOR_SHARD `shard`. */
const scheduler = (shard: Shard) =>
  new Scheduler({ runtime: { ...rt, config: { ...rt.config, COLLECTOR_SHARD: shard } }, platform: simClient(sim), jobs: allJobs, now: () => sim.clock.now() });

/** The calls the platform saw while `work` ran, each as method, path and sorted query. */
async function callsDuring(work: () => Promise<unknown>): Promise<string[]> {
  const before = sim.requestLog().length;
  await work();
  return sim.requestLog().slice(before).map((c) => `${c.method} ${c.path}?${JSON.stringify(Object.entries(c.query).sort())}`);
}

/** One schedule tick of two instances (each runs the jobs it schedules); returns the calls the platform saw. */
function tick(shards: Shard[]): Promise<string[]> {
  const schedulers = shards.map(scheduler);
  return callsDuring(async () => {
    // Shard 0's jobs that no other shard runs (apps first: it stores the apps everybody reads) go first.
    for (const job of allJobs) {
      for (const s of schedulers) {
        if (!s.scheduledJobs().includes(job)) continue;
        const run = await s.run(job.name, 'schedule');
        expect(run.status, `${job.name}: ${run.error}`).toBe('ok');
      }
    }
  });
}

const counts = (calls: string[]) => {
  const seen = new Map<string, number>();
  for (const c of calls) seen.set(c, (seen.get(c) ?? 0) + 1);
  return seen;
};

/** Calls made more often than one instance makes them in a tick at the same instant (once, if it made them not). */
const excess = (calls: string[], single: Map<string, number>) =>
  [...counts(calls)].filter(([c, n]) => n > Math.max(1, single.get(c) ?? 0)).map(([c]) => c);

describe('COLLECTOR_SHARD', () => {
  it('divides the apps: every app in exactly one shard, routes with their app', () => {
    const owned = sim.truth.apps().filter((a) => a.owned_by_caller);
    const counts = [0, 0, 0];
    for (const a of owned) {
      const mine = [0, 1, 2].filter((i) => inShard({ index: i, count: 3 }, a.endpoint_id));
      expect(mine).toHaveLength(1);
      counts[mine[0]]++;
      for (const e of a.endpoints) expect(inShard({ index: mine[0], count: 3 }, e)).toBe(true);
    }
    expect(counts.every((n) => n > 0)).toBe(true);
  });

  it('two sharded instances make each call once per tick and cover every app; unsharded ones call twice', async () => {
    // One instance alone, at the same instant: what a tick calls (the apps catalogue of /v1/models is read by two
    // jobs, models and analytics, so one instance makes that call twice).
    const single = counts(await tick([undefined]));
    const sharded = await tick([{ index: 0, count: 2 }, { index: 1, count: 2 }]);
    expect(sharded.length).toBeGreaterThan(50);
    expect(excess(sharded, single)).toEqual([]);
    // Between them, every owned app's queue, events, revisions and runner history were read.
    const owned = sim.truth.apps().filter((a) => a.owned_by_caller).map((a) => a.endpoint_id).sort();
    for (const resource of ['queue', 'events', 'revisions', 'runners/history']) {
      const apps = new Set(sharded.filter((c) => c.includes(`/${resource}?`)).map((c) => /\/v1\/serverless\/apps\/([^/]+\/[^/]+)\//.exec(c)![1]));
      expect([...apps].sort(), resource).toEqual(owned);
    }
    // The requests job is not sharded (it runs on shard 0 alone), so it covers every app, not shard 0's share.
    const requestApps = new Set(
      sim.requestLog().slice(-sharded.length)
        .filter((c) => c.path === '/v1/serverless/requests/by-endpoint')
        .flatMap((c) => [c.query.endpoint_id ?? []].flat())
        .map((id) => id.split('/').slice(0, 2).join('/')),
    );
    expect([...requestApps].sort(), 'requests').toEqual(owned);

    const unsharded = await tick([undefined, undefined]);
    expect(excess(unsharded, single).length).toBeGreaterThan(20);
  });

  it("the start-up pass runs what the schedule runs: on shard 1 the sharded jobs only, together each call once", async () => {
    const single = counts(await callsDuring(() => scheduler(undefined).startupPass()));
    const [zero, one] = [scheduler({ index: 0, count: 2 }), scheduler({ index: 1, count: 2 })];
    let shardOneRuns: string[] = [];
    const both = await callsDuring(async () => {
      await zero.startupPass();
      shardOneRuns = (await one.startupPass()).map((r) => `${r.job}:${r.status}`);
    });
    const sharded = allJobs.filter((j) => j.sharded).map((j) => `${j.name}:ok`);
    expect(sharded.length).toBeGreaterThan(3);
    expect(shardOneRuns).toEqual(sharded);
    expect(both.length).toBeGreaterThan(50);
    expect(excess(both, single)).toEqual([]);
  });
});
