import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import type { Runtime } from '../../src/runtime.js';
import { toDateTime64 } from '../../src/values.js';
import { Checkpoints } from '../../src/store/tables/checkpoints.js';
import { requestCostByEndpoint } from '../../src/store/tables/requests.js';
import { openTestRuntime, closeRuntime } from '../support/store.js';
import { runJob, simClient } from '../support/jobs.js';
import type { PlatformClient, PaginateOptions } from '../../src/platform/index.js';
import { queryRows } from '../support/store.js';

// Endpoint groups of at most 50 ids, bare ids instead of their routes, watermarks and backfill resume, with the
// default world of 60 owned apps (so there are more than 50 ids) at a low request rate.

const NOW = '2026-11-21T12:00:00Z';
const HOUR = 3_600_000;
const PATH = '/v1/serverless/requests/by-endpoint';

let rt: Runtime;
let sim: Sim;
let checkpoints: Checkpoints;
beforeAll(async () => {
  rt = await openTestRuntime({ REQUESTS_RECOLLECT_HOURS: '6' });
  sim = await startSim({ seed: 31, now: NOW, days: 4, requestsPerHour: 2 });
  checkpoints = new Checkpoints(rt.store, rt.writer);
});
afterAll(async () => {
  await sim.close();
  await closeRuntime(rt);
});

const firstPages = (since: number) => sim.requestLog().slice(since).filter((c) => c.path === PATH && !c.query.cursor);
const idsOf = (q: Record<string, string | string[]>) => [q.endpoint_id].flat().flatMap((v) => (v ?? '').split(','));

async function storedCounts(from: Date, to: Date): Promise<Map<string, number>> {
  const rows = await requestCostByEndpoint(rt.store, { from: toDateTime64(from), to: toDateTime64(to), endpoint_ids: [], timezone: 'UTC' });
  return new Map(rows.map((r) => [r.endpoint_id, r.request_count]));
}
function truthCounts(from: Date, to: Date): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of sim.truth.requests({ from: from.toISOString(), to: to.toISOString() })) {
    out.set(r.endpoint_id, (out.get(r.endpoint_id) ?? 0) + r.request_count);
  }
  return out;
}
const sorted = (m: Map<string, number>) => [...m.entries()].sort(([a], [b]) => a.localeCompare(b));

describe('requests collector: endpoint groups and watermarks', () => {
  it('asks for at most 50 ids a call, bare app ids only, and stores every route under its own id', async () => {
    const apps = sim.truth.apps().filter((a) => a.owned_by_caller);
    expect(apps.length).toBeGreaterThanOrEqual(60);
    const allEndpoints = apps.flatMap((a) => a.endpoints);
    expect(allEndpoints.length).toBeGreaterThan(apps.length); // there are routes
    const since = sim.requestLog().length;
    const run = await runJob(rt, sim, 'requests');
    expect(run.status, run.error).toBe('ok');

    const calls = firstPages(since);
    const counts = calls.map((c) => idsOf(c.query).length);
    expect(Math.max(...counts)).toBe(50);
    expect(new Set(calls.flatMap((c) => idsOf(c.query)))).toEqual(new Set(apps.map((a) => a.endpoint_id)));
    // The look-back (24 h) in day chunks, each checkpointed: [11-20 12:00, 11-21 00:00), [11-21 00:00, now).
    expect(new Set(calls.map((c) => `${c.query.start}..${c.query.end}`))).toEqual(
      new Set(['2026-11-20T12:00:00.000Z..2026-11-21T00:00:00.000Z', '2026-11-21T00:00:00.000Z..2026-11-21T12:00:00.000Z']),
    );
    for (const c of calls) expect(c.query.expand).toBe('billing');

    const from = new Date(Date.parse(NOW) - 24 * HOUR);
    const truth = truthCounts(from, new Date(NOW));
    expect([...truth.keys()].some((id) => id.split('/').length > 2)).toBe(true);
    expect(sorted(await storedCounts(from, new Date(NOW)))).toEqual(sorted(truth));
    const total = [...truth.values()].reduce((a, b) => a + b, 0);
    expect(run.rows).toBe(total); // each request fetched once: no route asked for beside its app
  });

  it('saves a watermark per endpoint; the next run starts REQUESTS_RECOLLECT_HOURS before it; a new endpoint reaches back the look-back', async () => {
    const saved = JSON.parse((await checkpoints.get('requests', 'scheduled'))!) as Record<string, string>;
    // Oracle: the platform reads a bare owner/app as every route of the app, so the collector asks for each owned
    // app's own id and no route: the watermark keys are exactly the apps' ids (from the truth, not the function).
    const ids = sim.truth.apps().filter((a) => a.owned_by_caller).map((a) => a.endpoint_id).sort();
    expect(ids.length).toBeGreaterThan(3);
    expect(Object.keys(saved).sort()).toEqual(ids);
    expect(new Set(Object.values(saved))).toEqual(new Set([new Date(NOW).toISOString()]));

    // One endpoint forgotten, as if it had just been added; one no longer listed.
    const fresh = ids[3];
    delete saved[fresh];
    saved['gone/app'] = new Date(NOW).toISOString();
    await checkpoints.save('requests', 'scheduled', JSON.stringify(saved));
    sim.clock.advance(10 * 60_000);
    const since = sim.requestLog().length;
    const run = await runJob(rt, sim, 'requests');
    expect(run.status, run.error).toBe('ok');
    const calls = firstPages(since);
    const freshCalls = calls.filter((c) => idsOf(c.query).includes(fresh));
    const otherCalls = calls.filter((c) => !idsOf(c.query).includes(fresh));
    expect(freshCalls.length).toBeGreaterThan(0);
    for (const c of freshCalls) expect(idsOf(c.query)).toEqual([fresh]);
    expect(freshCalls.map((c) => `${c.query.start}..${c.query.end}`)).toEqual([
      '2026-11-20T12:10:00.000Z..2026-11-21T00:00:00.000Z',
      '2026-11-21T00:00:00.000Z..2026-11-21T12:10:00.000Z',
    ]);
    expect(new Set(otherCalls.map((c) => `${c.query.start}..${c.query.end}`))).toEqual(
      new Set(['2026-11-21T06:00:00.000Z..2026-11-21T12:10:00.000Z']),
    );
    const after = JSON.parse((await checkpoints.get('requests', 'scheduled'))!) as Record<string, string>;
    expect(new Set(Object.values(after))).toEqual(new Set([sim.clock.now().toISOString()]));
    expect(Object.keys(after).sort()).toEqual(ids); // the id no longer listed is gone, every listed one kept

    const from = new Date(Date.parse(NOW) - 24 * HOUR);
    expect(sorted(await storedCounts(from, sim.clock.now()))).toEqual(sorted(truthCounts(from, sim.clock.now())));
  });

  it('a backfill resumes at the chunk after the last one it committed, and --endpoints limits it', async () => {
    const ids = ['acme/' + sim.truth.apps().find((a) => a.owned_by_caller && a.owner === 'acme')!.name];
    const args = { from: '2026-11-18', to: '2026-11-21', endpoints: ids.join(',') };
    const complete = await runJob(rt, sim, 'requests', args);
    expect(complete.status, complete.error).toBe('ok');
    const key = await findBackfillKey();
    expect(await checkpoints.get('requests', key)).toBe('done');
    // What an interrupted run leaves behind: the start of the chunk it had not committed yet.
    await checkpoints.save('requests', key, '2026-11-20T00:00:00.000Z');
    const since = sim.requestLog().length;
    const run = await runJob(rt, sim, 'requests', args);
    expect(run.status, run.error).toBe('ok');
    const calls = firstPages(since);
    expect(calls.map((c) => [c.query.start, c.query.end, idsOf(c.query)])).toEqual([
      ['2026-11-20T00:00:00.000Z', '2026-11-21T00:00:00.000Z', ids],
    ]);
    expect(await checkpoints.get('requests', key)).toBe('done');
    const truth = truthCounts(new Date('2026-11-20T00:00:00Z'), new Date('2026-11-21T00:00:00Z'));
    const appTotal = [...truth].filter(([id]) => id === ids[0] || id.startsWith(`${ids[0]}/`)).reduce((s, [, n]) => s + n, 0);
    expect(run.rows).toBe(appTotal);
  });
});

describe('requests collector: malformed items', () => {
  it('puts each malformed item in ingest_rejects with its reason and stores its neighbours', async () => {
    const real = simClient(sim);
    // The simulator never serves a malformed item: spoil some of its real pages on the way in.
    const spoiled = Object.create(real) as PlatformClient;
    spoiled.paginate = async function* <T>(path: string, opts: PaginateOptions<T>) {
      let n = 0;
      for await (const page of real.paginate(path, opts)) {
        const items = (page as { items: Array<Record<string, unknown>> }).items;
        for (const item of items) {
          if (n % 97 === 5) item.ended_at = 'not a time';
          else if (n % 97 === 50) item.status_code = 'OK';
          n++;
        }
        yield page;
      }
    } as PlatformClient['paginate'];
    const args = { from: '2026-11-17T00:00:00Z', to: '2026-11-20T00:00:00Z', endpoints: '' };
    const perApp = new Map<string, number>();
    for (const [id, n] of truthCounts(new Date(args.from), new Date(args.to))) {
      const bare = id.split('/').slice(0, 2).join('/');
      perApp.set(bare, (perApp.get(bare) ?? 0) + n);
    }
    const app = { endpoint_id: [...perApp].sort((a, b) => b[1] - a[1])[0][0] };
    args.endpoints = app.endpoint_id;
    try {
      const run = await runJob(rt, sim, 'requests', args, { platform: spoiled });
      expect(run.status, run.error).toBe('ok');
      const total = [...truthCounts(new Date(args.from), new Date(args.to))]
        .filter(([id]) => id === app.endpoint_id || id.startsWith(`${app.endpoint_id}/`))
        .reduce((s, [, n]) => s + n, 0);
      expect(total).toBeGreaterThan(100);
      const bad = Math.floor((total - 6) / 97) + 1 + Math.floor((total - 51) / 97) + 1;
      expect(run.rows).toBe(total - bad);
      const rejects = await queryRows<{ reason: string; raw: string }>(
        rt,
        "SELECT reason, raw FROM ingest_rejects WHERE source = 'collector:requests' ORDER BY reason",
      );
      expect(rejects).toHaveLength(bad);
      expect(new Set(rejects.map((r) => r.reason))).toEqual(
        new Set(['ended_at: not an ISO 8601 timestamp: "not a time"', 'status_code: expected an integer, received string']),
      );
      expect((JSON.parse(rejects[0].raw) as { request_id: string }).request_id).toMatch(/^[0-9a-f-]{36}$/);
    } finally {
      await real.close();
    }
  });
});

async function findBackfillKey(): Promise<string> {
  const rs = await rt.store.client.query({
    query: "SELECT key FROM checkpoints WHERE job = 'requests' AND startsWith(key, 'backfill:') GROUP BY key",
    format: 'JSONEachRow',
  });
  const rows = await rs.json<{ key: string }>();
  expect(rows).toHaveLength(1);
  return rows[0].key;
}
