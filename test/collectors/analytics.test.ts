import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { DateTime } from 'luxon';
import { startSim, type Sim } from '../../src/sim/index.js';
import type { Runtime } from '../../src/runtime.js';
import { ANALYTICS_METRIC_NAMES } from '../../src/platform/index.js';
import { analyticsByBucket, errorTotals } from '../../src/store/tables/analytics-buckets.js';
import { openTestRuntime, closeRuntime, queryRows } from '../support/store.js';
import { runJob } from '../support/jobs.js';

const NOW = '2026-11-21T12:00:00Z';
let rt: Runtime;
let sim: Sim;

beforeAll(async () => {
  rt = await openTestRuntime();
  sim = await startSim({ seed: 5, now: NOW, apps: 30, days: 4, slowMs: 200 });
});
afterAll(async () => {
  await sim.close();
  await closeRuntime(rt);
});

const owned = () => sim.truth.apps().filter((a) => a.owned_by_caller);
const notOwned = () => sim.truth.apps().filter((a) => !a.owned_by_caller);
const utc = (iso: string) => DateTime.fromISO(iso, { setZone: true }).toUTC().toFormat('yyyy-MM-dd HH:mm:ss.SSS');

type Row = Record<string, unknown>;

/** Stored rows vs the truth, per (endpoint, bucket) and metric: every value equal, none missing, none extra. */
async function expectEqualToTruth(opts: { kind: 'serverless' | 'models'; timezone: string; from: string; to: string; endpointIds: string[]; onlyUsed?: boolean }) {
  const truth = sim.truth.analytics({ endpointIds: opts.endpointIds, from: opts.from, to: opts.to, timezone: opts.timezone, timeframe: 'hour', kind: opts.kind });
  const stored = await analyticsByBucket(rt.store, {
    kind: opts.kind,
    timezone: opts.timezone,
    timeframe: 'hour',
    from: opts.from,
    to: opts.to,
    endpoint_ids: [],
  });
  const key = (endpoint: string, bucket: string) => `${endpoint}|${bucket}`;
  const storedByKey = new Map<string, Row>(stored.map((r: Row) => [key(r.endpoint_id as string, r.bucket_utc as string), r]));
  let compared = 0;
  for (const t of truth) {
    const s = storedByKey.get(key(t.endpoint_id, utc(t.bucket)));
    if (opts.onlyUsed && !s) {
      expect(t.request_count, `${t.endpoint_id} ${t.bucket}`).toBe(0);
      continue;
    }
    expect(s, `${t.endpoint_id} ${t.bucket}`).toBeDefined();
    for (const m of ANALYTICS_METRIC_NAMES) expect(s![m], `${t.endpoint_id} ${t.bucket} ${m}`).toBe(t[m]);
    storedByKey.delete(key(t.endpoint_id, utc(t.bucket)));
    compared++;
  }
  expect([...storedByKey.keys()]).toEqual([]);
  return { compared, truth };
}

/** A runtime whose logs are captured as parsed JSON lines. */
function capturing(runtime: Runtime, config: Partial<Runtime['config']> = {}): { runtime: Runtime; lines: Row[] } {
  const lines: Row[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l) as Row);
      cb();
    },
  });
  return { runtime: { ...runtime, logger: pino({ level: 'info' }, stream), config: { ...runtime.config, ...config } }, lines };
}

describe('analytics collector against the simulator', () => {
  it('a scheduled run stores every metric per hourly bucket and endpoint exactly as the truth (last 24 h), app and route rows', async () => {
    const apps = await runJob(rt, sim, 'apps');
    expect(apps.status, apps.error).toBe('ok');
    const result = await runJob(rt, sim, 'analytics');
    expect(result.status, result.error).toBe('ok');
    const endpointIds = owned().flatMap((a) => a.endpoints);
    expect(endpointIds.length).toBeGreaterThan(50); // more than one call
    const from = DateTime.fromISO(NOW).minus({ hours: 24 }).toUTC().toISO()!;
    const { compared, truth } = await expectEqualToTruth({ kind: 'serverless', timezone: 'UTC', from, to: NOW, endpointIds });
    expect(compared).toBe(24 * endpointIds.length);
    expect(truth.some((t) => (t.request_count as number) > 0 && t.p99_duration !== null)).toBe(true);
    expect(truth.some((t) => t.request_count === 0 && t.p50_duration === null)).toBe(true); // empty buckets kept
    // The bare owner/app row is the app with its routes (counts add up; percentiles are as delivered).
    const [scopes] = await queryRows<{ apps: string; routes: string }>(
      rt,
      `SELECT countIf(endpoint_scope = 'app') AS apps, countIf(endpoint_scope = 'route') AS routes FROM analytics_buckets FINAL WHERE kind = 'serverless'`,
    );
    expect(Number(scopes.apps)).toBe(24 * owned().length);
    expect(Number(scopes.routes)).toBe(24 * (endpointIds.length - owned().length));
  });

  it('models analytics: the public model endpoints the caller used, exactly as the truth', async () => {
    const models = sim.world.models.map((m) => m.endpointId);
    const from = DateTime.fromISO(NOW).minus({ hours: 24 }).toUTC().toISO()!;
    const { compared } = await expectEqualToTruth({ kind: 'models', timezone: 'UTC', from, to: NOW, endpointIds: models, onlyUsed: true });
    expect(compared).toBeGreaterThan(0);
  });

  it('a backfill in Asia/Kolkata (half-hour buckets) equals the truth; re-collecting changes nothing', async () => {
    const endpointIds = owned().flatMap((a) => a.endpoints);
    const args = { from: '2026-11-18', to: '2026-11-20', timezone: 'Asia/Kolkata' };
    for (let i = 0; i < 2; i++) {
      const result = await runJob(rt, sim, 'analytics', args);
      expect(result.status, result.error).toBe('ok');
      const from = DateTime.fromISO('2026-11-18', { zone: 'Asia/Kolkata' }).toISO()!;
      const to = DateTime.fromISO('2026-11-20', { zone: 'Asia/Kolkata' }).toISO()!;
      const { compared } = await expectEqualToTruth({ kind: 'serverless', timezone: 'Asia/Kolkata', from, to, endpointIds });
      expect(compared).toBe(48 * endpointIds.length);
    }
    const [bucket] = await queryRows<{ m: string }>(rt, `SELECT toString(min(bucket)) AS m FROM analytics_buckets WHERE timezone = 'Asia/Kolkata'`);
    expect(bucket.m).toBe('2026-11-17 18:30:00.000');
  });

  it('endpoints not owned are skipped and named in one warning; the others are complete, also with 20% faults', async () => {
    const ownedIds = owned().flatMap((a) => a.endpoints);
    const foreign = notOwned().flatMap((a) => a.endpoints);
    expect(foreign.length).toBeGreaterThan(0);
    // Foreign ids spread over the first and second call of 50.
    const configured = [...ownedIds];
    foreign.forEach((id, i) => configured.splice(Math.min(configured.length, 7 + i * 29), 0, id));
    const { runtime, lines } = capturing(rt, { ENDPOINT_IDS: configured });
    sim.setFaults(0.2);
    let result;
    try {
      result = await runJob(runtime, sim, 'analytics', { from: '2026-11-20', to: '2026-11-21', timezone: 'America/New_York', kinds: 'serverless' });
    } finally {
      sim.setFaults(0);
    }
    expect(result.status, result.error).toBe('ok');
    const warnings = lines.filter((l) => l.level === 40 && String(l.msg).includes('analytics skipped'));
    expect(warnings).toHaveLength(1);
    expect([...(warnings[0].endpoints as string[])].sort()).toEqual([...foreign].sort());
    for (const id of foreign) expect(String(warnings[0].msg)).toContain(id);
    const from = DateTime.fromISO('2026-11-20', { zone: 'America/New_York' }).toISO()!;
    const to = DateTime.fromISO('2026-11-21', { zone: 'America/New_York' }).toISO()!;
    const { compared } = await expectEqualToTruth({ kind: 'serverless', timezone: 'America/New_York', from, to, endpointIds: ownedIds });
    expect(compared).toBe(24 * ownedIds.length);

    const totals = await errorTotals(rt.store, { kind: 'serverless', timezone: 'America/New_York', timeframe: 'hour', from, to, endpoint_ids: [] });
    expect(totals.map((t: Row) => t.endpoint_id).sort()).toEqual([...ownedIds].sort());
  });

  it('a key that owns none of the endpoints fails the run with the key message', async () => {
    const { runtime } = capturing(rt, { ENDPOINT_IDS: notOwned().map((a) => a.endpoint_id) });
    const result = await runJob(runtime, sim, 'analytics', { kinds: 'serverless' });
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(/403/);
  });
});
