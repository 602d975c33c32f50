// README: "a record the platform sends in a shape we cannot store goes to ingest_rejects with the reason; the
// records around it are stored" — for the apps, analytics, runners, events and revisions collectors. A proxy in
// front of the simulator breaks the first record of every answer (a field of the wrong type); the oracle is the
// simulator's truth minus exactly the records the proxy broke, which it records itself.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import type { Runtime } from '../../src/runtime.js';
import { openTestRuntime, closeRuntime, queryRows } from '../support/store.js';
import { runJob } from '../support/jobs.js';
import { PlatformClient } from '../../src/platform/index.js';

const NOW = '2026-11-21T12:00:00Z';
let rt: Runtime;
let sim: Sim;
let proxy: http.Server;
let proxyUrl: string;
/** What the proxy broke, by collection: the record as the simulator sent it. */
const broken: Record<string, Array<Record<string, unknown>>> = { apps: [], history: [], events: [], revisions: [], results: [] };
/** Which collections the proxy breaks (the apps listing only while the apps job runs). */
const breaking = new Set<string>();

/** Breaks the first record of the answer's list: a field of the wrong type the collector must refuse. */
function corrupt(body: Record<string, unknown>): void {
  const field: Record<string, string> = { apps: 'endpoint_id', history: 'timestamp', events: 'created_at', revisions: 'revision_id', results: 'endpoint_id' };
  for (const key of ['apps', 'history', 'events', 'revisions']) {
    const list = body[key];
    if (breaking.has(key) && Array.isArray(list) && list.length > 0) {
      broken[key].push({ ...list[0] });
      list[0] = { ...list[0], [field[key]]: 7 };
    }
  }
  const series = body.time_series;
  if (breaking.has('results') && Array.isArray(series) && series.length > 0) {
    const results = (series[0] as { results: Array<Record<string, unknown>> }).results;
    if (results.length > 0) {
      broken.results.push({ ...results[0], bucket: (series[0] as { bucket: string }).bucket });
      results[0] = { ...results[0], endpoint_id: 7 };
    }
  }
}

beforeAll(async () => {
  rt = await openTestRuntime();
  sim = await startSim({ seed: 17, now: NOW, apps: 14, days: 4 });
  proxy = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const answer = await fetch(`${sim.url}${req.url}`, { method: req.method, headers: { authorization: req.headers.authorization ?? '', 'content-type': 'application/json' }, body: chunks.length ? Buffer.concat(chunks) : undefined });
      let text = await answer.text();
      if (answer.ok && (answer.headers.get('content-type') ?? '').includes('json')) {
        const body = JSON.parse(text) as Record<string, unknown>;
        corrupt(body);
        text = JSON.stringify(body);
      }
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
      res.end(text);
    });
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => proxy?.close(() => r()));
  await sim?.close();
  await closeRuntime(rt);
});

async function run(job: string, collections: string[], args: Record<string, string> = {}): Promise<void> {
  breaking.clear();
  for (const c of collections) breaking.add(c);
  const platform = new PlatformClient({ baseUrl: proxyUrl, apiKey: sim.keys.api, adminKey: sim.keys.admin, backoffBaseMs: 5, maxBackoffMs: 50 });
  try {
    const result = await runJob(rt, sim, job, args, { platform });
    expect(result.status, result.error).toBe('ok');
  } finally {
    breaking.clear();
    await platform.close();
  }
}

const rejects = (source: string) =>
  queryRows<{ reason: string; raw: string }>(rt, 'SELECT reason, raw FROM ingest_rejects WHERE source = {s:String} ORDER BY raw', { s: `collector:${source}` });

describe('collectors refuse a bad record alone, with a reason, and store the rest', () => {
  it('apps: the broken app is refused naming endpoint_id; every other owned app is stored', async () => {
    await run('apps', ['apps']);
    expect(broken.apps).toHaveLength(1);
    const refused = await rejects('apps');
    expect(refused).toHaveLength(1);
    expect(refused[0].reason).toMatch(/^endpoint_id: /);
    expect(JSON.parse(refused[0].raw).endpoint_id).toBe(7);
    const stored = await queryRows<{ endpoint_id: string }>(rt, 'SELECT endpoint_id FROM apps FINAL WHERE is_deleted = 0 ORDER BY endpoint_id');
    const expected = sim.truth.apps().filter((a) => a.owned_by_caller && a.endpoint_id !== broken.apps[0].endpoint_id).map((a) => a.endpoint_id).sort();
    expect(expected.length).toBeGreaterThan(5);
    expect(stored.map((s) => s.endpoint_id)).toEqual(expected);
    // The later jobs read every app (the broken one too): list the apps again, unbroken.
    await run('apps', []);
  });

  it('events: each broken event is refused naming created_at; every other event is stored', async () => {
    await run('events', ['events'], { from: '2026-11-19T00:00:00Z', to: NOW });
    const refused = await rejects('events');
    expect(broken.events.length).toBeGreaterThan(3);
    expect(refused).toHaveLength(broken.events.length);
    for (const r of refused) expect(r.reason).toMatch(/^created_at: /);
    const stored = await queryRows<{ event_id: string }>(rt, 'SELECT DISTINCT event_id FROM app_events ORDER BY event_id');
    const brokenIds = new Set(broken.events.map((e) => e.event_id));
    const owned = sim.truth.apps().filter((a) => a.owned_by_caller);
    const truth = owned
      .flatMap((a) => sim.truth.events(a.owner, a.name))
      .filter((e) => e.created_at >= '2026-11-19T00:00:00' && e.created_at < '2026-11-21T12:00:00' && !brokenIds.has(e.event_id))
      .map((e) => e.event_id)
      .sort();
    expect(truth.length).toBeGreaterThan(20);
    expect(stored.map((s) => s.event_id)).toEqual(truth);
  });

  it('revisions: each broken revision is refused naming revision_id; every other revision is stored', async () => {
    await run('revisions', ['revisions']);
    const refused = await rejects('revisions');
    expect(broken.revisions.length).toBeGreaterThan(3);
    expect(refused).toHaveLength(broken.revisions.length);
    for (const r of refused) expect(r.reason).toMatch(/^revision_id: /);
    const stored = await queryRows<{ revision_id: string }>(rt, 'SELECT DISTINCT revision_id FROM app_revisions ORDER BY revision_id');
    const brokenIds = new Set(broken.revisions.map((r) => r.revision_id));
    const truth = sim.truth
      .apps()
      .filter((a) => a.owned_by_caller)
      .flatMap((a) => sim.truth.revisions(a.owner, a.name))
      .map((r) => r.revision_id)
      .filter((id) => !brokenIds.has(id))
      .sort();
    expect(stored.map((s) => s.revision_id)).toEqual(truth);
  });

  it('runners: each broken point is refused naming timestamp; every other point is stored', async () => {
    await run('runners', ['history'], { from: '2026-11-20T00:00:00Z', to: '2026-11-21T00:00:00Z' });
    const refused = await rejects('runners');
    expect(broken.history.length).toBeGreaterThan(3);
    expect(refused).toHaveLength(broken.history.length);
    for (const r of refused) expect(r.reason).toMatch(/^timestamp: /);
    const [counts] = await queryRows<{ n: string }>(rt, 'SELECT count() AS n FROM runner_history FINAL');
    const owned = sim.truth.apps().filter((a) => a.owned_by_caller);
    let truth = 0;
    for (const a of owned) {
      for (const aggregation of ['max', 'avg'] as const) {
        truth += sim.truth.runnerHistory({ owner: a.owner, name: a.name, from: '2026-11-20T00:00:00Z', to: '2026-11-21T00:00:00Z', aggregation }).length;
      }
    }
    expect(truth).toBeGreaterThan(100);
    expect(Number(counts.n)).toBe(truth - broken.history.length);
  });

  it('analytics: each broken row is refused naming endpoint_id; the rest are stored, once each', async () => {
    await run('analytics', ['results'], { from: '2026-11-20T00:00:00Z', to: '2026-11-21T00:00:00Z', kinds: 'serverless' });
    const refused = await rejects('analytics');
    expect(broken.results.length).toBeGreaterThan(0);
    expect(refused).toHaveLength(broken.results.length);
    for (const r of refused) expect(r.reason).toMatch(/^endpoint_id: /);
    const [stored] = await queryRows<{ n: string }>(rt, "SELECT count() AS n FROM analytics_buckets FINAL WHERE kind = 'serverless'");
    const [keys] = await queryRows<{ n: string }>(rt, "SELECT uniqExact(endpoint_id, bucket) AS n FROM analytics_buckets FINAL WHERE kind = 'serverless'");
    expect(Number(stored.n)).toBe(Number(keys.n));
    expect(Number(stored.n)).toBeGreaterThan(100);
  });
});
