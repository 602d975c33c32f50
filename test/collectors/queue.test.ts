// Issue 16, acceptance 4: the queue job's samples equal the simulator's truth at every sample, and the
// tallyhouse_app_queue_size gauge shows each app's latest sample, apps beyond METRICS_MAX_APPS summed as __other__.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { startSim, type Sim } from '../../src/sim/index.js';
import type { Runtime } from '../../src/runtime.js';
import { openTestRuntime, closeRuntime, queryRows } from '../support/store.js';
import { runJob } from '../support/jobs.js';
import { appQueueSize, registerBusinessMetrics, OTHER_APPS } from '../../src/http/business-metrics.js';

let rt: Runtime;
let sim: Sim;
beforeAll(async () => {
  rt = await openTestRuntime({ METRICS_MAX_APPS: '3' });
  sim = await startSim({ seed: 5, now: '2026-11-21T15:00:00Z', apps: 16, faultRate: 0.2, slowMs: 2500 });
});
afterAll(async () => {
  await sim?.close();
  await closeRuntime(rt);
});

describe('queue backlog', () => {
  it('every sample equals the truth at its instant; the gauge shows the latest per app', async () => {
    for (let i = 0; i < 6; i++) {
      const run = await runJob(rt, sim, 'queue');
      expect(run.status, run.error).toBe('ok');
      sim.clock.advance(4 * 60_000 + 7_000);
    }
    const samples = await queryRows<{ endpoint_id: string; at: string; queue_size: string }>(
      rt,
      "SELECT endpoint_id, toString(sampled_at) AS at, queue_size FROM queue_samples ORDER BY sampled_at, endpoint_id",
    );
    const owned = sim.truth.apps().filter((a) => a.owned_by_caller);
    expect(samples.length).toBe(6 * owned.length);
    let nonZero = 0;
    for (const s of samples) {
      const [owner, name] = s.endpoint_id.split('/');
      const truth = sim.truth.queueSize(owner, name, `${s.at.replace(' ', 'T')}Z`);
      expect(Number(s.queue_size), `${s.endpoint_id} at ${s.at}`).toBe(truth);
      if (truth > 0) nonZero++;
    }
    expect(nonZero).toBeGreaterThan(3);

    const registry = new Registry();
    registerBusinessMetrics({ ...rt, registry }, [appQueueSize]);
    const metric = await registry.getSingleMetric('tallyhouse_app_queue_size')!.get();
    const lastAt = samples[samples.length - 1].at;
    const latest = samples.filter((s) => s.at === lastAt).map((s) => ({ app: s.endpoint_id, size: Number(s.queue_size) }));
    latest.sort((a, b) => b.size - a.size || (a.app < b.app ? -1 : 1));
    // The app label is the name (as on the cost and budget gauges), the owner apart: acme/sdxl is {app="sdxl", owner="acme"}.
    const split = (id: string) => [id.slice(id.indexOf('/') + 1), id.slice(0, id.indexOf('/'))];
    expect(latest.every((l) => l.app.includes('/'))).toBe(true);
    const expected = [...latest.slice(0, 3).map((l) => [...split(l.app), l.size]), [OTHER_APPS, '', latest.slice(3).reduce((n, l) => n + l.size, 0)]];
    expect(metric.values.map((v) => [v.labels.app, v.labels.owner, v.value])).toEqual(expected);
  });
});
