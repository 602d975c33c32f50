import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DateTime } from 'luxon';
import { startSim, type Sim } from '../../src/sim/index.js';
import type { Runtime } from '../../src/runtime.js';
import { eventCounts, runnerStatesAt, runnerStateChanges } from '../../src/store/tables/app-events.js';
import { normalizePayloadStates } from '../../src/collectors/events.js';
import { openTestRuntime, closeRuntime, queryRows } from '../support/store.js';
import { runJob } from '../support/jobs.js';
import { Checkpoints } from '../../src/store/tables/checkpoints.js';

const NOW = '2026-11-21T12:00:00Z';
const DAYS = 6;
let rt: Runtime;
let sim: Sim;

beforeAll(async () => {
  rt = await openTestRuntime();
  sim = await startSim({ seed: 9, now: NOW, apps: 10, days: DAYS, slowMs: 200 });
  const apps = await runJob(rt, sim, 'apps');
  expect(apps.status, apps.error).toBe('ok');
});
afterAll(async () => {
  await sim.close();
  await closeRuntime(rt);
});

/**
 * The platform notes' rule, written here apart from the collector: a runner state (a key `state` or ending in
 * `_state`) spelled DEAD is TERMINATED; everything else as sent. A JSON.parse reviver, not a tree walk.
 */
function legacyStatesRenamed(payload: unknown): unknown {
  return JSON.parse(JSON.stringify(payload), (key, value) => ((key === 'state' || key.endsWith('_state')) && value === 'DEAD' ? 'TERMINATED' : value));
}

const owned = () => sim.truth.apps().filter((a) => a.owned_by_caller);
const ms = (utcText: string) => Date.parse(`${utcText.replace(' ', 'T')}Z`);

interface StoredEvent {
  endpoint_id: string;
  event_id: string;
  category: string;
  created_at: string;
  state: string | null;
  runner_id: string | null;
  payload: string;
  raw: string;
}

/** Every stored row (no FINAL: each event must be there once, not merely collapse to once). */
async function storedRows(): Promise<StoredEvent[]> {
  return queryRows<StoredEvent>(
    rt,
    `SELECT endpoint_id, event_id, category, toString(created_at) AS created_at, state, runner_id, payload, raw FROM app_events`,
  );
}

/** The truth's events of every owned app with created_at in [fromMs, toMs). */
function truthEvents(fromMs: number, toMs: number) {
  return owned().flatMap((a) =>
    sim.truth
      .events(a.owner, a.name)
      .filter((e) => Date.parse(e.created_at) >= fromMs && Date.parse(e.created_at) < toMs)
      .map((e) => ({ ...e, endpoint_id: a.endpoint_id })),
  );
}

/** A runner's states from the truth's events up to `atMs`, oldest first (stable for equal instants). */
function lifecycle(owner: string, name: string, runnerId: string, atMs: number) {
  return sim.truth
    .events(owner, name)
    .filter((e) => e.payload.runner_id === runnerId && typeof e.payload.state === 'string' && Date.parse(e.created_at) <= atMs)
    .map((e) => ({ at: Date.parse(e.created_at), state: e.payload.state as string }))
    .sort((a, b) => a.at - b.at);
}

describe('events collector against the simulator', () => {
  it('three scheduled runs (20% faults, the clock moving) store each event of the window exactly once, as delivered', async () => {
    const start = Date.parse(NOW) - 24 * 3_600_000;
    sim.setFaults(0.2);
    try {
      for (let run = 0; run < 3; run++) {
        const logged = sim.requestLog().length;
        // Later runs page in small pages: newest first, cursor paging while the clock has moved.
        const result = await runJob(rt, sim, 'events', run === 0 ? {} : { 'page-limit': '3' });
        expect(result.status, result.error).toBe('ok');
        if (run === 1) {
          // The second run starts each app at its watermark (the newest event the first run stored) minus the
          // 10-minute overlap; an app without events in the first window reads the last 24 hours again.
          const firstRunNow = Date.parse(NOW);
          for (const app of owned()) {
            const newest = sim.truth
              .events(app.owner, app.name)
              .map((e) => Date.parse(e.created_at))
              .filter((t) => t >= start && t <= firstRunNow)
              .reduce((a, b) => Math.max(a, b), -Infinity);
            const expected = Number.isFinite(newest) ? newest - 10 * 60_000 : Date.parse(sim.clock.now().toISOString()) - 24 * 3_600_000;
            const calls = sim.requestLog().slice(logged).filter((r) => r.path === `/v1/serverless/apps/${app.owner}/${app.name}/events`);
            expect(calls.length).toBeGreaterThan(0);
            for (const c of calls) expect(Date.parse(String(c.query.start)), app.endpoint_id).toBe(expected);
          }
        }
        sim.clock.advance(40 * 60_000);
      }
    } finally {
      sim.setFaults(0);
    }
    // The last run saw the clock at NOW + 80 min.
    const end = Date.parse(NOW) + 80 * 60_000 + 1;
    const truth = truthEvents(start, end);
    const stored = await storedRows();
    expect(stored).toHaveLength(truth.length);
    expect(new Set(stored.map((e) => e.event_id)).size).toBe(stored.length);
    const byId = new Map(truth.map((e) => [e.event_id, e]));
    for (const s of stored) {
      const t = byId.get(s.event_id)!;
      expect(t, s.event_id).toBeDefined();
      expect(s.endpoint_id).toBe(t.endpoint_id);
      expect(s.category).toBe(t.category);
      expect(ms(s.created_at)).toBe(Date.parse(t.created_at));
      expect(JSON.parse(s.raw).payload).toEqual(t.payload);
      expect(JSON.parse(s.payload)).toEqual(legacyStatesRenamed(t.payload));
    }
    // Events that appeared while the clock moved were picked up.
    expect(truth.some((e) => Date.parse(e.created_at) > Date.parse(NOW))).toBe(true);
    const counts = await eventCounts(rt.store, { from: new Date(start).toISOString(), to: new Date(end).toISOString(), endpoint_ids: [] });
    expect(counts.reduce((n, c) => n + c.events, 0)).toBe(truth.length);
  });

  it('the watermarks keep only the apps of the run: one no longer listed is dropped, the others kept', async () => {
    // The instant of the last scheduled run: nothing new to store, only the watermarks are rewritten.
    sim.clock.set(new Date(Date.parse(NOW) + 80 * 60_000));
    const checkpoints = new Checkpoints(rt.store, rt.writer);
    const before = JSON.parse((await checkpoints.get('events', 'watermarks'))!) as Record<string, string>;
    expect(Object.keys(before).length).toBeGreaterThan(0);
    await checkpoints.save('events', 'watermarks', JSON.stringify({ ...before, 'gone/app': NOW }));
    const result = await runJob(rt, sim, 'events');
    expect(result.status, result.error).toBe('ok');
    const after = JSON.parse((await checkpoints.get('events', 'watermarks'))!) as Record<string, string>;
    expect(after['gone/app']).toBeUndefined();
    for (const id of Object.keys(before)) expect(Date.parse(after[id]), id).toBeGreaterThanOrEqual(Date.parse(before[id]));
  });

  it('a backfill of the whole history stores legacy DEAD as TERMINATED; the last state per runner equals the truth', async () => {
    // Back to the instant of the last scheduled run, so everything stored so far is in the truth.
    const at = new Date(Date.parse(NOW) + 80 * 60_000);
    sim.clock.set(at);
    const from = DateTime.fromISO(NOW).minus({ days: DAYS + 1 }).toISODate()!;
    const result = await runJob(rt, sim, 'events', { from, to: '2026-11-22' });
    expect(result.status, result.error).toBe('ok');
    const stored = await storedRows();
    // Every event of the backfilled window (the runs before stored part of it), still once each.
    expect(stored).toHaveLength(truthEvents(Date.parse(`${from}T00:00:00Z`), at.getTime() + 1).length);

    const deadInRaw = stored.filter((e) => JSON.parse(e.raw).payload?.state === 'DEAD');
    expect(deadInRaw.length).toBeGreaterThan(0);
    for (const e of deadInRaw) {
      expect(e.state).toBe('TERMINATED');
      expect(JSON.parse(e.payload).state).toBe('TERMINATED');
    }
    expect(stored.some((e) => e.state === 'DEAD' || e.payload.includes('"DEAD"'))).toBe(false);

    let terminated = 0;
    let legacy = 0;
    let live = 0;
    for (const app of owned()) {
      const truth = sim.truth.runnerStates({ owner: app.owner, name: app.name });
      const states = new Map((await runnerStatesAt(rt.store, { endpoint_id: app.endpoint_id, at: at.toISOString() })).map((s) => [s.runner_id, s]));
      for (const t of truth) {
        const s = states.get(t.runner_id);
        expect(s, `${app.endpoint_id} ${t.runner_id}`).toBeDefined();
        if (t.state === 'TERMINATED' || t.state === 'DEAD') {
          expect(s!.last_state).toBe('TERMINATED');
          expect(ms(s!.since_utc)).toBe(Date.parse(t.since));
          expect(s!.last_termination_reason).toBe(t.termination_reason);
          terminated++;
          if (t.state === 'DEAD') legacy++;
        } else {
          // A live runner: its last state is the one of its latest event in the truth up to `at` (a second reading,
          // from the simulator's own event list, ordered here by time).
          const latest = lifecycle(app.owner, app.name, t.runner_id, at.getTime()).at(-1);
          expect(latest, `${app.endpoint_id} ${t.runner_id} has events in the truth`).toBeDefined();
          expect(s!.last_state, `${app.endpoint_id} ${t.runner_id}`).toBe(latest!.state);
          expect(ms(s!.since_utc)).toBe(latest!.at);
          live++;
        }
      }
    }
    expect(terminated).toBeGreaterThan(0);
    expect(legacy).toBeGreaterThan(0);
    expect(live).toBeGreaterThan(0);

    const app = owned()[0];
    const changes = await runnerStateChanges(rt.store, { endpoint_id: app.endpoint_id, from: '2026-11-01', to: '2026-11-22' });
    expect(changes.length).toBeGreaterThan(0);
    expect(changes.every((c) => c.state !== 'DEAD')).toBe(true);
  });

  it('unknown runner states and other fields are kept as delivered', () => {
    expect(normalizePayloadStates({ state: 'HIBERNATING', previous_state: 'DEAD', nested: [{ state: 'DEAD' }], note: 'DEAD' })).toEqual({
      state: 'HIBERNATING',
      previous_state: 'TERMINATED',
      nested: [{ state: 'TERMINATED' }],
      note: 'DEAD',
    });
  });
});
