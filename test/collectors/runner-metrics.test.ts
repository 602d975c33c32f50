// The runner-metrics collector against the simulator (issue 35.2): every runner alive and ready at a scrape is
// stored with the simulator's values, none that is gone, and a 404 for a runner that ended since its id was seen
// is no error. Oracle: the simulator's truth (runnerStates, runnerMetrics).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import type { Runtime } from '../../src/runtime.js';
import { openTestRuntime, closeRuntime, queryRows } from '../support/store.js';
import { runJob } from '../support/jobs.js';

let rt: Runtime;
let sim: Sim;

beforeAll(async () => {
  rt = await openTestRuntime();
  sim = await startSim({ seed: 8, now: '2026-11-21T11:50:00Z', apps: 10, days: 3, faultRate: 0.2, slowMs: 200 });
  expect((await runJob(rt, sim, 'apps')).status).toBe('ok');
});
afterAll(async () => {
  await sim.close();
  await closeRuntime(rt);
});

/** Runners of the caller's apps that are ready (running, IDLE, draining) at the simulator's now: their ids are in runner_started events. */
function readyRunners(): string[] {
  const out: string[] = [];
  for (const app of sim.truth.apps().filter((a) => a.owned_by_caller)) {
    for (const r of sim.truth.runnerStates({ owner: app.owner, name: app.name })) if (['running', 'IDLE', 'draining'].includes(r.state)) out.push(r.runner_id);
  }
  return out.sort();
}

async function storedAt(ts: string) {
  return queryRows<{ runner_id: string; gpu: number; cpu_seconds_total: number | null; memory_bytes: number | null; gpu_utilization: number | null; vram_used_bytes: number | null; vram_total_bytes: number | null; machine_type: string; endpoint_id: string }>(
    rt,
    `SELECT runner_id, gpu, cpu_seconds_total, memory_bytes, gpu_utilization, vram_used_bytes, vram_total_bytes, machine_type, endpoint_id
     FROM runner_metrics FINAL WHERE ts = parseDateTime64BestEffort('${ts}', 3, 'UTC') ORDER BY runner_id, gpu`,
  );
}

async function expectScrapeEqualsTruth(at: string): Promise<number> {
  const rows = await storedAt(at);
  const ready = readyRunners();
  expect(ready.length).toBeGreaterThan(3);
  expect([...new Set(rows.map((r) => r.runner_id))].sort()).toEqual(ready);
  for (const id of ready) {
    const t = sim.truth.runnerMetrics(id)!;
    const mine = rows.filter((r) => r.runner_id === id);
    const expected = t.gpus.length === 0
      ? [{ gpu: -1, cpu: t.cpuSecondsTotal, mem: t.memoryBytes, util: null, used: null, total: null }]
      : t.gpus.map((g, i) => ({ gpu: g.gpu, cpu: i === 0 ? t.cpuSecondsTotal : null, mem: i === 0 ? t.memoryBytes : null, util: g.utilization, used: g.vramUsedBytes, total: g.vramTotalBytes }));
    expect(mine.map((r) => ({ gpu: r.gpu, cpu: r.cpu_seconds_total, mem: r.memory_bytes, util: r.gpu_utilization, used: r.vram_used_bytes, total: r.vram_total_bytes })), id).toEqual(expected);
    expect(mine[0]).toMatchObject({ machine_type: t.machineType, endpoint_id: t.application });
  }
  return ready.length;
}

describe('runner-metrics job', () => {
  it('scrapes at most --max-runners in one run', async () => {
    expect((await runJob(rt, sim, 'events', { from: '2026-11-20T00:00:00Z', to: '2026-11-21T11:50:00Z' })).status).toBe('ok');
    const run = await runJob(rt, sim, 'runner-metrics', { 'max-runners': '2' });
    expect(run.status, run.error).toBe('ok');
    const rows = await storedAt('2026-11-21T11:50:00Z');
    expect(new Set(rows.map((r) => r.runner_id)).size).toBe(2);
  });

  it('stores every ready runner\u2019s metrics at each scrape, equal to the truth, with 20% faults', async () => {
    expect((await runJob(rt, sim, 'events', { from: '2026-11-20T00:00:00Z', to: '2026-11-21T11:50:00Z' })).status).toBe('ok');
    const run = await runJob(rt, sim, 'runner-metrics');
    expect(run.status, run.error).toBe('ok');
    expect(await expectScrapeEqualsTruth('2026-11-21T11:50:00Z')).toBeGreaterThan(3);
  });

  it('a runner gone since its id was seen answers 404: no row, no error; the next scrape after the events run has none of them', async () => {
    const before = readyRunners();
    // Past the hour: runners scaled down at 12:00 end within keep-alive (at most 600 s) and draining.
    sim.clock.set('2026-11-21T12:20:00Z');
    const goneNow = before.filter((id) => sim.truth.runnerMetrics(id) === null);
    expect(goneNow.length).toBeGreaterThan(0);
    const run = await runJob(rt, sim, 'runner-metrics');
    expect(run.status, run.error).toBe('ok');
    const rows = await storedAt('2026-11-21T12:20:00Z');
    const stored = new Set(rows.map((r) => r.runner_id));
    for (const id of goneNow) expect(stored.has(id), id).toBe(false);
    for (const id of before.filter((x) => !goneNow.includes(x))) expect(stored.has(id), id).toBe(true);
    // With the new events stored, the scrape covers the runners started since too.
    sim.clock.set('2026-11-21T12:30:00Z');
    expect((await runJob(rt, sim, 'events')).status).toBe('ok');
    expect((await runJob(rt, sim, 'runner-metrics')).status).toBe('ok');
    await expectScrapeEqualsTruth('2026-11-21T12:30:00Z');
  });
});
