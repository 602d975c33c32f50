// The webhook receiver against the simulator's deliveries: Ed25519 verification with the served key set (and a
// refetch after a rotation), retries and repeats stored once, refused requests (missing headers, stale
// timestamp, bad signature) answered 401 with nothing stored.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startSim, type Sim } from '../../src/sim/index.js';
import { startService, type Service } from '../../src/service.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { KeySet, WEBHOOK_PATH, webhookExtension, webhookRoutes, jwksUrl } from '../../src/ingest/webhooks.js';
import { webhookDelivery } from '../../src/store/tables/webhook-deliveries.js';
import { queryRows, testConfig } from '../support/store.js';

/** Serves the simulator's key set, all of it or only its first key, and can fail. */
async function keySetProxy(simOf: () => Sim) {
  const state = { mode: 'all' as 'all' | 'first' | 'fail', fetches: 0, failuresLeft: 0 };
  const server: Server = createServer((_req, res) => {
    state.fetches++;
    if (state.mode === 'fail' || state.failuresLeft > 0) {
      state.failuresLeft = Math.max(0, state.failuresLeft - 1);
      res.writeHead(503).end();
      return;
    }
    const { keys } = simOf().webhooks.jwks();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: state.mode === 'first' ? keys.slice(0, 1) : keys }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`, state, close: () => new Promise((r) => server.close(r)) };
}

let sim: Sim;
let service: Service;
let proxy: Awaited<ReturnType<typeof keySetProxy>>;
let hookUrl: string;

beforeAll(async () => {
  proxy = await keySetProxy(() => sim);
  proxy.state.mode = 'first';
  const config = testConfig({ PORT: '0', JOBS_ENABLED: 'false', WEBHOOK_JWKS_URL: proxy.url, SVC_API_KEY: 'k'.repeat(20) });
  service = await startService(config, {
    logger: createLogger(config.LOG_LEVEL),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [webhookExtension({ minRefetchIntervalMs: 0 })],
  });
  hookUrl = `${service.url}${WEBHOOK_PATH}`;
  sim = await startSim({ seed: 12, apps: 20, webhookUrl: hookUrl, webhookBackoffBaseMs: 5, webhookMaxBackoffMs: 40, webhookRepeatRate: 0.3 });
});
afterAll(async () => {
  await sim?.close();
  await service?.close();
  await proxy?.close();
});

async function storedFinal(): Promise<Map<string, Record<string, unknown>>> {
  await service.writer.flush();
  const rows = await queryRows<Record<string, unknown>>(
    service,
    'SELECT request_id, gateway_request_id, user_id, status, error, error_types, payload_error, raw FROM webhook_deliveries FINAL',
  );
  return new Map(rows.map((r) => [r.request_id as string, r]));
}

describe('webhook receiver', () => {
  it('defaults the key set to SVC_BASE_URL/.well-known/jwks.json', () => {
    expect(jwksUrl({ WEBHOOK_JWKS_URL: undefined, SVC_BASE_URL: 'https://api.svc.example/' })).toBe('https://api.svc.example/.well-known/jwks.json');
    expect(jwksUrl({ WEBHOOK_JWKS_URL: 'https://keys.example/jwks.json', SVC_BASE_URL: 'https://api.svc.example' })).toBe('https://keys.example/jwks.json');
  });

  it('verifies a delivery, then after a key rotation refetches the key set once and verifies again', async () => {
    const app = sim.world.apps.find((a) => a.ownedByCaller && a.dormancy === 0)!;
    const reqs = sim.truth.requestList({ endpointId: app.endpointId, from: '2026-11-21T00:00:00Z', to: '2026-11-21T12:00:00Z' });
    const first = await sim.webhooks.deliver({ requestId: reqs[0].request_id, url: hookUrl });
    expect(first.attempts.map((a) => a.status)).toEqual([200]);
    expect(proxy.state.fetches).toBe(1);

    sim.webhooks.rotate(); // signed with the second key, which the cached set does not hold
    proxy.state.mode = 'all';
    const second = await sim.webhooks.deliver({ requestId: reqs[1].request_id, url: hookUrl });
    expect(second.attempts.map((a) => a.status)).toEqual([200]);
    expect(proxy.state.fetches).toBe(2);
    sim.webhooks.rotate();

    const stored = await storedFinal();
    for (const d of [first, second]) {
      const body = JSON.parse(d.body) as Record<string, unknown>;
      expect(stored.get(d.requestId)).toMatchObject({ request_id: d.requestId, gateway_request_id: body.gateway_request_id, user_id: sim.world.userId, status: body.status, raw: d.body });
    }
    const one = await webhookDelivery(service.store, { request_id: first.requestId });
    expect(one).toHaveLength(1);
  });

  it('stores every delivery of the clock-driven run once, repeats included, with its fields', async () => {
    const before = sim.webhooks.sent().length;
    sim.clock.advance(2 * 3_600_000); // requests of webhook apps finishing in these two hours are delivered
    await sim.webhooks.idle(); // with their repeats (30%), a few ms later
    const all = sim.webhooks.sent().slice(before);
    const repeats = all.filter((d) => d.repeat);
    expect(all.filter((d) => !d.repeat).length).toBeGreaterThan(10);
    expect(repeats.length).toBeGreaterThan(0);
    expect(all.every((d) => d.outcome === 'delivered')).toBe(true);
    expect(all.some((d) => d.status === 'ERROR')).toBe(true);

    const stored = await storedFinal();
    const ids = new Set(all.map((d) => d.requestId));
    for (const id of ids) {
      const d = all.find((x) => x.requestId === id)!;
      const body = JSON.parse(d.body) as { gateway_request_id: string; status: string; error?: string; payload_error?: string; payload: { detail?: Array<{ type: string }> } | null };
      expect(stored.get(id)).toEqual({
        request_id: id,
        gateway_request_id: body.gateway_request_id,
        user_id: sim.world.userId,
        status: body.status,
        error: body.error ?? '',
        error_types: [...new Set((body.payload?.detail ?? []).map((x) => x.type))],
        payload_error: body.payload_error ?? '',
        raw: d.body,
      });
    }
    const [counts] = await queryRows<{ final: string; all: string }>(
      service,
      'SELECT (SELECT count() FROM webhook_deliveries FINAL WHERE has({ids:Array(String)}, request_id)) AS final, (SELECT count() FROM webhook_deliveries WHERE has({ids:Array(String)}, request_id)) AS all',
      { ids: [...ids] },
    );
    expect(Number(counts.final)).toBe(ids.size);
    expect(Number(counts.all)).toBeGreaterThanOrEqual(ids.size); // repeats land as rows that merges collapse
  });

  it('a delivery the receiver cannot verify yet (key set down) is retried by the platform and stored once', async () => {
    const rt = service;
    const fresh = await keySetProxy(() => sim);
    fresh.state.failuresLeft = 2;
    const app: FastifyInstance = Fastify();
    await app.register(webhookRoutes, { keySet: new KeySet(fresh.url, { minRefetchIntervalMs: 0, failureMemoryMs: 0 }), writer: rt.writer, registry: new Registry() });
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}${WEBHOOK_PATH}`;
      const d = await sim.webhooks.deliver({ requestId: 'retried-request', url, body: { request_id: 'retried-request', gateway_request_id: 'gw-9', status: 'ERROR', error: 'Request failed with status code 504', payload: { detail: [{ loc: ['body'], msg: 'x', type: 'timeout_error' }, { type: 'timeout_error' }, { type: 'runtime_error' }] } } });
      expect(d.attempts.map((a) => a.status)).toEqual([503, 503, 200]);
      const stored = await storedFinal();
      expect(stored.get('retried-request')).toMatchObject({ gateway_request_id: 'gw-9', status: 'ERROR', error: 'Request failed with status code 504', error_types: ['timeout_error', 'runtime_error'] });
    } finally {
      await app.close();
      await fresh.close();
    }
  });

  it('a signed delivery with an `error` nested 100,000 deep (issue 28.5): 200 at once, stored with what maps and its raw body; the field in ingest_rejects', async () => {
    // Was: 500 on every retry (JSON.stringify of the field overflowed the stack), never stored. Built as text:
    // JSON.stringify cannot write a value this deep.
    const deepError = `${'['.repeat(100_000)}"x"${']'.repeat(100_000)}`;
    const body = `{"request_id":"deep-error","gateway_request_id":"gw-deep","status":"ERROR","error":${deepError},"payload":{"detail":[{"loc":["body"],"msg":"m","type":"runtime_error"}]}}`;
    const d = await sim.webhooks.deliver({ requestId: 'deep-error', url: hookUrl, body });
    expect(d.attempts.map((a) => a.status)).toEqual([200]);
    const stored = await storedFinal();
    expect(stored.get('deep-error')).toEqual({
      request_id: 'deep-error',
      gateway_request_id: 'gw-deep',
      user_id: sim.world.userId,
      status: 'ERROR',
      error: '',
      error_types: ['runtime_error'],
      payload_error: '',
      raw: body,
    });
    const rejects = await queryRows<{ reason: string; raw: string }>(
      service,
      "SELECT reason, raw FROM ingest_rejects WHERE source = 'webhook' AND batch_id = 'deep-error'",
    );
    expect(rejects).toEqual([
      { reason: 'error: too_deep: nested 100000 levels deep; at most 1000 can be stored (stored empty; the raw body keeps it)', raw: '['.repeat(64 * 1024) },
    ]);
  });

  it('refuses missing headers, a stale timestamp and a bad signature with 401 and a reason; stores nothing', async () => {
    // A genuine delivery captured, then replayed with changes.
    const captured: Array<{ headers: Record<string, string>; body: string }> = [];
    const catcher = createServer(async (req, res) => {
      let body = '';
      for await (const c of req) body += String(c);
      captured.push({ headers: req.headers as Record<string, string>, body });
      res.writeHead(200).end();
    });
    await new Promise<void>((r) => catcher.listen(0, '127.0.0.1', r));
    await sim.webhooks.deliver({ requestId: 'never-stored', url: `http://127.0.0.1:${(catcher.address() as AddressInfo).port}/`, body: { request_id: 'never-stored', gateway_request_id: 'g', status: 'OK', payload: {} } });
    await new Promise((r) => catcher.close(r));
    const { headers, body } = captured[0];
    const send = async (h: Record<string, string>, b = body) => {
      const res = await request(hookUrl, { method: 'POST', headers: { 'content-type': 'application/json', ...h }, body: b });
      return { status: res.statusCode, body: (await res.body.json()) as { detail: string } };
    };
    const pick = (...names: string[]) => Object.fromEntries(names.map((n) => [n, headers[n]]));
    const all = pick('x-svc-webhook-request-id', 'x-svc-webhook-user-id', 'x-svc-webhook-timestamp', 'x-svc-webhook-signature');

    const missing = await send(pick('x-svc-webhook-request-id', 'x-svc-webhook-user-id'));
    expect(missing).toMatchObject({ status: 401, body: { title: 'Unauthorized', detail: 'missing X-Svc-Webhook-Timestamp, X-Svc-Webhook-Signature' } });
    // wall-clock: the webhook receiver checks the signed timestamp against the machine's clock
    const stale = await send({ ...all, 'x-svc-webhook-timestamp': String(Math.floor(Date.now() / 1000) - 301) });
    expect(stale.status).toBe(401);
    expect(stale.body.detail).toMatch(/more than 300 s away/);
    const tampered = await send(all, body.replace('"OK"', '"ERROR"'));
    expect(tampered.status).toBe(401);
    expect(tampered.body.detail).toMatch(/does not verify with any key/);
    const otherId = await send({ ...all, 'x-svc-webhook-request-id': 'someone-else' });
    expect(otherId.status).toBe(401);
    const garbage = await send({ ...all, 'x-svc-webhook-signature': 'zz' });
    expect(garbage.body.detail).toMatch(/128 hex digits/);
    // The genuine one passes.
    expect((await send(all)).status).toBe(200);

    const stored = await storedFinal();
    expect(stored.has('someone-else')).toBe(false);
    expect(stored.get('never-stored')?.status).toBe('OK'); // only the genuine body
    const metrics = await (await request(`${service.url}/metrics`)).body.text();
    for (const outcome of ['accepted', 'missing_headers', 'stale_timestamp', 'invalid_signature']) {
      expect(metrics).toMatch(new RegExp(`^tallyhouse_webhooks_total\\{outcome="${outcome}"\\} [1-9]`, 'm'));
    }
  });
});
