// The simulator's per-runner metrics, planted over-provisioning and the billing rule (issue 35.1). Expected values
// come from the runner timelines (an implementation apart from usage.ts and from the exposition) and from the
// platform notes' payload description.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import { parseExposition } from '../../src/promtext/index.js';

let sim: Sim;
beforeAll(async () => {
  sim = await startSim({ seed: 35, apps: 14, days: 5 });
});
afterAll(async () => {
  await sim.close();
});

const get = (path: string) => fetch(sim.url + path, { headers: { authorization: `Key ${sim.keys.api}` } });

describe('per-runner metrics', () => {
  it('a live runner answers the payload of the notes, equal to the truth; a terminated one answers 404', async () => {
    const live = sim.truth.liveRunners();
    expect(live.length).toBeGreaterThan(3);
    let gpuRunners = 0;
    for (const id of live) {
      const res = await get(`/metrics/runners/${id}`);
      expect(res.status).toBe(200);
      const text = await res.text();
      const truth = sim.truth.runnerMetrics(id)!;
      const samples = parseExposition(text, res.headers.get('content-type'));
      const value = (name: string, gpu?: number) =>
        samples.find((s) => s.name === name && (gpu === undefined || s.labels.gpu === String(gpu)))?.value;
      for (const s of samples) expect(s.labels).toMatchObject({ runner_id: id, application: truth.application, machine_type: truth.machineType });
      expect(value('svc_runner_cpu_seconds_total')).toBe(truth.cpuSecondsTotal);
      expect(value('svc_runner_memory_bytes')).toBe(truth.memoryBytes);
      for (const g of truth.gpus) {
        expect(value('svc_runner_gpu_utilization', g.gpu)).toBe(g.utilization);
        expect(value('svc_runner_vram_used_bytes', g.gpu)).toBe(g.vramUsedBytes);
        expect(value('svc_runner_vram_total_bytes', g.gpu)).toBe(g.vramTotalBytes);
        expect(g.vramUsedBytes).toBeLessThanOrEqual(g.vramTotalBytes);
      }
      if (truth.gpus.length > 0) gpuRunners++;
    }
    expect(gpuRunners).toBeGreaterThan(0);
    // A runner that has terminated: every runner of an app that ended before now.
    const app = sim.truth.apps().find((a) => a.owned_by_caller)!;
    const ended = sim.truth.runnerStates({ owner: app.owner, name: app.name }).find((r) => r.state === 'TERMINATED' || r.state === 'DEAD')!;
    expect((await get(`/metrics/runners/${ended.runner_id}`)).status).toBe(404);
    expect(sim.truth.runnerMetrics(ended.runner_id)).toBeNull();
  });

  it('plants over-provisioned GPU apps (model VRAM well under the machine) beside apps sized to their machine', () => {
    const fps = sim.truth.modelFootprints();
    const planted = fps.filter((f) => f.over_provisioned);
    const sized = fps.filter((f) => !f.over_provisioned && f.vram_need_bytes > 0);
    expect(planted.length).toBeGreaterThan(0);
    expect(sized.length).toBeGreaterThan(0);
    for (const f of planted) expect(f.vram_need_bytes).toBeLessThanOrEqual(16 * 2 ** 30);
  });
});

describe('billing rule', () => {
  it('usage machine-seconds per app and day equal the runners\u2019 running + idle + draining seconds, and the efficiency split adds up to the cost', () => {
    const rows = sim.truth.efficiency({ from: '2026-11-17', to: '2026-11-21' });
    expect(rows.length).toBeGreaterThan(10);
    const perAppDay = new Map<string, { quantity: number; exact: number }>();
    for (const r of rows) {
      expect(r.busy_picos + r.idle_picos + r.draining_picos).toBe(r.cost_total_picos);
      const k = `${r.app}|${r.day}`;
      const e = perAppDay.get(k) ?? { quantity: 0, exact: r.exact_seconds.running + r.exact_seconds.idle + r.exact_seconds.draining };
      e.quantity += r.quantity;
      perAppDay.set(k, e);
    }
    for (const [k, e] of perAppDay) expect(e.quantity, k).toBe(e.exact);
    // The split's weights are the served hourly avg (thousandths of a runner): each hour is off by at most half a
    // thousandth of 3600 s (1.8 s) per state from the exact runner-seconds.
    for (const r of rows) {
      for (const state of ['running', 'idle', 'draining'] as const) {
        expect(Math.abs(r.weights_milli[state] * 3.6 - r.exact_seconds[state]), `${r.app} ${r.day} ${state}`).toBeLessThanOrEqual(24 * 1.8 + 1e-6);
      }
    }
    expect(rows.filter((r) => r.idle_picos > 0n).length).toBeGreaterThan(0);
  });
});
