// Issue 31: the Faro receiver's request handling (src/ingest/faro/extension.ts) on fastify with a recording store,
// so that mutation testing can afford it (faro.test.ts covers the same against the embedded store, slowly). The
// oracle is the receiver's contract as its header and the README state it (Grafana's faro.receiver): the key in
// x-api-key, optional gzip, 202 when accepted, 400 on bad JSON, 401 on a wrong key, 413 over FARO_MAX_BODY_BYTES,
// 429 with Retry-After over the per-key rate, CORS only for FARO_ALLOWED_ORIGINS; a 404 naming FARO_APP_KEYS when off.
import Fastify, { type FastifyInstance } from 'fastify';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { FARO_PATH, faroExtension } from '../../src/ingest/faro/extension.js';
import { parseConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import type { Runtime } from '../../src/runtime.js';

const KEY = 'faro-key-0123456789abcdef';
const opened: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (opened.length > 0) await opened.pop()?.();
});

async function receiver(env: Record<string, string> = {}, opts: { demoKey?: string } = {}) {
  const config = parseConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), 'm3-faro-')), LOG_LEVEL: 'silent', NODE_ENV: 'test', FARO_APP_KEYS: `shop-web=${KEY}`, ...env });
  const inserted: string[] = [];
  const store = {
    mode: 'server',
    cluster: undefined,
    client: {
      query: async ({ query }: { query: string }) => ({
        json: async () => (query.includes('system.tables') ? [{ engine_full: 'MergeTree TTL toDateTime(timestamp) + toIntervalDay(3650)' }] : []),
      }),
      command: async () => ({}),
      exec: async ({ values }: { values: AsyncIterable<Buffer> }) => {
        for await (const c of values) inserted.push(c.toString());
        return { stream: Readable.from([]) };
      },
    },
    close: async () => undefined,
  };
  const writer = { reject: async () => ({ written: 0, rejected: 0 }), flush: async () => undefined, insertLines: async (_t: unknown, l: string[]) => ({ written: l.length, rejected: 0 }) };
  const app = Fastify();
  const rt = { config, logger: createLogger('silent'), registry: createRegistry({ defaultMetrics: false }), store, writer, app } as unknown as Runtime & { app: FastifyInstance };
  const component = await faroExtension(opts)(rt);
  await app.ready();
  opened.push(async () => {
    await app.close();
    await (component as { stop(): Promise<void> } | undefined)?.stop();
  });
  return { app, inserted };
}

const post = (app: FastifyInstance, body: string | Buffer, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: FARO_PATH, payload: body, headers: { 'content-type': 'application/json', 'x-api-key': KEY, ...headers } });

const payload = (messages: string[], extra: Record<string, unknown> = {}) =>
  // wall-clock: the Faro receiver judges item timestamps (retention, future) by the machine's clock
  JSON.stringify({ meta: { session: { id: 'sess-1' } }, logs: messages.map((message) => ({ message, level: 'info', timestamp: new Date().toISOString() })), ...extra });

describe('Faro receiver: off, keys and CORS', () => {
  it('without FARO_APP_KEYS it answers 404 naming the variable', async () => {
    const { app } = await receiver({ FARO_APP_KEYS: '' });
    const res = await post(app, payload(['x']));
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ title: 'Not Found', detail: 'the Faro receiver is off: set FARO_APP_KEYS (app=key pairs) to enable it' });
  });

  it('in demo mode without FARO_APP_KEYS it takes the demo key', async () => {
    const { app } = await receiver({ FARO_APP_KEYS: '' }, { demoKey: KEY });
    expect((await post(app, payload(['x']))).statusCode).toBe(202);
  });

  it('refuses a missing or wrong key with 401, and takes the right one', async () => {
    const { app } = await receiver();
    const wrong = await post(app, payload(['x']), { 'x-api-key': 'nope' });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json()).toMatchObject({ title: 'Unauthorized', detail: 'x-api-key is missing or not one of FARO_APP_KEYS' });
    expect(wrong.headers.connection).toBe('close');
    expect((await app.inject({ method: 'POST', url: FARO_PATH, payload: payload(['x']), headers: { 'content-type': 'application/json' } })).statusCode).toBe(401);
    expect((await post(app, payload(['x']))).statusCode).toBe(202);
  });

  it('answers CORS for an allowed origin only, preflight included', async () => {
    const { app } = await receiver({ FARO_ALLOWED_ORIGINS: 'https://shop.example' });
    const pre = await app.inject({ method: 'OPTIONS', url: FARO_PATH, headers: { origin: 'https://shop.example' } });
    expect(pre.statusCode).toBe(204);
    expect([pre.headers['access-control-allow-origin'], pre.headers.vary, pre.headers['access-control-allow-methods'], pre.headers['access-control-allow-headers'], pre.headers['access-control-max-age']]).toEqual([
      'https://shop.example',
      'Origin',
      'POST, OPTIONS',
      'content-type, content-encoding, x-api-key, x-faro-session-id',
      '600',
    ]);
    const other = await app.inject({ method: 'OPTIONS', url: FARO_PATH, headers: { origin: 'https://evil.example' } });
    expect(other.statusCode).toBe(204);
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
    expect(other.headers['access-control-allow-methods']).toBeUndefined();
    const none = await app.inject({ method: 'OPTIONS', url: FARO_PATH });
    expect(none.headers['access-control-allow-methods']).toBeUndefined();
    expect((await post(app, payload(['x']), { origin: 'https://shop.example' })).headers['access-control-allow-origin']).toBe('https://shop.example');
    expect((await post(app, payload(['y']), { origin: 'https://evil.example' })).headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('Faro receiver: bodies', () => {
  it('accepts a payload with 202 and its counts, and the same payload again as a duplicate', async () => {
    const { app } = await receiver();
    const body = payload(['one', 'two']);
    const first = await post(app, body);
    expect(first.statusCode).toBe(202);
    expect(first.json()).toEqual({ accepted: 2, rejected: 0, duplicate: false });
    expect((await post(app, body)).json()).toEqual({ accepted: 2, rejected: 0, duplicate: true });
  });

  it('names each refused item, and at most 10 of them', async () => {
    const { app } = await receiver();
    // wall-clock: the Faro receiver judges item timestamps (retention, future) by the machine's clock
    const logs = [{ message: 'ok', level: 'info', timestamp: new Date().toISOString() }, ...Array.from({ length: 11 }, () => ({ level: 'info', timestamp: 'never' }))];
    const res = await post(app, JSON.stringify({ meta: { session: { id: 's' } }, logs }));
    expect(res.statusCode).toBe(202);
    const out = res.json();
    expect([out.accepted, out.rejected, out.errors.length, out.errors[0].item]).toEqual([1, 11, 10, 1]);
  });

  it('refuses an empty body, non-JSON and JSON that is not an object with 400', async () => {
    const { app } = await receiver();
    expect((await post(app, '')).json()).toMatchObject({ title: 'Bad Request', detail: 'empty body: expected a Faro payload (JSON)' });
    const bad = await post(app, '{"meta":');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().detail).toMatch(/^the body is not JSON: /);
    for (const b of ['[1]', 'null', '7']) {
      const r = await post(app, b);
      expect([r.statusCode, r.json().detail]).toEqual([400, 'expected a JSON object with meta, logs, exceptions, measurements, events or traces']);
    }
  });

  it('reads a gzip body (any case of the encoding), refuses bad gzip with 400 and a bomb with 413', async () => {
    const { app } = await receiver({ FARO_MAX_BODY_BYTES: '4096' });
    expect((await post(app, gzipSync(payload(['zipped'])), { 'content-encoding': 'GZIP' })).json()).toEqual({ accepted: 1, rejected: 0, duplicate: false });
    expect((await post(app, Buffer.from('not gzip'), { 'content-encoding': 'gzip' })).json()).toMatchObject({ title: 'Bad Request', detail: 'content-encoding gzip: the body is not valid gzip' });
    const bomb = await post(app, gzipSync(payload(['x'.repeat(10_000)])), { 'content-encoding': 'gzip' });
    expect(bomb.statusCode).toBe(413);
    expect(bomb.json()).toMatchObject({ title: 'Payload Too Large', detail: 'the decompressed body is over FARO_MAX_BODY_BYTES (4096)' });
  });

  it('over the per-key rate: 429 with Retry-After, and the connection closed', async () => {
    const { app } = await receiver({ FARO_RATE_LIMIT_PER_SECOND: '1' });
    // A bucket of one token, one a second: posts one after another meet a refusal within a second.
    let refused;
    for (let i = 0; i < 1000 && !refused; i++) {
      const res = await post(app, payload([`rate ${i}`]));
      if (res.statusCode === 429) refused = res;
      else expect(res.statusCode).toBe(202);
    }
    expect(refused?.headers['retry-after']).toBe('1');
    expect(refused?.headers.connection).toBe('close');
    expect(refused?.json()).toMatchObject({ title: 'Too Many Requests', detail: 'over FARO_RATE_LIMIT_PER_SECOND for shop-web; retry after 1 s' });
  });

  it('a rate of 50 a second takes a burst of 50 from one key', async () => {
    const { app } = await receiver({ FARO_RATE_LIMIT_PER_SECOND: '50' });
    const statuses = [];
    for (let i = 0; i < 50; i++) statuses.push((await post(app, payload([`burst ${i}`]))).statusCode);
    expect(statuses.every((s) => s === 202)).toBe(true);
  });
});
