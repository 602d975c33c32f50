// Issue 29, point 1: slow senders must not stop the push endpoints. 32 connections per endpoint (drain, webhooks,
// Faro) send plausible headers and then a byte every 5 s; meanwhile a correctly signed drain batch, a valid webhook
// and a Faro payload from another address are each answered 2xx, and every slow connection ends (408, a 503 for
// want of a slot from its address on webhooks and Faro, or closed; the drain's slots queue instead). The limits
// are the test's (shorter window and deadline, the same mechanism); expected counts follow from them:
// LOG_DRAIN_MAX_BODIES_PER_ADDRESS 2, WEBHOOK_MAX_BODIES_PER_ADDRESS 16, FARO_MAX_BODIES_PER_ADDRESS 4.
import { createHash, createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/service.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { logDrainExtension } from '../../src/ingest/drain/extension.js';
import { webhookExtension, WEBHOOK_PATH } from '../../src/ingest/webhooks.js';
import { faroExtension, FARO_PATH } from '../../src/ingest/faro/extension.js';
import { DRAIN_PATH } from '../../src/ingest/drain/auth.js';
import { testConfig } from '../support/store.js';

const SECRET = 'k'.repeat(64);
const TOKEN = 'drain-token-0123456789';
const FARO_KEY = 'faro-key-0123456789abcdef';
const SLOW = 32;
const SHARE = { drain: 2, webhooks: 16, faro: 4 } as const;
type Endpoint = keyof typeof SHARE;

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
let jwks: Server;
let service: Service;
let port: number;
/** Every test connection, destroyed before the service closes (a failing test must not leave it waiting on them). */
const sockets: Socket[] = [];

beforeAll(async () => {
  const jwk = publicKey.export({ format: 'jwk' });
  jwks = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })));
  await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
  const jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/.well-known/jwks.json`;
  const config = testConfig({
    PORT: '0',
    JOBS_ENABLED: 'false',
    SVC_API_KEY: 'test-api-key-0123456789',
    LOG_DRAIN_SECRET: SECRET,
    LOG_DRAIN_TOKEN: TOKEN,
    FARO_APP_KEYS: `web=${FARO_KEY}`,
    WEBHOOK_JWKS_URL: jwksUrl,
    // The test's limits: a body must bring 100 bytes per 15 s window; the whole request in 25 s. The window is what
    // the good requests have to be answered in while the slow ones hold their slots: wide, for a loaded machine.
    PUSH_BODY_MIN_BYTES_PER_SECOND: '100',
    PUSH_BODY_RATE_WINDOW_MS: '15000',
    PUSH_BODY_TIMEOUT_MS: '25000',
    LOG_DRAIN_MAX_BODIES_READING: '4',
    LOG_DRAIN_MAX_BODIES_PER_ADDRESS: String(SHARE.drain),
    WEBHOOK_MAX_BODIES_READING: '32',
    WEBHOOK_MAX_BODIES_PER_ADDRESS: String(SHARE.webhooks),
    FARO_MAX_BODIES_READING: '16',
    FARO_MAX_BODIES_PER_ADDRESS: String(SHARE.faro),
    // This file tests the plain rate rule and the shares: every slot open to unproven senders, the contended rule
    // off, refusals at once (test/ingest/steady-senders.test.ts tests those).
    LOG_DRAIN_UNPROVEN_MAX_BODIES_READING: '4',
    WEBHOOK_UNPROVEN_MAX_BODIES_READING: '32',
    PUSH_CONTENDED_MIN_BYTES_PER_SECOND: '0',
    PUSH_CONTENDED_MAX_BODY_MS: '0',
    PUSH_SLOT_MAX_WAIT_MS: '0',
  });
  service = await startService(config, {
    logger: createLogger(config.LOG_LEVEL),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [logDrainExtension(), webhookExtension(), faroExtension()],
  });
  port = Number(new URL(service.url).port);
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await service?.close();
  await new Promise<void>((r) => (jwks ? jwks.close(() => r()) : r()));
});

function webhookHeaders(requestId: string, body: Buffer): Record<string, string> {
  // wall-clock: the webhook receiver checks the signed timestamp against the machine's clock
  const ts = String(Math.floor(Date.now() / 1000));
  const message = `${requestId}\nusr_1\n${ts}\n${createHash('sha256').update(body).digest('hex')}`;
  return {
    'x-svc-webhook-request-id': requestId,
    'x-svc-webhook-user-id': 'usr_1',
    'x-svc-webhook-timestamp': ts,
    'x-svc-webhook-signature': sign(null, Buffer.from(message), privateKey).toString('hex'),
  };
}

/** Plausible headers for each endpoint: they pass every check made before the body is read. */
function slowHeaders(endpoint: Endpoint, i: number): { path: string; headers: Record<string, string> } {
  if (endpoint === 'drain') return { path: DRAIN_PATH, headers: { 'content-type': 'application/x-ndjson', 'x-svc-signature': 'ab'.repeat(32) } };
  if (endpoint === 'webhooks') return { path: WEBHOOK_PATH, headers: { 'content-type': 'application/json', ...webhookHeaders(`req-slow-${i}`, Buffer.from('{}')) } };
  return { path: FARO_PATH, headers: { 'content-type': 'application/json', 'x-api-key': FARO_KEY } };
}

interface SlowSender {
  endpoint: Endpoint;
  /** Resolves when the connection ends: the status it was answered with, or 'closed' when none came. */
  ended: Promise<number | 'closed'>;
  open: boolean;
  endedAt?: number;
}

/** A raw connection (from 127.0.0.1 unless told) that sends its headers, then one byte of its 1000-byte body every 5 s. */
function slowSender(endpoint: Endpoint, i: number, localAddress = '127.0.0.1', extraHeaders: Record<string, string> = {}): SlowSender {
  const { path, headers: plausible } = slowHeaders(endpoint, i);
  const headers = { ...plausible, ...extraHeaders };
  const socket = connect({ host: '127.0.0.1', port, localAddress });
  sockets.push(socket);
  const head = [`POST ${path} HTTP/1.1`, `host: 127.0.0.1:${port}`, 'content-length: 1000', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n');
  socket.write(head);
  socket.write('{');
  const timer = setInterval(() => socket.write(' '), 5_000);
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
  socket.on('error', () => undefined); // a reset is one way of being dropped
  const sender: SlowSender = {
    endpoint,
    open: true,
    ended: new Promise((resolve) =>
      socket.on('close', () => {
        clearInterval(timer);
        sender.open = false;
        sender.endedAt = ++events;
        const status = /^HTTP\/1\.1 (\d{3})/.exec(received);
        resolve(status ? Number(status[1]) : 'closed');
      }),
    ),
  };
  return sender;
}

/** A complete request from another address (127.0.0.2): the legitimate sender. */
function post(path: string, headers: Record<string, string>, body: Buffer, localAddress = '127.0.0.2'): Promise<{ status: number; body: any; at: number }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, localAddress, method: 'POST', path, headers: { ...headers, 'content-length': String(body.length) } });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined, at: ++events }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function drainBodiesReading(): Promise<number> {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  return Number(/^tallyhouse_push_bodies_reading\{endpoint="drain"\} (\d+)$/m.exec(text)?.[1] ?? NaN);
}

async function drainBodiesWaiting(): Promise<number> {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  return Number(/^tallyhouse_push_bodies_waiting\{endpoint="drain"\} (\d+)$/m.exec(text)?.[1] ?? NaN);
}

/** Order of events (answers, ends), to say which came first without a clock. */
let events = 0;

async function until(what: string, check: () => boolean): Promise<void> {
  while (!check()) {
    await new Promise((r) => setTimeout(r, 25));
    if (!service) throw new Error(`gave up waiting for ${what}`);
  }
}

describe('slow senders on every push endpoint', () => {
  it('32 connections per endpoint trickling a byte every 5 s: signed drain batch, webhook and Faro payload from another address answered 2xx while they hang; every slow one ends', async () => {
    const senders: SlowSender[] = [];
    const answered: Array<number | 'closed'>[] = [];
    for (const endpoint of Object.keys(SHARE) as Endpoint[]) {
      for (let i = 0; i < SLOW; i++) {
        const s = slowSender(endpoint, i);
        const at = senders.push(s) - 1;
        void s.ended.then((status) => (answered[at] = [status]));
      }
    }
    // State, not time: webhooks and Faro have refused every slow connection beyond their per-address share (503),
    // and the drain (whose slots queue: the platform does not retry a failed batch) has its share reading, the rest
    // waiting. The shares are what hold read slots.
    const refused = (endpoint: Endpoint) => senders.filter((s, i) => s.endpoint === endpoint && answered[i]?.[0] === 503).length;
    await until('the per-address refusals', () => refused('webhooks') === SLOW - SHARE.webhooks && refused('faro') === SLOW - SHARE.faro);
    while ((await drainBodiesReading()) < SHARE.drain) await new Promise((r) => setTimeout(r, 25));
    expect(await drainBodiesReading()).toBe(SHARE.drain);
    const openOf = (endpoint: Endpoint) => senders.filter((s) => s.endpoint === endpoint && s.open).length;
    expect((Object.keys(SHARE) as Endpoint[]).map((e) => openOf(e))).toEqual([SLOW, SHARE.webhooks, SHARE.faro]);

    const batch = Buffer.from(`${JSON.stringify({ timestamp: '2026-11-21T10:00:00.123Z', level: 'INFO', message: 'through', svc_app_name: 'acme-app' })}\n`);
    const webhook = Buffer.from(JSON.stringify({ request_id: 'req-good', status: 'OK', payload: {} }));
    const faro = Buffer.from(JSON.stringify({ meta: { app: { name: 'web' }, session: { id: 'sess-1' } }, logs: [{ message: 'hi', level: 'info', timestamp: '2026-11-21T10:00:00.000Z', context: {} }] }));
    const sentAt = performance.now();
    const [[drainRes, drainOpen], [webhookRes, webhookOpen], [faroRes, faroOpen]] = await Promise.all([
      post(DRAIN_PATH, { 'content-type': 'application/x-ndjson', 'x-svc-signature': createHmac('sha256', SECRET).update(batch).digest('hex') }, batch).then((r) => [r, openOf('drain')] as const),
      post(WEBHOOK_PATH, { 'content-type': 'application/json', ...webhookHeaders('req-good', webhook) }, webhook).then((r) => [r, openOf('webhooks')] as const),
      post(FARO_PATH, { 'content-type': 'application/json', 'x-api-key': FARO_KEY }, faro).then((r) => [r, openOf('faro')] as const),
    ]);

    // Reported, not asserted (tests assert no timing): the goal is an answer within 2 s.
    console.log(`good requests beside ${SLOW} slow connections per endpoint answered in ${Math.round(performance.now() - sentAt)} ms (all three)`);
    expect([drainRes.status, drainRes.body.accepted, drainRes.body.rejected]).toEqual([200, 1, 0]);
    expect([webhookRes.status, webhookRes.body.request_id]).toEqual([200, 'req-good']);
    expect([faroRes.status, faroRes.body.accepted, faroRes.body.rejected]).toEqual([202, 1, 0]);
    // Answered while slow connections of the same endpoint still held their slots.
    expect(drainOpen).toBeGreaterThan(0);
    expect(webhookOpen).toBeGreaterThan(0);
    expect(faroOpen).toBeGreaterThan(0);

    // Every slow connection ends: those that held slots dropped for their rate, the drain's waiters for their rate
    // once they got a slot or at the request deadline (408, or closed under it).
    const ends = await Promise.all(senders.map((s) => s.ended));
    for (const endpoint of Object.keys(SHARE) as Endpoint[]) {
      const mine = ends.filter((_, i) => senders[i].endpoint === endpoint);
      const refusedHere = endpoint === 'drain' ? 0 : SLOW - SHARE[endpoint];
      expect(mine.filter((e) => e === 503)).toHaveLength(refusedHere);
      expect(mine.filter((e) => e === 408 || e === 'closed')).toHaveLength(SLOW - refusedHere);
    }
  }, 120_000);

  it('a body that keeps the minimum rate but is not whole by PUSH_BODY_TIMEOUT_MS is dropped (408 or closed)', async () => {
    // 1 KiB every 200 ms (5 KiB/s, far over 100 B/s) of a 10 MB body: only the deadline can end it.
    const socket = connect({ host: '127.0.0.1', port, localAddress: '127.0.0.3' });
    sockets.push(socket);
    const body = Buffer.from('{}');
    const headers = webhookHeaders('req-steady', body);
    socket.write([`POST ${WEBHOOK_PATH} HTTP/1.1`, `host: 127.0.0.1:${port}`, 'content-type: application/json', `content-length: ${10 * 1024 * 1024}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n'));
    let sent = 0;
    const timer = setInterval(() => {
      sent += 1024;
      socket.write(Buffer.alloc(1024, 0x20));
    }, 200);
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    socket.on('error', () => undefined);
    await new Promise<void>((r) => socket.on('close', () => r()));
    clearInterval(timer);
    console.log(`steady sender ended with ${received ? received.split('\r\n')[0] : 'the connection closed'} after ${sent} bytes`);
    const status = /^HTTP\/1\.1 (\d{3})/.exec(received)?.[1];
    expect(status === undefined || status === '408').toBe(true);
    expect(sent).toBeLessThan(10 * 1024 * 1024);
  }, 120_000);

  it('slow senders from as many addresses as there are drain slots are dropped for their rate, and the signed batch queued behind them is answered 200', async () => {
    const slow = ['127.0.0.11', '127.0.0.12', '127.0.0.13', '127.0.0.14'].map((address, i) => slowSender('drain', 100 + i, address));
    while ((await drainBodiesReading()) < 4) await new Promise((r) => setTimeout(r, 25));
    const batch = Buffer.from(`${JSON.stringify({ timestamp: '2026-11-21T10:00:01.000Z', level: 'INFO', message: 'queued', svc_app_name: 'acme-app' })}\n`);
    const res = await post(DRAIN_PATH, { 'content-type': 'application/x-ndjson', 'x-svc-signature': createHmac('sha256', SECRET).update(batch).digest('hex') }, batch);
    expect([res.status, res.body.accepted]).toEqual([200, 1]);
    const ends = await Promise.all(slow.map((s) => s.ended));
    expect(ends.filter((e) => e !== 408 && e !== 'closed')).toEqual([]);
    // The batch waited for a slot: it was answered only after a slow sender had been dropped.
    expect(Math.min(...slow.map((s) => s.endedAt!))).toBeLessThan(res.at);
  }, 120_000);

  it('slow senders from four addresses with a second body queued each: once the first are dropped for their rate, the signed batch from another address gets the next slot ahead of those queued bodies', async () => {
    // Four addresses of one /24 (a host holds many), the batch from another network (slow networks are remembered:
    // the earlier tests' slow senders from 127.0.0.1 made 127.0.0.0/24 one).
    const addresses = ['127.0.1.21', '127.0.1.22', '127.0.1.23', '127.0.1.24'];
    const first = addresses.map((address, i) => slowSender('drain', 200 + i, address));
    while ((await drainBodiesReading()) < 4) await new Promise((r) => setTimeout(r, 25));
    const second = addresses.map((address, i) => slowSender('drain', 210 + i, address));
    while ((await drainBodiesWaiting()) < 4) await new Promise((r) => setTimeout(r, 25));
    const batch = Buffer.from(`${JSON.stringify({ timestamp: '2026-11-21T10:00:02.000Z', level: 'INFO', message: 'ahead of slow addresses', svc_app_name: 'acme-app' })}\n`);
    const res = await post(DRAIN_PATH, { 'content-type': 'application/x-ndjson', 'x-svc-signature': createHmac('sha256', SECRET).update(batch).digest('hex') }, batch, '127.0.2.2');
    expect([res.status, res.body.accepted]).toEqual([200, 1]);
    // It waited for the first wave's drop, not for the queued bodies of the addresses just dropped as slow (FIFO
    // gave each of those a slot first, for a whole window more: the platform's delivery timeout is 10 s).
    expect(Math.min(...first.map((s) => s.endedAt ?? Infinity))).toBeLessThan(res.at);
    expect(second.map((s) => s.endedAt ?? 'open')).toEqual(['open', 'open', 'open', 'open']);
    const ends = await Promise.all([...first, ...second].map((s) => s.ended));
    expect(ends.filter((e) => e !== 408 && e !== 'closed')).toEqual([]);
  }, 120_000);

  it('a wrong drain bearer token and a wrong Faro key are refused (401) while the body is still coming', async () => {
    const drain = slowSender('drain', 200, '127.0.0.21', { authorization: 'Bearer not-the-token-0123' });
    const faro = slowSender('faro', 201, '127.0.0.22', { 'x-api-key': 'not-a-faro-key-0123456789' });
    expect(await drain.ended).toBe(401);
    expect(await faro.ended).toBe(401);
  }, 120_000);
});
