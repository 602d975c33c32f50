import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import type { Runtime } from '../../src/runtime.js';
import { currentRevisions, revisionsOf } from '../../src/store/tables/app-revisions.js';
import { openTestRuntime, closeRuntime } from '../support/store.js';
import { runJob } from '../support/jobs.js';

const NOW = '2026-11-21T12:00:00Z';
let rt: Runtime;
let sim: Sim;

beforeAll(async () => {
  rt = await openTestRuntime();
  sim = await startSim({ seed: 4, now: NOW, apps: 15, days: 3, slowMs: 200 });
  const apps = await runJob(rt, sim, 'apps');
  expect(apps.status, apps.error).toBe('ok');
});
afterAll(async () => {
  await sim.close();
  await closeRuntime(rt);
});

const owned = () => sim.truth.apps().filter((a) => a.owned_by_caller);
const ms = (utcText: string) => Date.parse(`${utcText.replace(' ', 'T')}Z`);

async function expectEqualToTruth() {
  const stored = await revisionsOf(rt.store, { endpoint_ids: [] });
  let n = 0;
  for (const app of owned()) {
    const truth = sim.truth.revisions(app.owner, app.name);
    const mine = stored.filter((r) => r.endpoint_id === app.endpoint_id);
    expect(mine.map((r) => r.revision_id)).toEqual(truth.map((t) => t.revision_id)); // newest first
    mine.forEach((r, i) => {
      const t = truth[i];
      expect({
        created_at: ms(r.created_at_utc),
        is_current: r.is_current,
        status: r.status,
        deployed_by: r.deployed_by,
        message: r.message,
        annotations: JSON.parse(r.annotations),
      }).toEqual({
        created_at: Date.parse(t.created_at),
        is_current: t.is_current,
        status: t.status,
        deployed_by: t.deployed_by,
        message: t.message,
        annotations: t.annotations,
      });
      n++;
    });
  }
  return n;
}

describe('revisions collector against the simulator', () => {
  it('stores every revision of every app as the truth (20% faults)', async () => {
    sim.setFaults(0.2);
    try {
      const result = await runJob(rt, sim, 'revisions');
      expect(result.status, result.error).toBe('ok');
    } finally {
      sim.setFaults(0);
    }
    expect(await expectEqualToTruth()).toBeGreaterThan(owned().length);
    const current = await currentRevisions(rt.store, {});
    expect(current.length).toBeGreaterThan(0);
    expect(new Set(current.map((c) => c.endpoint_id)).size).toBe(current.length); // one current revision per app
  });

  it('after the clock moves, new deployments appear and is_current moves with them', async () => {
    const before = owned().map((a) => sim.truth.revisions(a.owner, a.name).length).reduce((x, y) => x + y, 0);
    sim.clock.advance(20 * 86_400_000);
    try {
      const after = owned().map((a) => sim.truth.revisions(a.owner, a.name).length).reduce((x, y) => x + y, 0);
      expect(after).toBeGreaterThan(before);
      const result = await runJob(rt, sim, 'revisions');
      expect(result.status, result.error).toBe('ok');
      expect(await expectEqualToTruth()).toBe(after);
    } finally {
      sim.clock.set(NOW);
    }
  });
});
