// Issue 17: the Grafana Faro receiver. The real SDK (@grafana/faro-core's initializeFaro with a transport that posts
// getTransportBody(items)) sends; each item is stored with its session, meta and attributes (expected values are
// the literals pushed here). A session that mentions simulated requests answers, through the sessions route, the
// simulator's truth (status, billable units) and the cost at the hand-written unit price or as billed.
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BaseTransport, getTransportBody, initializeFaro, LogLevel, VERSION, type TransportItem } from '@grafana/faro-core';
import { startSim, type Sim } from '../../src/sim/index.js';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { sessionRoutes } from '../../src/api/session-routes.js';
import { faroExtension, FARO_PATH } from '../../src/ingest/faro/extension.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { decimalToScaled } from '../../src/values.js';
import { queryRows, testConfig } from '../support/store.js';
import { runJob } from '../support/jobs.js';

const NOW = '2026-11-21T12:00:00Z';
const KEY = 'faro-key-0123456789abcdef';
const TOKEN = 'test-token-0123456789abcdef';
const ORIGIN = 'https://shop.example.com';
let sim: Sim;
let service: Service;
let endpoint: string;

const pricesDir = mkdtempSync(join(tmpdir(), 'th-faro-prices-'));
const PRICES_FILE = join(pricesDir, 'prices.json');

beforeAll(async () => {
  sim = await startSim({ seed: 11, now: NOW, days: 3, apps: 3 });
  endpoint = sim.world.apps.find((a) => a.ownedByCaller)!.endpointId;
  // Hand-written price: 0.0001 USD per billable unit from before the history starts.
  writeFileSync(PRICES_FILE, JSON.stringify([{ endpoint_id: endpoint, unit_price: '0.0001', currency: 'USD', effective_from: '2026-01-01' }]));
  service = await startService(
    testConfig({
      PORT: '0',
      API_TOKENS: TOKEN,
      FARO_APP_KEYS: `shop-web=${KEY}`,
      FARO_ALLOWED_ORIGINS: ORIGIN,
      FARO_MAX_BODY_BYTES: String(512 * 1024), // room for an item nested 100,000 deep (200 KB)
      PRICES_FILE,
      ENDPOINT_IDS: endpoint,
    }),
    { logger: createLogger('silent'), registry: createRegistry({ defaultMetrics: false }), extensions: [faroExtension(), apiExtension([sessionRoutes])] },
  );
}, 120_000);
afterAll(async () => {
  await service?.close();
  await sim?.close();
});

const post = (body: string | Buffer, headers: Record<string, string> = {}) =>
  fetch(`${service.url}${FARO_PATH}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': KEY, ...headers }, body });

async function itemsOf(session: string, expected: number) {
  let rows: Array<Record<string, any>> = [];
  for (let i = 0; i < 600 && rows.length < expected; i++) {
    rows = await queryRows(service, `SELECT * EXCEPT raw, toString(timestamp) AS ts FROM faro_items WHERE session_id = {s:String} ORDER BY kind`, { s: session });
    if (rows.length < expected) await new Promise((r) => setTimeout(r, 50));
  }
  return rows;
}

class PostTransport extends BaseTransport {
  readonly name = 'tallyhouse-test-post';
  readonly version = VERSION;
  readonly answers: number[] = [];
  send(items: TransportItem | TransportItem[]) {
    const body = getTransportBody(Array.isArray(items) ? items : [items]);
    void post(JSON.stringify(body), { 'x-faro-session-id': 'header-session' }).then((r) => this.answers.push(r.status));
  }
  override isBatched() {
    return true;
  }
  override getIgnoreUrls() {
    return [];
  }
}

describe('Faro receiver', () => {
  it('stores what the Faro SDK sends: logs, an exception, a measurement and an event, with session, meta and attributes', async () => {
    const transport = new PostTransport();
    const faro = initializeFaro({
      app: { name: 'shop-web', version: '1.2.3', environment: 'production', release: 'r42', namespace: 'shop' },
      transports: [transport],
      instrumentations: [],
      metas: [],
      batching: { enabled: true, sendTimeout: 10, itemLimit: 50 },
      dedupe: false,
      isolate: true,
      unpatchedConsole: console,
      internalLoggerLevel: 0,
      parseStacktrace: () => ({ frames: [] }),
      paused: false,
      preventGlobalExposure: true,
      sessionTracking: { enabled: false },
      trackResources: false,
    } as unknown as Parameters<typeof initializeFaro>[0]);
    faro.api.setSession({ id: 'sess-sdk', attributes: { plan: 'pro' } });
    faro.api.setUser({ id: 'user-7' });
    faro.api.pushLog(['checkout started'], { level: LogLevel.WARN, context: { cart: '3 items' } });
    faro.api.pushError(new Error('payment widget failed'));
    faro.api.pushMeasurement({ type: 'queue_wait', values: { ms: 1234, retries: 2 } });
    faro.api.pushEvent('submit', { button: 'pay' }, 'checkout');

    const rows = await itemsOf('sess-sdk', 4);
    expect(transport.answers.every((s) => s === 202)).toBe(true);
    const pick = (r: Record<string, any>) => ({
      kind: r.kind, app: r.app, app_namespace: r.app_namespace, release: r.release, app_version: r.app_version, environment: r.environment,
      session_id: r.session_id, user_id: r.user_id, level: r.level, message: r.message, domain: r.domain, values: r.values, attributes: r.attributes,
    });
    const meta = { app: 'shop-web', app_namespace: 'shop', release: 'r42', app_version: '1.2.3', environment: 'production', session_id: 'sess-sdk', user_id: 'user-7' };
    expect(rows.map(pick)).toEqual([
      { kind: 'event', ...meta, level: '', message: 'submit', domain: 'checkout', values: {}, attributes: { plan: 'pro', button: 'pay' } },
      { kind: 'exception', ...meta, level: 'error', message: 'Error: payment widget failed', domain: '', values: {}, attributes: { plan: 'pro' } },
      { kind: 'log', ...meta, level: 'warn', message: 'checkout started', domain: '', values: {}, attributes: { plan: 'pro', cart: '3 items' } },
      { kind: 'measurement', ...meta, level: '', message: 'queue_wait', domain: '', values: { ms: 1234, retries: 2 }, attributes: { plan: 'pro' } },
    ]);
  });

  it('a session that mentions simulated requests answers their status, billable units and cost', async () => {
    const from = '2026-11-21T06:00:00Z';
    const to = '2026-11-21T10:00:00Z';
    const served = sim.truth.requestList({ endpointId: endpoint, from, to }).filter((r) => r.status_code === 200 && Date.parse(r.billed_at) < Date.parse(NOW));
    // The simulator is seeded: this window holds two failed requests (503), so the failed path is always checked.
    const failed = sim.truth.requestList({ endpointId: endpoint, from, to }).find((r) => r.status_code >= 500)!;
    const call = sim.truth.modelCalls({ from, to })[0];
    expect(served.length).toBeGreaterThan(0);
    expect(failed?.status_code).toBe(503);
    expect(call).toBeDefined();
    expect((await runJob(service, sim, 'requests', { from, to })).status).toBe('ok');
    expect((await runJob(service, sim, 'models', { from: '2026-11-21', to: '2026-11-22', timezone: 'UTC' })).status).toBe('ok');
    const ok = served[0];
    const body = {
      meta: { app: { name: 'shop-web' }, session: { id: 'sess-join' } },
      events: [{ name: 'generate', attributes: { request_id: ok.request_id }, timestamp: ok.ended_at }],
      logs: [
        { message: `polling https://queue.svc.run/svc-ai/x/requests/${call.request_id}/status`, level: 'info', context: {}, timestamp: call.ended_at },
        { message: 'failed', level: 'error', context: { requestId: failed.request_id }, timestamp: failed.ended_at },
      ],
    };
    expect((await post(JSON.stringify(body))).status).toBe(202);
    await itemsOf('sess-join', body.logs.length + 1);
    const res = await fetch(`${service.url}/api/v1/sessions/sess-join`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    const session = (await res.json()) as { requests: Array<Record<string, any>> };
    const byId = new Map(session.requests.map((r) => [r.request_id, r]));
    const s = byId.get(ok.request_id)!;
    expect([s.product, s.status_code, Number(s.billable_units), s.currency]).toEqual(['serverless', 200, ok.billable_units, 'USD']);
    // Hand-derived: billable units x 0.0001 USD.
    expect(decimalToScaled(s.cost, 12)).toBe(decimalToScaled(String(ok.billable_units), 12) / 10_000n);
    const m = byId.get(call.request_id)!;
    expect([m.product, m.endpoint_id, decimalToScaled(m.cost, 9), m.currency]).toEqual(['model_api', call.endpoint_id, call.cost_total_nanos, call.currency]);
    expect([byId.get(failed.request_id)?.status_code, byId.get(failed.request_id)?.outcome]).toEqual([503, 'error']);

    const list = await fetch(`${service.url}/api/v1/sessions?from=2026-11-21T00:00:00Z&to=2026-11-22T00:00:00Z`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const listed = (await list.json()) as { sessions: Array<Record<string, any>> };
    expect(list.status, JSON.stringify(listed)).toBe(200);
    const ranked = listed.sessions.find((x) => x.session_id === 'sess-join')!;
    expect(ranked.requests).toBe(body.logs.length + 1);
    expect(ranked.cost_by_currency[call.currency]).toBeDefined();
  });

  it('refuses what it must: a wrong key (401, nothing stored), a foreign origin (no CORS grant), too large (413), bad JSON (400)', async () => {
    const payload = (session: string, message: string) => JSON.stringify({ meta: { session: { id: session } }, logs: [{ message, level: 'info', timestamp: NOW }] });
    expect((await post(payload('sess-refused', 'wrong key'), { 'x-api-key': 'wrong-key-0123456789abcdef' })).status).toBe(401);
    expect((await post(payload('sess-refused', 'no key'), { 'x-api-key': '' })).status).toBe(401);
    const preflight = await fetch(`${service.url}${FARO_PATH}`, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    const allowed = await fetch(`${service.url}${FARO_PATH}`, { method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-method': 'POST' } });
    expect(allowed.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    // CORS binds browsers only: a sender with the key and a foreign Origin header is stored (in its own session),
    // but its answer grants no browser the right to read it.
    const foreign = await post(payload('sess-foreign-origin', 'foreign origin'), { origin: 'https://evil.example' });
    expect([foreign.status, foreign.headers.get('access-control-allow-origin')]).toEqual([202, null]);
    expect((await post('x'.repeat(512 * 1024 + 1))).status).toBe(413);
    expect((await post(gzipSync(Buffer.from(payload('sess-refused', 'y'.repeat(600_000)))), { 'content-encoding': 'gzip' })).status).toBe(413);
    const bad = await post('{"meta": {"session": {"id": "sess-refused"}}, "logs": [');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { detail: string }).detail).toMatch(/not JSON/);
    // Then one accepted payload in the same session: the spool replays in order, so once it is stored anything
    // accepted before it is stored too. Only it is there.
    expect((await post(payload('sess-refused', 'the accepted one'))).status).toBe(202);
    expect((await itemsOf('sess-refused', 1)).map((r) => r.message)).toEqual(['the accepted one']);
    expect((await itemsOf('sess-foreign-origin', 1)).map((r) => r.message)).toEqual(['foreign origin']);
  });

  it('one bad item beside good ones: 202, the good ones stored, the bad one in ingest_rejects with its reason', async () => {
    const body = {
      meta: { app: { name: 'shop-web' }, session: { id: 'sess-mixed' } },
      measurements: [
        { type: 'ttfb', values: { ms: 120 }, timestamp: NOW },
        { type: 'broken', values: { ms: 'fast' }, timestamp: NOW },
      ],
      logs: [{ message: 'fine', level: 'info', context: {}, timestamp: NOW }],
    };
    const res = await post(JSON.stringify(body));
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ accepted: 2, rejected: 1 });
    const rows = await itemsOf('sess-mixed', 2);
    expect(rows.map((r) => r.message).sort()).toEqual(['fine', 'ttfb']);
    let rejects: Array<{ reason: string; raw: string }> = [];
    for (let i = 0; i < 200 && rejects.length === 0; i++) {
      rejects = await queryRows(service, `SELECT reason, raw FROM ingest_rejects WHERE source = 'faro' AND raw LIKE '%broken%'`);
      if (rejects.length === 0) await new Promise((r) => setTimeout(r, 50));
    }
    expect(rejects).toEqual([{ reason: 'measurement: values must be an object of finite numbers', raw: JSON.stringify(body.measurements[1]) }]);
  });

  async function rejectsOf(batchId: string, expected: number) {
    let rows: Array<{ line: number; reason: string; raw: string }> = [];
    for (let i = 0; i < 600 && rows.length < expected; i++) {
      rows = await queryRows(service, `SELECT line, reason, raw FROM ingest_rejects WHERE source = 'faro' AND batch_id = {b:String} ORDER BY line`, { b: batchId });
      if (rows.length < expected) await new Promise((r) => setTimeout(r, 50));
    }
    return rows;
  }
  const batchIdOf = (body: string) => createHash('sha256').update('shop-web').update('\n').update(body).digest('hex');

  it('an item nested 100,000 deep beside valid ones (issue 28.5): 202, the valid ones stored, the deep one in ingest_rejects with its reason', async () => {
    // Built as text: JSON.stringify itself cannot write a value this deep. Depth, by hand: the item object 1,
    // its context object 2, then 100,000 arrays.
    const deep = `{"message":"deep","level":"info","context":{"x":${'['.repeat(100_000)}${']'.repeat(100_000)}},"timestamp":"${NOW}"}`;
    const good = (m: string) => JSON.stringify({ message: m, level: 'info', context: {}, timestamp: NOW });
    const body = `{"meta":{"session":{"id":"sess-deep"}},"logs":[${good('before deep')},${deep},${good('after deep')}]}`;
    const res = await post(body);
    expect(res.status).toBe(202);
    const reason = 'log: too_deep: nested 100002 levels deep; at most 1000 can be stored';
    expect(await res.json()).toEqual({ accepted: 2, rejected: 1, duplicate: false, errors: [{ item: 1, reason }] });
    expect((await itemsOf('sess-deep', 2)).map((r) => r.message).sort()).toEqual(['after deep', 'before deep']);
    const rejects = await rejectsOf(batchIdOf(body), 1);
    expect(rejects.map((r) => [r.line, r.reason, r.raw.length])).toEqual([[1, reason, 64 * 1024]]);
    expect(rejects[0].raw.startsWith('{"message":"deep","level":"info","context":{"x":[[[[')).toBe(true);
  });

  it('timestamps are strict ISO 8601 with a zone, within retention and not over an hour ahead (issue 28.6); the answer counts each', async () => {
    // Were accepted ("accepted: 5") and stored in 2001 or past retention, then dropped by the TTL at once.
    // wall-clock: the Faro receiver judges item timestamps (retention, future) by the machine's clock
    const future = new Date(Date.now() + 2 * 3_600_000).toISOString();
    const stamps = [NOW, '1', '12', 'Tue 5', '2026-11-21T10:00:00', '2026-11-21', '2001-01-01T00:00:00Z', future, '2026-11-21T11:00:00+01:00'];
    const body = JSON.stringify({ meta: { session: { id: 'sess-stamps' } }, logs: stamps.map((timestamp, i) => ({ message: `stamp ${i}`, level: 'info', context: {}, timestamp })) });
    const res = await post(body);
    expect(res.status).toBe(202);
    const format = 'log: timestamp is not an ISO 8601 date-time with a zone (like 2026-11-21T10:00:00.000Z)';
    const reasons = [
      [1, format], [2, format], [3, format], [4, format], [5, format],
      [6, 'log: timestamp is older than the 3650-day retention (FARO_RETENTION_DAYS): it would be dropped as soon as stored'],
      [7, "log: timestamp is more than 60 minutes ahead of the receiver's clock"],
    ];
    expect(await res.json()).toEqual({ accepted: 2, rejected: 7, duplicate: false, errors: reasons.map(([item, reason]) => ({ item, reason })) });
    const rows = await itemsOf('sess-stamps', 2);
    expect(rows.map((r) => [r.message, r.ts]).sort()).toEqual([['stamp 0', '2026-11-21 12:00:00.000'], ['stamp 8', '2026-11-21 10:00:00.000']]);
    const rejects = await rejectsOf(batchIdOf(body), 7);
    expect(rejects.map((r) => [r.line, r.reason])).toEqual(reasons);
  });

  it('a session names at most FARO_SESSION_MAX_REQUEST_IDS (200) request ids (issue 29.6): items past it are stored without one, and the answer says so', async () => {
    // Was: one payload planted a session naming 5,000 request ids (the key ships in every front-end bundle).
    const uuid = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
    const event = (i: number) => ({ name: `e${i}`, attributes: { request_id: uuid(i) }, timestamp: NOW });
    const first = await post(JSON.stringify({ meta: { session: { id: 'sess-many-ids' } }, events: Array.from({ length: 250 }, (_, i) => event(i)) }));
    expect(first.status).toBe(202);
    expect(await first.json()).toEqual({
      accepted: 250,
      rejected: 0,
      duplicate: false,
      request_ids_over_limit: 50,
      message: '50 items were stored without their request id: their session already names FARO_SESSION_MAX_REQUEST_IDS (200) request ids',
    });
    // A later payload: an id the session already names keeps it; new ones are past the cap.
    const second = await post(JSON.stringify({ meta: { session: { id: 'sess-many-ids' } }, events: [event(7), event(300), event(301)] }));
    expect(await second.json()).toMatchObject({ accepted: 3, request_ids_over_limit: 2 });
    const rows = await itemsOf('sess-many-ids', 253);
    expect(rows).toHaveLength(253);
    const named = new Set(rows.filter((r) => r.request_id !== '').map((r) => r.request_id));
    // The first 200 distinct ids, in the order the items came.
    expect([...named].sort()).toEqual(Array.from({ length: 200 }, (_, i) => uuid(i)));
    expect(rows.filter((r) => r.request_id === '').map((r) => r.message).sort()).toEqual(
      [...Array.from({ length: 50 }, (_, i) => `e${200 + i}`), 'e300', 'e301'].sort(),
    );
    // Those keep the id in their attributes (and raw JSON): nothing is lost, only the join.
    expect(rows.find((r) => r.message === 'e300')!.attributes).toEqual({ request_id: uuid(300) });
  });

  it('the simulator plays a front end: its sessions name simulated requests, and they arrive', async () => {
    const now = Date.parse(NOW);
    const past = sim.frontEnd.payloads(now - 3_600_000, now);
    const named = past.flatMap((p) => (p.events as Array<{ attributes: { request_id: string; endpoint_id: string } }>).map((e) => e.attributes));
    // Each names a request the simulator served (its truth lists it for that endpoint).
    const sample = named.filter((x) => !x.endpoint_id.startsWith('svc-ai/')).slice(0, 5);
    expect(sample.length).toBeGreaterThan(0);
    for (const x of sample) {
      const truth = sim.truth.requestList({ endpointId: x.endpoint_id, from: new Date(now - 7_200_000).toISOString(), to: NOW });
      expect(truth.some((r) => r.request_id === x.request_id), x.request_id).toBe(true);
    }
    // Moving the clock plays the next hour to the receiver.
    const next = sim.frontEnd.payloads(now, now + 3_600_000).reduce((n, p) => n + (p.events as unknown[]).length, 0);
    expect(next).toBeGreaterThan(0);
    sim.frontEnd.setTarget({ url: `${service.url}${FARO_PATH}`, key: KEY });
    sim.clock.advance(3_600_000);
    await sim.frontEnd.idle();
    sim.frontEnd.setTarget(undefined);
    const count = async () =>
      Number((await queryRows<{ n: string }>(service, `SELECT count() AS n FROM faro_items WHERE startsWith(session_id, 'demo-') AND kind = 'event'`))[0].n);
    for (let i = 0; i < 200 && (await count()) < next; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await count()).toBe(next);
  });
});

describe('Faro rate limit (README: "429 with Retry-After over FARO_RATE_LIMIT_PER_SECOND per key")', () => {
  it('over the rate: 429 with Retry-After, before the body is read; nothing of it stored', async () => {
    await service.close();
    service = await startService(testConfig({ PORT: '0', FARO_APP_KEYS: `shop-web=${KEY}`, FARO_RATE_LIMIT_PER_SECOND: '1' }), {
      logger: createLogger('silent'),
      registry: createRegistry({ defaultMetrics: false }),
      extensions: [faroExtension()],
    });
    const payload = (message: string) => JSON.stringify({ meta: { session: { id: 'sess-rate' } }, logs: [{ message, level: 'info', timestamp: NOW }] });
    // A bucket of one token, refilled at one a second: two posts within a second of each other meet a refusal.
    // Posted one after another until one does (bounded by the test timeout, whatever the machine's load).
    const accepted: string[] = [];
    let refused: { status: number; retryAfter: string | null; body: unknown; message: string } | undefined;
    for (let i = 0; i < 1000 && !refused; i++) {
      const res = await post(payload(`rate ${i}`));
      if (res.status === 429) refused = { status: 429, retryAfter: res.headers.get('retry-after'), body: await res.json(), message: `rate ${i}` };
      else {
        expect(res.status).toBe(202);
        accepted.push(`rate ${i}`);
      }
    }
    // By hand: the wait is ceil((1 - tokens) / 1 per second) with 0 <= tokens < 1, so 1 s.
    expect(refused && { status: refused.status, retryAfter: refused.retryAfter, body: refused.body }).toMatchObject({
      status: 429,
      retryAfter: '1',
      body: { title: 'Too Many Requests', detail: 'over FARO_RATE_LIMIT_PER_SECOND for shop-web; retry after 1 s' },
    });
    // Retried until accepted (the token comes back), then every accepted item is stored and the refused one is not.
    let retried = 429;
    for (let i = 0; i < 1000 && retried === 429; i++) {
      retried = (await post(payload('the retry'))).status;
      if (retried === 429) await new Promise((r) => setTimeout(r, 100));
    }
    expect(retried).toBe(202);
    const rows = await itemsOf('sess-rate', accepted.length + 1);
    expect(rows.map((r) => r.message).sort()).toEqual([...accepted, 'the retry'].sort());
    expect(rows.map((r) => r.message)).not.toContain(refused!.message);
  });
});
