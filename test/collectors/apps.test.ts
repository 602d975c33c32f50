import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import type { Runtime } from '../../src/runtime.js';
import type { JobDefinition } from '../../src/collectors/job.js';
import { listApps, listEndpoints, type AppRef } from '../../src/collectors/endpoints.js';
import { appsJob } from '../../jobs/apps.js';
import { currentApps } from '../../src/store/tables/apps.js';
import { currentAppEndpoints } from '../../src/store/tables/app-endpoints.js';
import { toDateTime64 } from '../../src/values.js';
import { openTestRuntime, closeRuntime, queryRows } from '../support/store.js';
import { runJob } from '../support/jobs.js';
import { nonEmpty } from '../support/truth.js';

let rt: Runtime;
let sim: Sim;

beforeAll(async () => {
  rt = await openTestRuntime();
  sim = await startSim({ seed: 11, apps: 30, days: 2, slowMs: 200 });
});
afterAll(async () => {
  await sim.close();
  await closeRuntime(rt);
});

/** A job that only reports what listEndpoints/listApps answer, on the given runtime. */
async function discovered(runtime: Runtime): Promise<{ endpoints: string[]; apps: AppRef[] }> {
  const out = { endpoints: [] as string[], apps: [] as AppRef[] };
  const probe: JobDefinition = {
    name: 'probe',
    description: 'test',
    defaultCron: '* * * * *',
    scope: 'api',
    label: 'the probe',
    async run(ctx) {
      out.endpoints = await listEndpoints(ctx);
      out.apps = await listApps(ctx);
    },
  };
  const result = await runJob(runtime, sim, 'probe', {}, { jobs: [probe] });
  expect(result.status, result.error).toBe('ok');
  return out;
}

const owned = () => sim.truth.apps().filter((a) => a.owned_by_caller);
const sortStr = (xs: string[]) => [...xs].sort();

describe('apps collector against the simulator', () => {
  it('before the apps job has run, listEndpoints and listApps read the listing (owned apps only)', async () => {
    const { endpoints, apps } = await discovered(rt);
    expect(sortStr(endpoints)).toEqual(sortStr(owned().flatMap((a) => a.endpoints)));
    expect(endpoints.length).toBeGreaterThan(owned().length); // some apps have routes
    expect(apps.map((a) => a.endpoint_id).sort()).toEqual(owned().map((a) => a.endpoint_id).sort());
  });

  it('stores every owned app (latest state) and its endpoints, equal to the truth, also with 20% faults', async () => {
    sim.setFaults(0.2);
    try {
      const result = await runJob(rt, sim, 'apps');
      expect(result.status, result.error).toBe('ok');
    } finally {
      sim.setFaults(0);
    }
    const stored = await currentApps(rt.store, { owners: [] });
    const truth = nonEmpty(owned(), 'owned apps');
    // Both auth modes are present, so a collector that stored one constant would be caught.
    expect(new Set(truth.map((a) => a.settings.auth_mode))).toEqual(new Set(['public', 'private']));
    expect(sortStr(stored.map((a) => a.endpoint_id))).toEqual(sortStr(truth.map((a) => a.endpoint_id)));
    const byId = new Map(truth.map((a) => [a.endpoint_id, a]));
    for (const a of stored) {
      const t = byId.get(a.endpoint_id)!;
      expect({ owner: a.owner, name: a.name, app_id: a.app_id, environment: a.environment, machine_types: a.machine_types }).toEqual({
        owner: t.owner,
        name: t.name,
        app_id: t.app_id,
        environment: t.environment,
        machine_types: t.machine_types,
      });
      expect(a.machine_type).toBe(t.machine_types[0]);
      expect({
        auth_mode: a.auth_mode,
        keep_alive: a.keep_alive,
        min_concurrency: a.min_concurrency,
        max_concurrency: a.max_concurrency,
        request_timeout: a.request_timeout,
        startup_timeout: a.startup_timeout,
        valid_regions: a.valid_regions,
      }).toEqual(t.settings);
      expect(a.queue_size_source).toBe('listing'); // the queue job reads the queue itself (queue_samples)
      expect(a.observed_at).toBe(toDateTime64(sim.clock.now()));
    }
    const endpoints = await currentAppEndpoints(rt.store, {});
    expect(endpoints.map((e) => e.endpoint_id).sort()).toEqual(truth.flatMap((a) => a.endpoints).sort());
    for (const e of endpoints) {
      expect(e.route === null).toBe(e.endpoint_id === `${e.owner}/${e.name}`);
    }
  });

  it('stores the listed live values (runners, queue size) as the platform gives them at "now"', async () => {
    const listing = (await (
      await fetch(`${sim.url}/v1/serverless/apps?expand=endpoints`, { headers: { authorization: `Key ${sim.keys.api}` } })
    ).json()) as { apps: Array<{ endpoint_id: string; active_runners: number; queue_size: number }> };
    const stored = new Map((await currentApps(rt.store, { owners: [] })).map((a) => [a.endpoint_id, a]));
    for (const a of listing.apps) {
      expect(stored.get(a.endpoint_id)!.active_runners).toBe(a.active_runners);
      expect(stored.get(a.endpoint_id)!.queue_size).toBe(a.queue_size);
    }
    expect(listing.apps.some((a) => a.active_runners > 0)).toBe(true);
  });

  it('after the apps job, listEndpoints and listApps read the stored listing; ENDPOINT_IDS narrows them', async () => {
    const calls = sim.requestLog().length;
    const { endpoints, apps } = await discovered(rt);
    expect(sim.requestLog().length).toBe(calls); // no platform call
    expect(sortStr(endpoints)).toEqual(sortStr(owned().flatMap((a) => a.endpoints)));
    expect(apps).toHaveLength(owned().length);

    const withRoute = owned().find((a) => a.endpoints.length > 1)!;
    const configured = { ...rt, config: { ...rt.config, ENDPOINT_IDS: [withRoute.endpoints[1], 'other-co/not-mine'] } };
    const narrowed = await discovered(configured);
    expect(narrowed.endpoints).toEqual([withRoute.endpoints[1], 'other-co/not-mine']);
    expect(narrowed.apps.map((a) => a.endpoint_id)).toEqual([withRoute.endpoint_id]);
  });

  it('an app no longer listed is tombstoned; re-running keeps one live row per app', async () => {
    // wall-clock: a version stamp: newer than none before it, as nextVersionMs makes them
    const stamp = toDateTime64(Date.now());
    await rt.store.client.insert({
      table: 'apps',
      format: 'JSONEachRow',
      values: [
        {
          owner: 'acme', name: 'gone-app', endpoint_id: 'acme/gone-app', app_id: null, environment: 'main', machine_type: 'CPU',
          machine_types: ['CPU'], auth_mode: 'public', keep_alive: 10, min_concurrency: 0, max_concurrency: 2, request_timeout: 60,
          startup_timeout: 60, valid_regions: [], updated_at: null, active_runners: 0, queue_size: 0, queue_size_source: 'listing',
          observed_at: stamp, raw: '{}', version: 1, is_deleted: 0, collected_at: stamp,
        },
      ],
    });
    await rt.store.client.insert({
      table: 'app_endpoints',
      format: 'JSONEachRow',
      values: [{ owner: 'acme', name: 'gone-app', endpoint_id: 'acme/gone-app', route: null, version: 1, is_deleted: 0, collected_at: stamp }],
    });
    expect((await currentApps(rt.store, { owners: [] })).some((a) => a.name === 'gone-app')).toBe(true);
    const result = await runJob(rt, sim, 'apps');
    expect(result.status, result.error).toBe('ok');
    const stored = await currentApps(rt.store, { owners: [] });
    expect(stored.some((a) => a.name === 'gone-app')).toBe(false);
    expect(stored).toHaveLength(owned().length);
    expect((await currentAppEndpoints(rt.store, {})).some((e) => e.name === 'gone-app')).toBe(false);
    const [dups] = await queryRows<{ n: string }>(rt, `SELECT count() AS n FROM (SELECT owner, name, count() AS c FROM apps FINAL GROUP BY owner, name HAVING c > 1)`);
    expect(Number(dups.n)).toBe(0);
  });
});
