// The simulator's value is that it knows the truth: usage, requests, analytics, runner history, events and
// metrics are derived from the same runners and requests, so they agree. These tests check that agreement
// against independent recomputations (from events, request lists and the metrics text).
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import { call, pageAll, qs } from './helpers.js';

// The package ships no types; load it untyped rather than declare the module globally.
type Family = { name: string; type: string; metrics: Array<{ labels: Record<string, string>; value: string }> };
const parsePrometheusTextFormat = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => Family[];

describe('the model agrees with itself', () => {
  let sim: Sim;
  beforeAll(async () => {
    sim = await startSim({ seed: 21, apps: 15 });
  });
  afterAll(async () => {
    await sim.close();
  });

  /** Runner lives as the events tell them: billed from runner_started (running, IDLE, draining; pending states are not billed) to the final event. */
  function runnerLives(owner: string, name: string) {
    const lives = new Map<string, { machine: string; pending?: number; billedFrom?: number; ready?: number; end?: number }>();
    for (const e of [...sim.truth.events(owner, name)].reverse()) {
      const id = e.payload.runner_id as string | undefined;
      if (!id) continue;
      let l = lives.get(id);
      if (!l) lives.set(id, (l = { machine: e.payload.machine_type as string }));
      const t = Date.parse(e.created_at);
      if (e.category === 'runner_pending') l.pending = t;
      if (e.category === 'runner_started') l.ready = l.billedFrom = t;
      if (e.category === 'runner_finished' || e.category === 'runner_failed') l.end = t;
    }
    return lives;
  }

  it('usage quantity per app and day is the billed runner time recomputed from the events', () => {
    const from = '2026-11-18';
    const to = '2026-11-21';
    const usage = sim.truth.usage({ from, to, timeframe: 'day' });
    let checked = 0;
    for (const app of sim.truth.apps().filter((a) => a.owned_by_caller)) {
      const lives = runnerLives(app.owner, app.name);
      for (let d = Date.parse(`${from}T00:00:00Z`); d < Date.parse(`${to}T00:00:00Z`); d += 86_400_000) {
        const bucket = new Date(d).toISOString().replace('.000Z', '+00:00');
        for (const machine of app.machine_types) {
          let seconds = 0;
          for (const l of lives.values()) {
            if (l.machine !== machine || l.billedFrom === undefined) continue;
            const end = l.end ?? Date.parse(sim.clock.now().toISOString());
            seconds += Math.max(0, Math.min(end, d + 86_400_000) - Math.max(l.billedFrom, d)) / 1000;
          }
          const served = usage.filter((u) => u.app === app.name && u.bucket === bucket && u.machine_type === machine).reduce((a, u) => a + u.quantity, 0);
          expect(served, `${app.name} ${machine} ${bucket}`).toBe(seconds);
          if (seconds > 0) checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(15);
  });

  it('every request ran on a runner that was ready and had not yet terminated', () => {
    const app = sim.truth.apps().find((a) => a.owned_by_caller && a.endpoints.length > 1)!;
    const lives = runnerLives(app.owner, app.name);
    const reqs = sim.truth.requestList({ endpointId: app.endpoint_id, from: '2026-11-19', to: '2026-11-21T12:00:00Z' });
    expect(reqs.length).toBeGreaterThan(100);
    let onRunner = 0;
    for (const r of reqs) {
      if (!r.runner_id) {
        expect(['runner_scheduling_failure', 'startup_timeout']).toContain(r.error_type);
        continue;
      }
      const l = lives.get(r.runner_id)!;
      expect(l, r.runner_id).toBeDefined();
      expect(Date.parse(r.sent_at)).toBeGreaterThanOrEqual(l.ready!);
      expect(Date.parse(r.ended_at)).toBeLessThan(l.end ?? Number.POSITIVE_INFINITY);
      if (r.cold_boot_duration !== null) {
        // A cold boot arrived while its runner was booting.
        expect(Date.parse(r.started_at)).toBeLessThan(l.ready!);
        expect(r.cold_boot_duration).toBe((Date.parse(r.sent_at) - Date.parse(r.started_at)) / 1000);
      }
      onRunner++;
    }
    expect(onRunner).toBeGreaterThan(reqs.length * 0.9);
    expect(reqs.some((r) => r.cold_boot_duration !== null)).toBe(true);
  });

  it('billable_units is null until billed_at, and every request is billed 30 minutes later', async () => {
    const ep = sim.world.apps.find((a) => a.ownedByCaller && a.dormancy === 0)!.endpointId;
    const start = '2026-11-21T11:00:00Z';
    const end = sim.clock.now().toISOString();
    const served = async () => (await pageAll(sim.url, `/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: ep, start, end, expand: 'billing', limit: 100 })}`, { key: sim.keys.api })).flatMap((p) => p.items);
    const before = await served();
    const nulls = before.filter((i) => i.billable_units === null).length;
    const truth = sim.truth.requests({ from: start, to: end, endpointIds: [ep] });
    expect(nulls).toBeGreaterThan(0);
    expect(nulls).toBe(truth.reduce((a, t) => a + t.unbilled_count, 0));
    expect(before.length).toBe(truth.reduce((a, t) => a + t.request_count, 0));
    const billedSum = before.reduce((a, i) => a + Math.round((i.billable_units ?? 0) * 1000), 0);
    expect(billedSum).toBe(truth.reduce((a, t) => a + t.billable_units_billed_milli, 0));
    sim.clock.advance(31 * 60_000);
    try {
      const after = await served();
      expect(after.map((i) => i.request_id)).toEqual(before.map((i) => i.request_id));
      expect(after.filter((i) => i.billable_units === null)).toHaveLength(0);
      const truthAfter = sim.truth.requests({ from: start, to: end, endpointIds: [ep] });
      expect(truthAfter.reduce((a, t) => a + t.unbilled_count, 0)).toBe(0);
      expect(after.reduce((a, i) => a + Math.round(i.billable_units * 1000), 0)).toBe(truthAfter.reduce((a, t) => a + t.billable_units_all_milli, 0));
    } finally {
      sim.clock.set('2026-11-21T12:00:00Z');
    }
  });

  it('analytics percentiles are nearest-rank values of the requests\' real durations', () => {
    const ep = sim.world.apps.find((a) => a.ownedByCaller && a.dormancy === 0)!.endpoints[0].id;
    const rows = sim.truth.analytics({ endpointIds: [ep], from: '2026-11-20T00:00:00Z', to: '2026-11-20T06:00:00Z', timeframe: 'hour' });
    const reqs = sim.truth.requestList({ endpointId: ep, from: '2026-11-20T00:00:00Z', to: '2026-11-20T06:00:00Z' });
    expect(rows).toHaveLength(6);
    for (const row of rows) {
      const t0 = Date.parse(row.bucket);
      const inBucket = reqs.filter((r) => Date.parse(r.ended_at) >= t0 && Date.parse(r.ended_at) < t0 + 3_600_000);
      const d = inBucket.map((r) => r.duration).sort((a, b) => a - b);
      expect(row.request_count).toBe(inBucket.length);
      expect(row.success_count).toBe(inBucket.filter((r) => r.status_code < 300).length);
      expect(row.user_error_count).toBe(inBucket.filter((r) => r.status_code >= 400 && r.status_code < 500).length);
      expect(row.error_count).toBe(inBucket.filter((r) => r.status_code >= 500).length);
      for (const p of [25, 50, 75, 90, 95, 99]) expect(row[`p${p}_duration`]).toBe(d.length ? d[Math.ceil((p * d.length) / 100) - 1] : null);
      expect(row.total_billable_duration).toBeCloseTo(d.reduce((a, x) => a + x, 0), 6);
      expect(row.timeout_error_count).toBe(inBucket.filter((r) => r.error_type === 'request_timeout').length);
    }
  });

  it('runner history and the metrics exposition agree with the runner states at now', async () => {
    let running = 0;
    let idle = 0;
    for (const app of sim.truth.apps().filter((a) => a.owned_by_caller)) {
      const states = sim.truth.runnerStates({ owner: app.owner, name: app.name });
      expect(states.some((s) => s.state === 'TERMINATED' || s.state === 'DEAD')).toBe(true);
      running += states.filter((s) => s.state === 'running').length;
      idle += states.filter((s) => s.state === 'IDLE').length;
    }
    const r = await call(sim.url, '/metrics', { key: sim.keys.api });
    expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const families = parsePrometheusTextFormat(r.text);
    const runners = families.find((f) => f.name === 'svc_app_runners')!;
    const sum = (state: string) => runners.metrics.filter((m) => m.labels.state === state).reduce((a, m) => a + Number(m.value), 0);
    expect(sum('running')).toBe(running);
    expect(sum('idle')).toBe(idle);
    expect(running + idle).toBeGreaterThan(0);
    expect(families.find((f) => f.name === 'svc_app_request_latency')!.type).toBe('GAUGE');
    for (const name of ['svc_app_queue_size', 'svc_app_concurrent_requests', 'svc_app_requests_received', 'svc_app_runners_gpu_usage_sum', 'svc_app_runners_vram_usage_bytes_sum']) {
      expect(families.map((f) => f.name)).toContain(name);
    }
    const apps = await call(sim.url, '/v1/serverless/apps', { key: sim.keys.api });
    const active = apps.body.apps.reduce((a: number, x: any) => a + x.active_runners, 0);
    expect(active).toBe(running + idle);
  });

  it('runner history (max) counts the runners of the states timeline; DEAD appears as a legacy final state', async () => {
    const app = sim.truth.apps().find((a) => a.owned_by_caller && sim.world.appByKey.get(a.endpoint_id)!.dormancy === 0)!;
    const r = await call(sim.url, `/v1/serverless/apps/${app.endpoint_id}/runners/history?${qs({ start: '2026-11-21T11:00:00Z', timeframe: 'minute', aggregation: 'max' })}`, { key: sim.keys.api });
    const history = r.body.history;
    expect(history).toHaveLength(60);
    const last = history[history.length - 1];
    const states = sim.truth.runnerStates({ owner: app.owner, name: app.name });
    // In the last minute before now the max running count is at least the count at now.
    expect(last.running).toBeGreaterThanOrEqual(states.filter((s) => s.state === 'running').length);
    expect(r.body).toMatchObject({ endpoint_id: app.endpoint_id, timeframe: 'minute', aggregation: 'max' });
    const old = sim.truth.runnerStates({ owner: app.owner, name: app.name }).filter((s) => s.state === 'DEAD');
    expect(old.length).toBeGreaterThan(0);
    for (const s of old) expect(Date.parse(s.since)).toBeLessThan(Date.parse('2026-10-27T12:00:00Z'));
  });
});
