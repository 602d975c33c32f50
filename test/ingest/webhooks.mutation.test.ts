// The webhook receiver (src/ingest/webhooks.ts) rule by rule, without a store (issue 31: the mutants the simulator
// tests left alive). The oracle is the platform interface's "Signature verification" (four X-Svc-Webhook-* headers,
// a timestamp within 300 s either way, Ed25519 over "request id\nuser id\ntimestamp\nlowercase hex SHA-256 of the
// raw body", valid if any key of the key set verifies) and its limits (keys used at most 24 hours); keys and
// signatures are made here with node:crypto, expected rows and messages are literals written by hand.
import { createHash, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import Fastify, { type FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultPushLimits, PushBudgets } from '../../src/ingest/body-budget.js';
import {
  deliveryRow,
  jwksUrl,
  KeySet,
  KeySetUnavailableError,
  MAX_WEBHOOK_BODY_BYTES,
  readSignedDelivery,
  readSignedHeaders,
  verifiesWithAny,
  WEBHOOK_PATH,
  WEBHOOK_REJECT_SOURCE,
  webhookExtension,
  webhookRoutes,
} from '../../src/ingest/webhooks.js';
import { captureLog } from '../support/log-capture.js';

const DAY = 24 * 3_600_000;
const NOW_S = 1_795_000_000; // 2026-11-18T11:06:40Z (date -u -d @1795000000)

function keyPair(): { privateKey: KeyObject; publicKey: KeyObject; jwk: { kty: string; crv: string; x: string } } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privateKey, publicKey, jwk: publicKey.export({ format: 'jwk' }) as { kty: string; crv: string; x: string } };
}

/** A JSON key set server: `answer` decides each response (status and body). */
async function jwksServer(answer: () => { status: number; body: unknown }) {
  const state = { fetches: 0 };
  const server: Server = createServer((_req, res) => {
    state.fetches++;
    const a = answer();
    res.writeHead(a.status, { 'content-type': 'application/json' }).end(JSON.stringify(a.body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
  closers.push(() => new Promise<void>((r) => server.close(() => r())));
  return { url, state };
}

const capture = () => captureLog('debug');

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

/** The signed message of the interface, step 4, built here on its own. */
const message = (requestId: string, userId: string, ts: string, body: Buffer | string) =>
  Buffer.from(`${requestId}\n${userId}\n${ts}\n${createHash('sha256').update(body).digest('hex')}`, 'utf8');

const headers = (over: Record<string, string | undefined> = {}) => ({
  'x-svc-webhook-request-id': 'req-1',
  'x-svc-webhook-user-id': 'usr-1',
  'x-svc-webhook-timestamp': String(NOW_S),
  'x-svc-webhook-signature': 'ab'.repeat(64),
  ...over,
});

describe('jwksUrl', () => {
  it('SVC_BASE_URL without its trailing slashes, then /.well-known/jwks.json; WEBHOOK_JWKS_URL as given', () => {
    expect(jwksUrl({ WEBHOOK_JWKS_URL: undefined, SVC_BASE_URL: 'https://api.example' })).toBe('https://api.example/.well-known/jwks.json');
    expect(jwksUrl({ WEBHOOK_JWKS_URL: undefined, SVC_BASE_URL: 'https://api.example/v//' })).toBe('https://api.example/v/.well-known/jwks.json');
    expect(jwksUrl({ WEBHOOK_JWKS_URL: 'https://k.example/j', SVC_BASE_URL: 'https://api.example/' })).toBe('https://k.example/j');
  });
});

describe('readSignedHeaders (steps 2 and 3)', () => {
  it('the four headers, trimmed', () => {
    expect(
      readSignedHeaders(headers({ 'x-svc-webhook-request-id': ' req-1 ', 'x-svc-webhook-signature': ` ${'AB'.repeat(64)}\t` }), NOW_S),
    ).toEqual({ requestId: 'req-1', userId: 'usr-1', timestampText: String(NOW_S), signatureHex: 'AB'.repeat(64) });
  });

  it('each missing header named in the platform spelling, several joined by a comma', () => {
    expect(readSignedHeaders(headers({ 'x-svc-webhook-request-id': undefined }), NOW_S)).toEqual({
      outcome: 'missing_headers',
      reason: 'missing X-Svc-Webhook-Request-Id',
    });
    expect(readSignedHeaders(headers({ 'x-svc-webhook-user-id': '  ' }), NOW_S)).toEqual({ outcome: 'missing_headers', reason: 'missing X-Svc-Webhook-User-Id' });
    expect(readSignedHeaders(headers({ 'x-svc-webhook-timestamp': '' }), NOW_S)).toEqual({ outcome: 'missing_headers', reason: 'missing X-Svc-Webhook-Timestamp' });
    expect(readSignedHeaders(headers({ 'x-svc-webhook-signature': undefined }), NOW_S)).toEqual({
      outcome: 'missing_headers',
      reason: 'missing X-Svc-Webhook-Signature',
    });
    expect(readSignedHeaders({}, NOW_S)).toEqual({
      outcome: 'missing_headers',
      reason: 'missing X-Svc-Webhook-Request-Id, X-Svc-Webhook-User-Id, X-Svc-Webhook-Timestamp, X-Svc-Webhook-Signature',
    });
    // A header sent twice arrives as a list: not one value, so missing.
    expect(readSignedHeaders({ ...headers(), 'x-svc-webhook-user-id': ['a', 'b'] }, NOW_S)).toEqual({
      outcome: 'missing_headers',
      reason: 'missing X-Svc-Webhook-User-Id',
    });
  });

  it('a timestamp that is not whole Unix seconds', () => {
    for (const ts of ['1795000000.5', '-1795000000', '1795000000s', 'x1795000000', '1e9']) {
      expect(readSignedHeaders(headers({ 'x-svc-webhook-timestamp': ts }), NOW_S)).toEqual({
        outcome: 'stale_timestamp',
        reason: 'X-Svc-Webhook-Timestamp is not Unix seconds',
      });
    }
  });

  it('300 s either way is accepted, 301 is not', () => {
    for (const ts of [NOW_S - 300, NOW_S + 300, NOW_S]) expect(readSignedHeaders(headers({ 'x-svc-webhook-timestamp': String(ts) }), NOW_S)).not.toHaveProperty('outcome');
    for (const ts of [NOW_S - 301, NOW_S + 301]) {
      expect(readSignedHeaders(headers({ 'x-svc-webhook-timestamp': String(ts) }), NOW_S)).toEqual({
        outcome: 'stale_timestamp',
        reason: 'X-Svc-Webhook-Timestamp is more than 300 s away from the current time',
      });
    }
  });

  it('a signature of exactly 128 hex digits', () => {
    const bad = { outcome: 'invalid_signature', reason: 'X-Svc-Webhook-Signature is not a hex Ed25519 signature (128 hex digits)' };
    for (const s of ['ab'.repeat(63) + 'a', 'ab'.repeat(65), `zz${'ab'.repeat(64)}`, `${'ab'.repeat(64)}zz`, `${'ab'.repeat(63)}ag`]) {
      expect(readSignedHeaders(headers({ 'x-svc-webhook-signature': s }), NOW_S)).toEqual(bad);
    }
  });
});

describe('readSignedDelivery (step 4) and verifiesWithAny (step 5)', () => {
  it('the message is the four lines of the interface; any key of the set verifies', () => {
    const a = keyPair();
    const b = keyPair();
    const body = Buffer.from('{"request_id":"req-1","status":"OK"}');
    const m = message('req-1', 'usr-1', String(NOW_S), body);
    const signature = sign(null, m, b.privateKey).toString('hex');
    const d = readSignedDelivery(headers({ 'x-svc-webhook-signature': signature }), body, NOW_S);
    expect(d).toEqual({ requestId: 'req-1', userId: 'usr-1', timestamp: NOW_S, message: m, signature: Buffer.from(signature, 'hex') });
    expect(verifiesWithAny(d as { message: Buffer; signature: Buffer }, [a.publicKey, b.publicKey])).toBe(true);
    expect(verifiesWithAny(d as { message: Buffer; signature: Buffer }, [a.publicKey])).toBe(false);
    expect(verifiesWithAny(d as { message: Buffer; signature: Buffer }, [])).toBe(false);
    // Another body under the same headers does not verify.
    const other = readSignedDelivery(headers({ 'x-svc-webhook-signature': signature }), Buffer.from('{}'), NOW_S) as { message: Buffer; signature: Buffer };
    expect(verifiesWithAny(other, [a.publicKey, b.publicKey])).toBe(false);
  });

  it('refusals of the headers come back as they are', () => {
    expect(readSignedDelivery(headers({ 'x-svc-webhook-timestamp': String(NOW_S + 301) }), Buffer.from('{}'), NOW_S)).toEqual({
      outcome: 'stale_timestamp',
      reason: 'X-Svc-Webhook-Timestamp is more than 300 s away from the current time',
    });
  });

  it('a key that throws on verify (not an Ed25519 key) counts as not verifying, and the next key is still tried', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey;
    const good = keyPair();
    const m = Buffer.from('x');
    const d = { message: m, signature: sign(null, m, good.privateKey) };
    expect(verifiesWithAny(d, [rsa])).toBe(false);
    expect(verifiesWithAny(d, [rsa, good.publicKey])).toBe(true);
  });

  it('a key Ed25519 verification throws on (an X25519 key: not a signing key) counts as not verifying', () => {
    const x25519 = generateKeyPairSync('x25519').publicKey;
    const good = keyPair();
    const m = Buffer.from('x');
    const d = { message: m, signature: sign(null, m, good.privateKey) };
    expect(() => verify(null, m, x25519, d.signature)).toThrow(); // the premise: node:crypto throws for this key
    expect(verifiesWithAny(d, [x25519])).toBe(false);
    expect(verifiesWithAny(d, [x25519, good.publicKey])).toBe(true);
  });
});

describe('deliveryRow', () => {
  const d = { requestId: 'req-9', userId: 'usr-9', timestamp: NOW_S, message: Buffer.alloc(0), signature: Buffer.alloc(0) };
  const received = Date.parse('2026-11-18T11:06:41.250Z');

  it('a JSON delivery: its fields, error types once each in order, signed and received times in UTC', () => {
    const body = {
      request_id: 'req-9',
      gateway_request_id: 'gw-9',
      status: 'ERROR',
      error: { message: 'boom' },
      payload_error: null,
      payload: { detail: [{ type: 'timeout' }, null, { type: 7 }, { type: 'runtime' }, { type: 'timeout' }, {}] },
    };
    const raw = Buffer.from(JSON.stringify(body));
    expect(deliveryRow(d, raw, received)).toEqual({
      row: {
        request_id: 'req-9',
        gateway_request_id: 'gw-9',
        user_id: 'usr-9',
        status: 'ERROR',
        error: '{"message":"boom"}',
        error_types: ['timeout', 'runtime'],
        payload_error: '',
        signed_at: '2026-11-18 11:06:40',
        received_at: '2026-11-18 11:06:41.250',
        raw: JSON.stringify(body),
      },
      unmapped: [],
    });
  });

  it.each([
    ['not JSON', 'not json'],
    ['a JSON array', '[{"status":"OK"}]'],
    ['JSON null', 'null'],
    ['a string', '"OK"'],
  ])('%s: kept raw, fields empty', (_name, text) => {
    const { row, unmapped } = deliveryRow(d, Buffer.from(text), received);
    expect(row).toMatchObject({ request_id: 'req-9', gateway_request_id: '', status: '', error: '', error_types: [], payload_error: '', raw: text });
    expect(unmapped).toEqual([]);
  });

  it('a detail that is not a list gives no error types', () => {
    expect(deliveryRow(d, Buffer.from('{"payload":{"detail":{"type":"timeout"}}}'), received).row.error_types).toEqual([]);
    expect(deliveryRow(d, Buffer.from('{"payload":null}'), received).row.error_types).toEqual([]);
  });

  it('a field nested past 1000 levels: stored empty, named with its depth, the raw body kept', () => {
    const deep = '['.repeat(1001) + ']'.repeat(1001);
    const ok = '['.repeat(1000) + ']'.repeat(1000);
    const text = `{"status":"ERROR","error":${deep},"payload_error":${ok}}`;
    const { row, unmapped } = deliveryRow(d, Buffer.from(text), received);
    expect(row.error).toBe('');
    expect(row.payload_error).toBe(ok);
    expect(row.raw).toBe(text);
    expect(unmapped).toHaveLength(1);
    expect(unmapped[0]).toMatchObject({
      field: 'error',
      reason: 'error: too_deep: nested 1001 levels deep; at most 1000 can be stored (stored empty; the raw body keeps it)',
    });
    expect(unmapped[0]!.raw.startsWith('[[[')).toBe(true);
  });
});

describe('KeySet', () => {
  it('KeySetUnavailableError names the url and the reason', () => {
    const e = new KeySetUnavailableError('http://k/j', 'HTTP 500');
    expect(e.message).toBe('the webhook key set at http://k/j cannot be fetched: HTTP 500');
    expect(e.name).toBe('KeySetUnavailableError');
    expect(e.url).toBe('http://k/j');
  });

  it('takes the Ed25519 keys of the set, skips the others; logs how many', async () => {
    const a = keyPair();
    const b = keyPair();
    const c = keyPair();
    const rsaJwk = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'jwk' });
    const server = await jwksServer(() => ({
      status: 200,
      body: {
        keys: [
          a.jwk,
          { x: b.jwk.x }, // kty and crv left out: taken
          { ...c.jwk, kty: 'EC' },
          { ...c.jwk, crv: 'X25519' },
          { kty: 'OKP', crv: 'Ed25519', x: 12 },
          { kty: 'OKP', crv: 'Ed25519', x: 'AAAA' }, // not 32 bytes: not a key
          rsaJwk,
          null,
        ],
      },
    }));
    const { logger, lines } = capture();
    const keys = await new KeySet(server.url, { logger }).current();
    const m = Buffer.from('m');
    expect(keys).toHaveLength(2);
    expect(verifiesWithAny({ message: m, signature: sign(null, m, a.privateKey) }, keys)).toBe(true);
    expect(verifiesWithAny({ message: m, signature: sign(null, m, b.privateKey) }, keys)).toBe(true);
    expect(verifiesWithAny({ message: m, signature: sign(null, m, c.privateKey) }, keys)).toBe(false);
    expect(lines).toEqual([expect.objectContaining({ level: 30, url: server.url, keys: 2, msg: 'webhook key set fetched' })]);
  });

  it.each([
    ['a 500', { status: 500, body: {} }, 'HTTP 500'],
    ['an answer without keys', { status: 200, body: { key: [] } }, 'the answer has no `keys` array'],
    ['keys that are not a list', { status: 200, body: { keys: {} } }, 'the answer has no `keys` array'],
    ['JSON null', { status: 200, body: null }, 'the answer has no `keys` array'],
    ['no Ed25519 key', { status: 200, body: { keys: [{ kty: 'RSA', x: 'AAAA' }] } }, 'no Ed25519 key in the set'],
  ])('%s: KeySetUnavailableError with its reason', async (_name, answer, reason) => {
    const server = await jwksServer(() => answer);
    await expect(new KeySet(server.url).current()).rejects.toThrow(`the webhook key set at ${server.url} cannot be fetched: ${reason}`);
  });

  it('an unreachable set: KeySetUnavailableError', async () => {
    await expect(new KeySet('http://127.0.0.1:9/jwks.json').current()).rejects.toBeInstanceOf(KeySetUnavailableError);
  });

  it('a source function is read at each fetch', async () => {
    const s1 = await jwksServer(() => ({ status: 200, body: { keys: [keyPair().jwk] } }));
    const s2 = await jwksServer(() => ({ status: 200, body: { keys: [keyPair().jwk] } }));
    let url = s1.url;
    let now = 0;
    const keys = new KeySet(() => url, { now: () => now, minRefetchIntervalMs: 10 });
    expect(keys.url).toBe(s1.url);
    await keys.current();
    url = s2.url;
    expect(keys.url).toBe(s2.url);
    now = 10;
    await keys.refetch();
    expect([s1.state.fetches, s2.state.fetches]).toEqual([1, 1]);
  });

  it('used for 24 hours at most: a fetch at exactly 24 h, also when maxAgeMs asks for longer', async () => {
    const server = await jwksServer(() => ({ status: 200, body: { keys: [keyPair().jwk] } }));
    let now = 1_000_000;
    const keys = new KeySet(server.url, { now: () => now, maxAgeMs: 2 * DAY });
    await keys.current();
    now += DAY - 1;
    await keys.current();
    expect(server.state.fetches).toBe(1);
    now += 1;
    await keys.current();
    expect(server.state.fetches).toBe(2);
  });

  it('a shorter maxAgeMs is kept', async () => {
    const server = await jwksServer(() => ({ status: 200, body: { keys: [keyPair().jwk] } }));
    let now = 0;
    const keys = new KeySet(server.url, { now: () => now, maxAgeMs: 1000 });
    await keys.current();
    now = 999;
    await keys.current();
    expect(server.state.fetches).toBe(1);
    now = 1000;
    await keys.current();
    expect(server.state.fetches).toBe(2);
  });

  it('concurrent requests share one fetch', async () => {
    const server = await jwksServer(() => ({ status: 200, body: { keys: [keyPair().jwk] } }));
    const keys = new KeySet(server.url);
    const all = await Promise.all([keys.current(), keys.current(), keys.current()]);
    expect(all[0]).toBe(all[1]);
    expect(all[1]).toBe(all[2]);
    expect(server.state.fetches).toBe(1);
  });

  it('refetch: not within 30 s (default) of the last fetch, then the set again', async () => {
    const server = await jwksServer(() => ({ status: 200, body: { keys: [keyPair().jwk] } }));
    let now = 5_000_000;
    const keys = new KeySet(server.url, { now: () => now });
    const first = await keys.current();
    now = 5_029_999;
    expect(await keys.refetch()).toBeUndefined();
    expect(server.state.fetches).toBe(1);
    now = 5_030_000;
    const again = await keys.refetch();
    expect(server.state.fetches).toBe(2);
    expect(again).toHaveLength(1);
    expect(again).not.toBe(first);
    // Fetched: current() now answers the new set without fetching.
    expect(await keys.current()).toBe(again);
    expect(server.state.fetches).toBe(2);
  });

  it('refetch with nothing cached fetches', async () => {
    const server = await jwksServer(() => ({ status: 200, body: { keys: [keyPair().jwk] } }));
    expect(await new KeySet(server.url, { now: () => 0 }).refetch()).toHaveLength(1);
    expect(server.state.fetches).toBe(1);
  });

  it('a failure is remembered 30 s (default), then a new fetch; a success forgets it', async () => {
    let fail = true;
    const server = await jwksServer(() => (fail ? { status: 503, body: {} } : { status: 200, body: { keys: [keyPair().jwk] } }));
    let now = 5_000_000;
    const keys = new KeySet(server.url, { now: () => now });
    const e1 = await keys.current().catch((e: unknown) => e);
    now = 5_029_999;
    expect(await keys.current().catch((e: unknown) => e)).toBe(e1);
    expect(server.state.fetches).toBe(1);
    now = 5_030_000;
    fail = false;
    expect(await keys.current()).toHaveLength(1);
    expect(server.state.fetches).toBe(2);
  });

  it('failureMemoryMs is taken from the options', async () => {
    const server = await jwksServer(() => ({ status: 503, body: {} }));
    let now = 0;
    const keys = new KeySet(server.url, { now: () => now, failureMemoryMs: 100 });
    await expect(keys.current()).rejects.toThrow('HTTP 503');
    now = 100;
    await expect(keys.current()).rejects.toThrow('HTTP 503');
    expect(server.state.fetches).toBe(2);
  });

  it('keys past 24 hours that cannot be refreshed: one error line per outage, naming the url', async () => {
    let fail = false;
    const server = await jwksServer(() => (fail ? { status: 503, body: {} } : { status: 200, body: { keys: [keyPair().jwk] } }));
    const { logger, lines } = capture();
    let now = 0;
    const keys = new KeySet(server.url, { now: () => now, logger, failureMemoryMs: 0 });
    await keys.current();
    fail = true;
    now = DAY;
    await expect(keys.current()).rejects.toBeInstanceOf(KeySetUnavailableError);
    await expect(keys.current()).rejects.toBeInstanceOf(KeySetUnavailableError);
    const errors = () => lines.filter((l) => l.level === 50);
    expect(errors()).toEqual([
      expect.objectContaining({
        url: server.url,
        err: `the webhook key set at ${server.url} cannot be fetched: HTTP 503`,
        msg: 'webhook key set is older than 24 hours and cannot be refreshed; deliveries are refused (503) until it can',
      }),
    ]);
    // Refreshed, then a second outage: said again.
    fail = false;
    await keys.current();
    fail = true;
    now = 2 * DAY;
    await expect(keys.current()).rejects.toBeInstanceOf(KeySetUnavailableError);
    expect(errors()).toHaveLength(2);
  });

  it('nothing cached and the set down: no error line (nothing stale is held)', async () => {
    const server = await jwksServer(() => ({ status: 503, body: {} }));
    const { logger, lines } = capture();
    await expect(new KeySet(server.url, { logger }).current()).rejects.toBeInstanceOf(KeySetUnavailableError);
    expect(lines.filter((l) => l.level === 50)).toEqual([]);
  });

  it('a set that never answers: refused after timeoutMs', async () => {
    const server = createServer(() => undefined);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/j`;
    await expect(new KeySet(url, { timeoutMs: 50 }).current()).rejects.toBeInstanceOf(KeySetUnavailableError);
  });
});

describe('POST /v1/webhooks/queue on a bare fastify (a writer double)', () => {
  interface Receiver {
    url: string;
    inserted: Array<{ table: string; rows: unknown[] }>;
    rejected: unknown[];
    registry: Registry;
    signed(requestId: string, body: Buffer, ts?: number): Record<string, string>;
    logs: Record<string, unknown>[];
    rejectCalls(): number;
    fetches(): number;
  }

  async function receiver(
    opts: {
      insert?: () => Promise<unknown>;
      reject?: () => Promise<unknown>;
      storeTimeoutMs?: number;
      keysDown?: boolean;
      budgets?: PushBudgets;
      served?: () => object[];
      minRefetchIntervalMs?: number;
      key?: ReturnType<typeof keyPair>;
    } = {},
  ): Promise<Receiver> {
    const key = opts.key ?? keyPair();
    const server = await jwksServer(() => (opts.keysDown ? { status: 503, body: {} } : { status: 200, body: { keys: opts.served ? opts.served() : [key.jwk] } }));
    const inserted: Receiver['inserted'] = [];
    const rejected: unknown[] = [];
    let rejectCalls = 0;
    const writer = {
      insert: (table: { name: string }, rows: unknown[]) => {
        inserted.push({ table: table.name, rows });
        return opts.insert ? opts.insert() : Promise.resolve();
      },
      flush: () => Promise.resolve(),
      reject: (rows: unknown[]) => {
        rejectCalls++;
        rejected.push(...rows);
        return opts.reject ? opts.reject() : Promise.resolve();
      },
    };
    const { logger, lines } = capture();
    const registry = new Registry();
    const app = Fastify({ loggerInstance: logger }) as unknown as FastifyInstance;
    await app.register(webhookRoutes, {
      keySet: new KeySet(server.url, { minRefetchIntervalMs: opts.minRefetchIntervalMs ?? 0 }),
      budgets: opts.budgets,
      writer: writer as never,
      registry,
      storeTimeoutMs: opts.storeTimeoutMs,
      now: () => NOW_S * 1000 + 500,
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    closers.push(() => app.close());
    const signed = (requestId: string, body: Buffer, ts = NOW_S) => ({
      'x-svc-webhook-request-id': requestId,
      'x-svc-webhook-user-id': 'usr_1',
      'x-svc-webhook-timestamp': String(ts),
      'x-svc-webhook-signature': sign(null, message(requestId, 'usr_1', String(ts), body), key.privateKey).toString('hex'),
    });
    return {
      url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}${WEBHOOK_PATH}`,
      inserted,
      rejected,
      rejectCalls: () => rejectCalls,
      registry,
      signed,
      logs: lines,
      fetches: () => server.state.fetches,
    };
  }

  async function post(url: string, headers: Record<string, string>, body: Buffer | string) {
    const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  }

  async function outcomes(registry: Registry): Promise<Record<string, number>> {
    const m = await registry.getSingleMetric('tallyhouse_webhooks_total')!.get();
    return Object.fromEntries(m.values.map((v) => [v.labels.outcome as string, v.value]));
  }

  it('the path is /v1/webhooks/queue; bodies up to 16 MiB', () => {
    expect(WEBHOOK_PATH).toBe('/v1/webhooks/queue');
    expect(MAX_WEBHOOK_BODY_BYTES).toBe(16 * 1024 * 1024);
  });

  it('a signed delivery: 200 {status: ok, request_id}, one row inserted into webhook_deliveries, counted accepted', async () => {
    const r = await receiver();
    const body = Buffer.from('{"gateway_request_id":"gw-1","status":"OK","payload":{"detail":[]}}');
    const res = await post(r.url, r.signed('req-1', body), body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok', request_id: 'req-1' });
    expect(r.inserted).toEqual([
      {
        table: 'webhook_deliveries',
        rows: [
          {
            request_id: 'req-1',
            gateway_request_id: 'gw-1',
            user_id: 'usr_1',
            status: 'OK',
            error: '',
            error_types: [],
            payload_error: '',
            signed_at: '2026-11-18 11:06:40',
            received_at: '2026-11-18 11:06:40.500',
            raw: body.toString(),
          },
        ],
      },
    ]);
    expect(r.rejectCalls()).toBe(0); // nothing unmapped: no reject rows asked for
    expect(await outcomes(r.registry)).toEqual({ accepted: 1 });
    const seconds = await r.registry.getSingleMetric('tallyhouse_webhook_request_duration_seconds')!.get();
    const value = (name: string) => seconds.values.find((v) => (v as { metricName?: string }).metricName === name)?.value;
    expect(value('tallyhouse_webhook_request_duration_seconds_count')).toBe(1);
    // One local request: more than nothing, far less than a minute (the figure is in seconds, not ns).
    expect(value('tallyhouse_webhook_request_duration_seconds_sum')).toBeGreaterThan(0);
    expect(value('tallyhouse_webhook_request_duration_seconds_sum')).toBeLessThan(60);
    expect(r.logs.filter((l) => l.msg === 'webhook refused')).toEqual([]);
  });

  it('a body not signed by the set: 401 naming the key set, nothing stored', async () => {
    const r = await receiver();
    const body = Buffer.from('{"status":"OK"}');
    const res = await post(r.url, r.signed('req-2', Buffer.from('{"status":"ERROR"}')), body);
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ title: 'Unauthorized', detail: 'X-Svc-Webhook-Signature does not verify with any key of the key set' });
    expect(r.inserted).toEqual([]);
    expect(await outcomes(r.registry)).toEqual({ invalid_signature: 1 });
    expect(r.logs).toContainEqual(expect.objectContaining({ level: 40, outcome: 'invalid_signature', msg: 'webhook refused' }));
  });

  it('headers refused before the body: 401 with the reason, connection closed, counted by outcome', async () => {
    const r = await receiver();
    const body = Buffer.from('{}');
    const stale = await post(r.url, r.signed('req-3', body, NOW_S - 301), body);
    expect(stale.status).toBe(401);
    expect(stale.headers.connection).toBe('close');
    expect(stale.body).toMatchObject({ title: 'Unauthorized', detail: 'X-Svc-Webhook-Timestamp is more than 300 s away from the current time' });
    const missing = await post(r.url, {}, body);
    expect(missing.status).toBe(401);
    expect(missing.body.detail).toBe('missing X-Svc-Webhook-Request-Id, X-Svc-Webhook-User-Id, X-Svc-Webhook-Timestamp, X-Svc-Webhook-Signature');
    expect(await outcomes(r.registry)).toEqual({ stale_timestamp: 1, missing_headers: 1 });
    expect(r.logs).toContainEqual(
      expect.objectContaining({ level: 40, outcome: 'stale_timestamp', reason: 'X-Svc-Webhook-Timestamp is more than 300 s away from the current time', msg: 'webhook refused' }),
    );
    expect(r.inserted).toEqual([]);
  });

  it('a declared body over 16 MiB: 413 before reading it', async () => {
    const r = await receiver();
    const body = Buffer.from('{}');
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      import('node:http').then(({ request: req }) => {
        const c = req(r.url, { method: 'POST', headers: { ...r.signed('req-4', body), 'content-type': 'application/json', 'content-length': String(MAX_WEBHOOK_BODY_BYTES + 1) } });
        c.on('response', (res) => {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        });
        c.on('error', (e) => ((e as NodeJS.ErrnoException).code === 'ECONNRESET' || (e as NodeJS.ErrnoException).code === 'EPIPE' ? undefined : reject(e)));
        c.write('{');
      });
    });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toMatchObject({ title: 'Payload Too Large', detail: `the body exceeds ${16 * 1024 * 1024} bytes` });
    expect(await outcomes(r.registry)).toEqual({ too_large: 1 });
  });

  it('a body of exactly 16 MiB is read (a wrong signature then: 401, not 413)', async () => {
    const r = await receiver();
    const body = Buffer.alloc(MAX_WEBHOOK_BODY_BYTES, 0x20);
    const res = await post(r.url, r.signed('req-5', Buffer.from('x')), body);
    expect(res.status).toBe(401);
    expect(await outcomes(r.registry)).toEqual({ invalid_signature: 1 });
  });

  it('the key set down: 503 with Retry-After 10, nothing stored', async () => {
    const r = await receiver({ keysDown: true });
    const body = Buffer.from('{}');
    const res = await post(r.url, r.signed('req-6', body), body);
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('10');
    expect(res.body).toMatchObject({ title: 'Service Unavailable', detail: 'the webhook key set cannot be fetched; retry later' });
    expect(await outcomes(r.registry)).toEqual({ keys_unavailable: 1 });
    expect(r.logs).toContainEqual(expect.objectContaining({ level: 50, msg: 'webhook key set unavailable' }));
  });

  it('the store refuses the row: 503 with Retry-After 30', async () => {
    const r = await receiver({ insert: () => Promise.reject(new Error('store down')) });
    const body = Buffer.from('{}');
    const res = await post(r.url, r.signed('req-7', body), body);
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('30');
    expect(res.body).toMatchObject({ title: 'Service Unavailable', detail: 'the delivery could not be stored; retry later' });
    expect(await outcomes(r.registry)).toEqual({ store_unavailable: 1 });
    expect(r.logs).toContainEqual(expect.objectContaining({ level: 50, err: 'store down', msg: 'webhook delivery could not be stored' }));
  });

  it('the store does not confirm within storeTimeoutMs: 503 with Retry-After 30', async () => {
    const r = await receiver({ insert: () => new Promise(() => undefined), storeTimeoutMs: 50 });
    const body = Buffer.from('{}');
    const res = await post(r.url, r.signed('req-8', body), body);
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('30');
    expect(res.body).toMatchObject({ title: 'Service Unavailable', detail: 'the store did not confirm the delivery in time; retry later' });
  });

  it('a field too deep: the delivery stored, the field in ingest_rejects under source webhook and the request id; the answer waits for both', async () => {
    let rejectDone = false;
    const r = await receiver({ reject: () => new Promise<void>((resolve) => setTimeout(() => { rejectDone = true; resolve(); }, 20)) });
    const body = Buffer.from(`{"status":"ERROR","error":${'['.repeat(1001)}${']'.repeat(1001)}}`);
    const res = await post(r.url, r.signed('req-9', body), body);
    expect(res.status).toBe(200);
    expect(rejectDone).toBe(true);
    expect(r.inserted[0]!.rows).toMatchObject([{ request_id: 'req-9', status: 'ERROR', error: '' }]);
    expect(r.rejected).toEqual([
      {
        source: 'webhook',
        reason: 'error: too_deep: nested 1001 levels deep; at most 1000 can be stored (stored empty; the raw body keeps it)',
        raw: expect.stringMatching(/^\[\[\[/),
        batch_id: 'req-9',
      },
    ]);
    expect(WEBHOOK_REJECT_SOURCE).toBe('webhook');
    expect(r.logs).toContainEqual(expect.objectContaining({ level: 40, requestId: 'req-9', fields: ['error'], msg: 'webhook stored without the fields it cannot map' }));
  });

  it('the rejects not stored: 503 (a 2xx only when all of it is kept)', async () => {
    const r = await receiver({ reject: () => Promise.reject(new Error('rejects down')) });
    const body = Buffer.from(`{"error":${'['.repeat(1001)}${']'.repeat(1001)}}`);
    const res = await post(r.url, r.signed('req-10', body), body);
    expect(res.status).toBe(503);
    expect(res.body.detail).toBe('the delivery could not be stored; retry later');
  });

  it('a key the cached set lacks (a rotation): the set is fetched again and the delivery verifies', async () => {
    const first = keyPair();
    const second = keyPair();
    let served = [first.jwk];
    const r = await receiver({ key: second, served: () => served });
    const warm = Buffer.from('{}');
    // Signed with `second`, which the set does not hold yet: refetched once, still unknown: 401.
    expect((await post(r.url, r.signed('req-r0', warm), warm)).status).toBe(401);
    expect(r.fetches()).toBe(2);
    served = [first.jwk, second.jwk];
    const body = Buffer.from('{"status":"OK"}');
    const res = await post(r.url, r.signed('req-r1', body), body);
    expect(res.status).toBe(200);
    expect(r.fetches()).toBe(3);
    expect(r.inserted.map((i) => (i.rows[0] as { request_id: string }).request_id)).toEqual(['req-r1']);
  });

  it('a rotation within minRefetchIntervalMs: no refetch, 401', async () => {
    const first = keyPair();
    const second = keyPair();
    let served = [first.jwk];
    const r = await receiver({ key: second, served: () => served, minRefetchIntervalMs: 3_600_000 });
    const body = Buffer.from('{}');
    expect((await post(r.url, r.signed('req-s0', body), body)).status).toBe(401); // first fetch: only `first`
    served = [second.jwk];
    expect((await post(r.url, r.signed('req-s1', body), body)).status).toBe(401);
    expect(r.fetches()).toBe(1);
  });

  it('over the budget of unauthenticated bytes: 503 busy with Retry-After 5, connection closed, counted memory', async () => {
    const registry = new Registry();
    const budgets = new PushBudgets({ ...defaultPushLimits(), PUSH_UNVERIFIED_MAX_BYTES: 1000, PUSH_UNVERIFIED_MAX_BYTES_PER_ADDRESS: 1000 }, registry);
    const r = await receiver({ budgets });
    const body = Buffer.alloc(2000, 0x20);
    const res = await post(r.url, r.signed('req-b', body), body);
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.headers.connection).toBe('close');
    expect(res.body).toMatchObject({
      title: 'Service Unavailable',
      detail: 'too many unauthenticated webhook body bytes are held (PUSH_UNVERIFIED_MAX_BYTES, PUSH_UNVERIFIED_MAX_BYTES_PER_ADDRESS); retry later',
    });
    expect(await outcomes(r.registry)).toEqual({ busy: 1 });
    const refused = await registry.getSingleMetric('tallyhouse_push_bodies_refused_total')!.get();
    expect(refused.values).toEqual([{ value: 1, labels: { endpoint: 'webhooks', reason: 'memory' } }]);
    expect(r.inserted).toEqual([]);
  });

  it('a chunked body (no Content-Length) is reserved chunk by chunk: within the budget it is read, past it 503', async () => {
    const budgets = new PushBudgets({ ...defaultPushLimits(), PUSH_UNVERIFIED_MAX_BYTES: 1000, PUSH_UNVERIFIED_MAX_BYTES_PER_ADDRESS: 1000 });
    const r = await receiver({ budgets });
    const chunked = async (id: string, parts: Buffer[]) => {
      const body = Buffer.concat(parts);
      const res = await request(r.url, { method: 'POST', headers: { 'content-type': 'application/json', ...r.signed(id, body) }, body: Readable.from(parts) });
      const text = await res.body.text();
      return { status: res.statusCode, body: JSON.parse(text) as Record<string, unknown> };
    };
    const small = [Buffer.from('{"status":'), Buffer.from('"OK"}')];
    expect((await chunked('req-c1', small)).status).toBe(200);
    expect(r.inserted.map((i) => (i.rows[0] as { raw: string }).raw)).toEqual(['{"status":"OK"}']);
    const big = await chunked('req-c2', [Buffer.alloc(600, 0x20), Buffer.alloc(600, 0x20)]);
    expect(big.status).toBe(503);
    expect(big.body.title).toBe('Service Unavailable');
    expect(await outcomes(r.registry)).toEqual({ accepted: 1, busy: 1 });
  });

  it('a chunked body past 16 MiB: 413 while reading', async () => {
    const r = await receiver();
    const parts = [Buffer.alloc(8 * 1024 * 1024, 0x20), Buffer.alloc(8 * 1024 * 1024, 0x20), Buffer.from(' ')];
    const res = await request(r.url, { method: 'POST', headers: { 'content-type': 'application/json', ...r.signed('req-l', Buffer.from('x')) }, body: Readable.from(parts) }).catch((e: unknown) => e);
    if (res instanceof Error) throw res;
    const text = await (res as Awaited<ReturnType<typeof request>>).body.text();
    expect((res as Awaited<ReturnType<typeof request>>).statusCode).toBe(413);
    expect(JSON.parse(text)).toMatchObject({ title: 'Payload Too Large', detail: `the body exceeds ${16 * 1024 * 1024} bytes` });
  });

  it('an empty body signed over the SHA-256 of nothing is a delivery: 200, its raw text empty', async () => {
    const r = await receiver();
    const res = await post(r.url, { ...r.signed('req-e', Buffer.alloc(0)), 'content-length': '0' }, '');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok', request_id: 'req-e' });
    expect(r.inserted.map((i) => [i.table, (i.rows[0] as { raw: string; status: string }).raw, (i.rows[0] as { status: string }).status])).toEqual([['webhook_deliveries', '', '']]);
  });

  it('a POST with no body and no content type (no stream handed over) signed over the SHA-256 of nothing: 200', async () => {
    const r = await receiver();
    const res = await request(r.url, { method: 'POST', headers: r.signed('req-n', Buffer.alloc(0)) });
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toEqual({ status: 'ok', request_id: 'req-n' });
    expect(r.inserted.map((i) => (i.rows[0] as { raw: string }).raw)).toEqual(['']);
  });

  it('a declared body past the budget is 503 busy, counted memory; one past 16 MiB is 413 with no Retry-After, not counted memory', async () => {
    const registry = new Registry();
    const budgets = new PushBudgets({ ...defaultPushLimits(), PUSH_UNVERIFIED_MAX_BYTES: 1000, PUSH_UNVERIFIED_MAX_BYTES_PER_ADDRESS: 1000 }, registry);
    const r = await receiver({ budgets });
    const res = await new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
      import('node:http').then(({ request: req }) => {
        const c = req(r.url, { method: 'POST', headers: { ...r.signed('req-t', Buffer.from('{}')), 'content-type': 'application/json', 'content-length': String(MAX_WEBHOOK_BODY_BYTES + 1) } });
        c.on('response', (res) => {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
        });
        c.on('error', (e) => ((e as NodeJS.ErrnoException).code === 'ECONNRESET' || (e as NodeJS.ErrnoException).code === 'EPIPE' ? undefined : reject(e)));
        c.write('{');
      });
    });
    expect(res.status).toBe(413);
    expect(res.headers['retry-after']).toBeUndefined();
    expect(res.headers.connection).toBe('close');
    expect(JSON.parse(res.body)).toMatchObject({ title: 'Payload Too Large', detail: `the body exceeds ${16 * 1024 * 1024} bytes` });
    const refused = await registry.getSingleMetric('tallyhouse_push_bodies_refused_total')!.get();
    expect(refused.values).toEqual([]);
  });

  it('webhook bodies hold at most half the unauthenticated budget: 600 of 1000 bytes is refused, 400 is read', async () => {
    const budgets = new PushBudgets({ ...defaultPushLimits(), PUSH_UNVERIFIED_MAX_BYTES: 1000, PUSH_UNVERIFIED_MAX_BYTES_PER_ADDRESS: 1000 });
    const r = await receiver({ budgets });
    const big = Buffer.from(`{"status":"${'x'.repeat(600 - 13)}"}`);
    expect(big.length).toBe(600);
    expect((await post(r.url, r.signed('req-h1', big), big)).status).toBe(503);
    const small = Buffer.from(`{"status":"${'x'.repeat(400 - 13)}"}`);
    expect((await post(r.url, r.signed('req-h2', small), small)).status).toBe(200);
    expect(await outcomes(r.registry)).toEqual({ busy: 1, accepted: 1 });
  });

  it('a chunked body reserves what each chunk adds: four chunks of 100 bytes fit a webhook share of 500', async () => {
    const budgets = new PushBudgets({ ...defaultPushLimits(), PUSH_UNVERIFIED_MAX_BYTES: 1000, PUSH_UNVERIFIED_MAX_BYTES_PER_ADDRESS: 1000 });
    const r = await receiver({ budgets });
    const parts = [Buffer.from(`{"status":"${'a'.repeat(89)}`), Buffer.alloc(100, 0x62), Buffer.alloc(100, 0x63), Buffer.from(`${'d'.repeat(98)}"}`)];
    expect(parts.map((p) => p.length)).toEqual([100, 100, 100, 100]);
    const body = Buffer.concat(parts);
    const res = await request(r.url, { method: 'POST', headers: { 'content-type': 'application/json', ...r.signed('req-c4', body) }, body: Readable.from(parts) });
    expect(res.statusCode).toBe(200);
    await res.body.text();
    expect((r.inserted[0].rows[0] as { raw: string }).raw).toBe(body.toString());
  });

  it('no read slot left (WEBHOOK_MAX_BODIES_READING 1): 503 busy naming the limit, Retry-After 5, counted busy', async () => {
    const registry = new Registry();
    // No wait for a slot (PUSH_SLOT_MAX_WAIT_MS 0): the refusal itself is what is tested here.
    const budgets = new PushBudgets({ ...defaultPushLimits(), WEBHOOK_MAX_BODIES_READING: 1, PUSH_SLOT_MAX_WAIT_MS: 0 }, registry);
    const r = await receiver({ budgets });
    const body = Buffer.from('{"status":"OK"}');
    // The first delivery holds the only slot: its headers are in, its body not yet.
    const { request: httpRequest } = await import('node:http');
    const first = httpRequest(r.url, { method: 'POST', headers: { ...r.signed('req-s1', body), 'content-type': 'application/json', 'content-length': String(body.length) } });
    first.on('error', () => undefined);
    first.flushHeaders();
    first.write(body.subarray(0, 1));
    closers.push(async () => void first.destroy());
    while (budgets.slots.webhooks.inUse === 0) await new Promise((resolve) => setImmediate(resolve));
    const res = await post(r.url, r.signed('req-s2', body), body);
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.headers.connection).toBe('close');
    expect(res.body).toMatchObject({
      title: 'Service Unavailable',
      detail: 'too many webhook bodies are being read: 1 bodies are being read already (WEBHOOK_MAX_BODIES_READING); retry later',
    });
    expect(await outcomes(r.registry)).toEqual({ busy: 1 });
    const refused = await registry.getSingleMetric('tallyhouse_push_bodies_refused_total')!.get();
    expect(refused.values).toEqual([{ value: 1, labels: { endpoint: 'webhooks', reason: 'busy' } }]);
  });

  it('a sender that drops the connection mid-body: nothing answered, counted, stored or logged as an error', async () => {
    const budgets = new PushBudgets(defaultPushLimits());
    // The key set fetched by a first delivery and not fetched again: whatever the cut request led to would be
    // decided within its own turn of the event loop, well before the round trip of the delivery after it.
    const r = await receiver({ budgets, minRefetchIntervalMs: 600_000 });
    const body = Buffer.from('{"status":"OK"}');
    expect((await post(r.url, r.signed('req-g1', body), body)).status).toBe(200);
    const { request: httpRequest } = await import('node:http');
    const cut = httpRequest(r.url, { method: 'POST', headers: { ...r.signed('req-g', body), 'content-type': 'application/json', 'content-length': String(body.length) } });
    cut.on('error', () => undefined);
    cut.flushHeaders();
    cut.write(body.subarray(0, 5));
    while (budgets.slots.webhooks.inUse === 0) await new Promise((resolve) => setImmediate(resolve));
    cut.destroy();
    // Its read slot comes back when its connection closes; a whole delivery afterwards is a round trip later still.
    while (budgets.slots.webhooks.inUse > 0) await new Promise((resolve) => setImmediate(resolve));
    expect((await post(r.url, r.signed('req-g2', body), body)).status).toBe(200);
    expect(await outcomes(r.registry)).toEqual({ accepted: 2 });
    expect(r.inserted.map((i) => (i.rows[0] as { request_id: string }).request_id)).toEqual(['req-g1', 'req-g2']);
    expect(r.fetches()).toBe(1);
    expect(r.logs.filter((l) => (l.level as number) >= 40)).toEqual([]);
  });

  it('the key set down: the error line names why the fetch failed', async () => {
    const r = await receiver({ keysDown: true });
    const body = Buffer.from('{}');
    expect((await post(r.url, r.signed('req-k', body), body)).status).toBe(503);
    const line = r.logs.find((l) => l.msg === 'webhook key set unavailable');
    expect(line).toMatchObject({ level: 50 });
    expect(String(line?.err)).toMatch(/^the webhook key set at http:\/\/127\.0\.0\.1:\d+\/\.well-known\/jwks\.json cannot be fetched: HTTP 503$/);
  });

  it('each field too deep is named in its reject row', () => {
    const deep = '['.repeat(1001) + ']'.repeat(1001);
    const text = `{"gateway_request_id":${deep},"status":${deep},"error":${deep},"payload_error":${deep}}`;
    const d = { requestId: 'r', userId: 'u', timestamp: NOW_S, message: Buffer.alloc(0), signature: Buffer.alloc(0) };
    const { row, unmapped } = deliveryRow(d, Buffer.from(text), NOW_S * 1000);
    expect(unmapped.map((u) => u.field)).toEqual(['gateway_request_id', 'status', 'error', 'payload_error']);
    expect(unmapped.map((u) => u.reason.split(':')[0])).toEqual(['gateway_request_id', 'status', 'error', 'payload_error']);
    expect([row.gateway_request_id, row.status, row.error, row.payload_error]).toEqual(['', '', '', '']);
  });
});

describe('verifiesWithAny against RFC 8032 section 7.1 (Ed25519 test vectors 1 and 2)', () => {
  // Public keys, messages and signatures copied from RFC 8032, 7.1 "TEST 1" and "TEST 2".
  const test1 = {
    x: Buffer.from('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a', 'hex').toString('base64url'),
    message: Buffer.alloc(0),
    signature: Buffer.from('e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b', 'hex'),
  };
  const test2 = {
    x: Buffer.from('3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c', 'hex').toString('base64url'),
    message: Buffer.from('72', 'hex'),
    signature: Buffer.from('92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00', 'hex'),
  };

  it('a key set serving the RFC keys verifies each vector with either key, and a flipped bit with none', async () => {
    const { url } = await jwksServer(() => ({ status: 200, body: { keys: [{ kty: 'OKP', crv: 'Ed25519', x: test1.x }, { kty: 'OKP', crv: 'Ed25519', x: test2.x }] } }));
    const keys = await new KeySet(url).current();
    expect(keys).toHaveLength(2);
    expect(verifiesWithAny(test1, keys)).toBe(true);
    expect(verifiesWithAny(test2, keys)).toBe(true);
    expect(verifiesWithAny(test1, keys.slice(1))).toBe(false);
    const flipped = Buffer.from(test2.signature);
    flipped[0] ^= 1;
    expect(verifiesWithAny({ message: test2.message, signature: flipped }, keys)).toBe(false);
    expect(verifiesWithAny({ message: Buffer.from('73', 'hex'), signature: test2.signature }, keys)).toBe(false);
  });
});

describe('webhookExtension', () => {
  async function runtime(config: Record<string, unknown>) {
    const { logger, lines } = capture();
    const app = Fastify({ loggerInstance: logger }) as unknown as FastifyInstance;
    closers.push(() => app.close());
    const inserted: unknown[] = [];
    const writer = {
      insert: (_t: unknown, rows: unknown[]) => {
        inserted.push(...rows);
        return Promise.resolve();
      },
      flush: () => Promise.resolve(),
      reject: () => Promise.resolve(),
    };
    // wall-clock: the service clock of the receiver's range list; deliveries are signed with the machine's clock
    const rt = { config: { ...defaultPushLimits(), ...config }, logger, registry: new Registry(), app, writer, store: undefined, now: () => new Date() };
    return { rt: rt as never, app, lines, inserted };
  }

  async function deliver(app: FastifyInstance, key: ReturnType<typeof keyPair>, requestId: string) {
    const body = Buffer.from('{"status":"OK"}');
    // wall-clock: the webhook receiver checks the signed timestamp against the machine's clock
    const ts = String(Math.floor(Date.now() / 1000));
    const res = await app.inject({
      method: 'POST',
      url: WEBHOOK_PATH,
      headers: {
        'content-type': 'application/json',
        'x-svc-webhook-request-id': requestId,
        'x-svc-webhook-user-id': 'usr_1',
        'x-svc-webhook-timestamp': ts,
        'x-svc-webhook-signature': sign(null, message(requestId, 'usr_1', ts, body), key.privateKey).toString('hex'),
      },
      payload: body,
    });
    return { status: res.statusCode, body: res.json() as unknown };
  }

  it('serves the route with the key set of WEBHOOK_JWKS_URL, logs that it is ready, and stores through the writer', async () => {
    const key = keyPair();
    const { url, state } = await jwksServer(() => ({ status: 200, body: { keys: [key.jwk] } }));
    const { rt, app, lines, inserted } = await runtime({ WEBHOOK_JWKS_URL: url, SVC_BASE_URL: 'http://127.0.0.1:9/none' });
    await webhookExtension()(rt);
    expect(lines).toContainEqual(expect.objectContaining({ level: 30, component: 'webhooks', path: '/v1/webhooks/queue', msg: 'webhook receiver ready' }));
    expect(state.fetches).toBe(0); // fetched on the first delivery, not at start-up
    expect(await deliver(app, key, 'req-x1')).toEqual({ status: 200, body: { status: 'ok', request_id: 'req-x1' } });
    expect(state.fetches).toBe(1);
    expect(inserted).toEqual([expect.objectContaining({ request_id: 'req-x1', status: 'OK', user_id: 'usr_1' })]);
    expect(lines).toContainEqual(expect.objectContaining({ component: 'webhooks', url, keys: 1, msg: 'webhook key set fetched' }));
  });

  it('a jwksUrl option (a function) wins over the configuration', async () => {
    const key = keyPair();
    const { url, state } = await jwksServer(() => ({ status: 200, body: { keys: [key.jwk] } }));
    const { rt, app } = await runtime({ WEBHOOK_JWKS_URL: 'http://127.0.0.1:9/unused', SVC_BASE_URL: 'http://127.0.0.1:9' });
    await webhookExtension({ jwksUrl: () => url })(rt);
    expect((await deliver(app, key, 'req-x2')).status).toBe(200);
    expect(state.fetches).toBe(1);
  });
});
