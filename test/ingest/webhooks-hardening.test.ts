// The webhook receiver's defences: keys never used past 24 hours, failed key-set fetches remembered, headers
// checked before the body is read, and a cap on bodies read at once. Keys and signatures are made here with
// node:crypto (an oracle independent of the simulator and of the receiver).
import { createHash, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { KeySet, KeySetUnavailableError, WEBHOOK_PATH, webhookRoutes } from '../../src/ingest/webhooks.js';
import { defaultPushLimits, PushBudgets } from '../../src/ingest/body-budget.js';

const HOUR = 3_600_000;

function keyPair(): { privateKey: KeyObject; jwk: { kty: string; crv: string; x: string } } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const jwk = publicKey.export({ format: 'jwk' }) as { kty: string; crv: string; x: string };
  return { privateKey, jwk };
}

async function jwksServer(jwk: object) {
  const state = { fetches: 0, fail: false };
  const server: Server = createServer((_req, res) => {
    state.fetches++;
    if (state.fail) return void res.writeHead(503).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
  return { url, state, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

describe('KeySet', () => {
  it('never uses keys fetched more than 24 hours ago, even when the refresh fails; uses them again once it succeeds', async () => {
    const { jwk } = keyPair();
    const server = await jwksServer(jwk);
    closers.push(server.close);
    let now = Date.parse('2026-11-20T00:00:00Z');
    const keys = new KeySet(server.url, { now: () => now, failureMemoryMs: 0 });
    expect(await keys.current()).toHaveLength(1);
    server.state.fail = true;
    now += 23 * HOUR;
    expect(await keys.current()).toHaveLength(1); // fresh: no fetch
    expect(server.state.fetches).toBe(1);
    now += 1 * HOUR + 1;
    await expect(keys.current()).rejects.toBeInstanceOf(KeySetUnavailableError);
    now += 12 * HOUR;
    await expect(keys.current()).rejects.toBeInstanceOf(KeySetUnavailableError);
    server.state.fail = false;
    expect(await keys.current()).toHaveLength(1);
  });

  it('remembers a failed fetch for 30 s: requests meanwhile start no new outbound fetch', async () => {
    const { jwk } = keyPair();
    const server = await jwksServer(jwk);
    closers.push(server.close);
    server.state.fail = true;
    let now = Date.parse('2026-11-20T00:00:00Z');
    const keys = new KeySet(server.url, { now: () => now });
    for (let i = 0; i < 20; i++) await expect(keys.current()).rejects.toBeInstanceOf(KeySetUnavailableError);
    expect(server.state.fetches).toBe(1);
    now += 29_999;
    await expect(keys.refetch()).rejects.toBeInstanceOf(KeySetUnavailableError);
    expect(server.state.fetches).toBe(1);
    now += 2;
    server.state.fail = false;
    expect(await keys.current()).toHaveLength(1);
    expect(server.state.fetches).toBe(2);
  });
});

describe('POST /v1/webhooks/queue', () => {
  async function receiver(opts: { maxConcurrentBodies?: number; budgets?: PushBudgets } = {}) {
    const { privateKey, jwk } = keyPair();
    const server = await jwksServer(jwk);
    closers.push(server.close);
    const inserted: unknown[] = [];
    const writer = {
      insert: (_table: unknown, rows: unknown[]) => {
        inserted.push(...rows);
        return Promise.resolve();
      },
      flush: () => Promise.resolve(),
    };
    const app: FastifyInstance = Fastify();
    await app.register(webhookRoutes, { keySet: new KeySet(server.url), writer: writer as never, registry: new Registry(), ...opts });
    await app.listen({ port: 0, host: '127.0.0.1' });
    closers.push(() => app.close());
    const port = (app.server.address() as AddressInfo).port;
    const signedHeaders = (requestId: string, body: Buffer) => {
      // wall-clock: the webhook receiver checks the signed timestamp against the machine's clock
      const ts = String(Math.floor(Date.now() / 1000));
      const message = `${requestId}\nusr_1\n${ts}\n${createHash('sha256').update(body).digest('hex')}`;
      return {
        'x-svc-webhook-request-id': requestId,
        'x-svc-webhook-user-id': 'usr_1',
        'x-svc-webhook-timestamp': ts,
        'x-svc-webhook-signature': sign(null, Buffer.from(message), privateKey).toString('hex'),
      };
    };
    return { port, inserted, signedHeaders };
  }

  /** Sends the headers and only the first part of a body that claims to be `declared` bytes; resolves with the status. */
  function partialBody(port: number, headers: Record<string, string>, declared: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: WEBHOOK_PATH, headers: { ...headers, 'content-type': 'application/json', 'content-length': String(declared) } });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', (err) => ((err as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(err)));
      req.write(Buffer.alloc(64 * 1024, 0x20)); // the rest never comes: an answer proves the body was not awaited
    });
  }

  it('refuses a request without the four headers before reading its body (401 while the body is still coming)', async () => {
    const r = await receiver();
    expect(await partialBody(r.port, {}, 10 * 1024 * 1024)).toBe(401);
    const stale = { 'x-svc-webhook-request-id': 'r', 'x-svc-webhook-user-id': 'u', 'x-svc-webhook-timestamp': '1000', 'x-svc-webhook-signature': 'a'.repeat(128) };
    expect(await partialBody(r.port, stale, 10 * 1024 * 1024)).toBe(401);
    expect(r.inserted).toEqual([]);
  });

  it('caps the bodies read at once: one over the cap gets 503 with Retry-After; a complete signed delivery is stored', async () => {
    // One slot, refused at once (no wait for a slot, no contended rule: test/ingest/steady-senders.test.ts has those).
    const r = await receiver({
      budgets: new PushBudgets({ ...defaultPushLimits(), WEBHOOK_MAX_BODIES_READING: 1, PUSH_SLOT_MAX_WAIT_MS: 0, PUSH_CONTENDED_MIN_BYTES_PER_SECOND: 0, PUSH_CONTENDED_MAX_BODY_MS: 0 }),
    });
    const body = Buffer.from(JSON.stringify({ request_id: 'req-a', status: 'OK' }));
    // The first request holds the only slot: its body never completes.
    const slowHeaders = r.signedHeaders('req-slow', Buffer.from('x'));
    const slow = httpRequest({ host: '127.0.0.1', port: r.port, method: 'POST', path: WEBHOOK_PATH, headers: { ...slowHeaders, 'content-length': '1000' } });
    slow.on('error', () => undefined);
    slow.write('{');
    closers.push(async () => slow.destroy());
    // Wait until the receiver has taken the slot (a second request is then refused).
    let status = 0;
    let retryAfter: string | null = null;
    for (let i = 0; i < 200 && status !== 503; i++) {
      const res = await fetch(`http://127.0.0.1:${r.port}${WEBHOOK_PATH}`, { method: 'POST', headers: r.signedHeaders('req-a', body), body });
      status = res.status;
      retryAfter = res.headers.get('retry-after');
      await res.arrayBuffer();
      if (status === 200) throw new Error('the slot was free: the slow request was not being read yet');
    }
    expect(status).toBe(503);
    expect(retryAfter).toBe('5');
    slow.destroy();
    // Once the slot is free, the delivery is accepted and stored.
    for (let i = 0; i < 200; i++) {
      const res = await fetch(`http://127.0.0.1:${r.port}${WEBHOOK_PATH}`, { method: 'POST', headers: r.signedHeaders('req-a', body), body });
      await res.arrayBuffer();
      if (res.status === 200) break;
      await new Promise((res2) => setTimeout(res2, 20));
    }
    expect(r.inserted).toMatchObject([{ request_id: 'req-a', status: 'OK' }]);
  });
});
