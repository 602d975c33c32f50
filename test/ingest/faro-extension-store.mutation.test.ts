// Issue 31: what the Faro receiver (src/ingest/faro/extension.ts) hands on after its 202, on fastify with a
// recording store (no ClickHouse): the rows that reach faro_items, the rejects that reach ingest_rejects, the
// table's retention, the per-key token bucket on a clock the test moves, the request-id cap per session, the read
// slots and a full spool. Oracles: the receiver's contract (its header comment and the README: 202 once every item
// and every reject is in the spool, a bad item alone in ingest_rejects with its reason, FARO_RATE_LIMIT_PER_SECOND
// payloads a second per key with bursts of as many, FARO_SESSION_MAX_REQUEST_IDS, FARO_RETENTION_DAYS as the TTL,
// 503 with Retry-After when busy or full) and hand-worked literals.
import Fastify, { type FastifyInstance } from 'fastify';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FARO_PATH, faroExtension } from '../../src/ingest/faro/extension.js';
import { parseConfig } from '../../src/config.js';
import { createRegistry } from '../../src/metrics.js';
import type { Runtime } from '../../src/runtime.js';
import { pushBudgets } from '../../src/ingest/body-budget.js';
import { captureLog } from '../support/log-capture.js';

const KEY = 'faro-key-0123456789abcdef';
const KEY2 = 'faro-key-fedcba9876543210';
const RID1 = '0b6a4c1e-2f3d-4a5b-8c7d-9e0f1a2b3c4d';
const RID2 = '11111111-2222-4333-8444-555555555555';
const RID3 = '22222222-3333-4444-8555-666666666666';
const opened: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.useRealTimers();
  while (opened.length > 0) await opened.pop()?.();
});

interface Options {
  env?: Record<string, string>;
  demoKey?: string;
  /** The TTL days faro_items has now (the migration writes 90). */
  ttlDays?: number;
  /** What the store answers for a session's stored request ids. */
  storedIds?: (params: Record<string, unknown>) => Promise<Array<{ request_id: string }>>;
  /** Inserts fail while this says so. */
  storeDown?: () => boolean;
  /** An earlier receiver's DATA_DIR (a restart). */
  dataDir?: string;
}

async function receiver(o: Options = {}) {
  const dataDir = o.dataDir ?? mkdtempSync(join(tmpdir(), 'c1-faro-'));
  const config = parseConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', NODE_ENV: 'test', FARO_APP_KEYS: `shop-web=${KEY},admin-web=${KEY2}`, WRITER_FLUSH_INTERVAL_MS: '10', ...o.env });
  const inserts: Array<{ table: string; query: string; rows: Array<Record<string, unknown>> }> = [];
  const commands: string[] = [];
  const commandSettings: unknown[] = [];
  const sessionQueries: Array<Record<string, unknown>> = [];
  const store = {
    mode: 'server',
    cluster: undefined,
    client: {
      query: async ({ query, query_params }: { query: string; query_params: Record<string, unknown> }) => {
        if (query.includes('system.tables')) return { json: async () => [{ engine_full: `MergeTree TTL toDateTime(timestamp) + toIntervalDay(${o.ttlDays ?? 90})` }] };
        if (query.includes('request_id') && query.includes('session_id')) {
          sessionQueries.push(query_params);
          const rows = o.storedIds ? await o.storedIds(query_params) : [];
          return { json: async () => rows };
        }
        return { json: async () => [] };
      },
      command: async ({ query, clickhouse_settings }: { query: string; clickhouse_settings?: unknown }) => {
        commands.push(query);
        commandSettings.push(clickhouse_settings);
        return {};
      },
      exec: async ({ query, values }: { query: string; values: AsyncIterable<Buffer> }) => {
        if (o.storeDown?.()) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8123'), { code: 'ECONNREFUSED' });
        let text = '';
        for await (const c of values) text += c.toString();
        const table = /INSERT INTO (\w+)/.exec(query)?.[1] ?? '?';
        inserts.push({ table, query, rows: text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) });
        return { stream: Readable.from([]) };
      },
    },
    close: async () => undefined,
  };
  const writer = { reject: async () => ({ written: 0, rejected: 0 }), flush: async () => undefined, insertLines: async (_t: unknown, l: string[]) => ({ written: l.length, rejected: 0 }) };
  const log = captureLog('info');
  const app = Fastify();
  const registry = createRegistry({ defaultMetrics: false });
  const rt = { config, logger: log.logger, registry, store, writer, app } as unknown as Runtime & { app: FastifyInstance };
  const component = (await faroExtension({ demoKey: o.demoKey })(rt)) as { stop(): Promise<void>; spool: { bytes: number; close(): Promise<void> } } | undefined;
  await app.ready();
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await app.close();
    await component?.stop();
  };
  opened.push(stop);
  const rowsOf = (table: string) => inserts.filter((i) => i.table === table).flatMap((i) => i.rows);
  return { app, inserts, rowsOf, commands, commandSettings, sessionQueries, log, registry, dataDir, component, stop };
}

const post = (app: FastifyInstance, body: string | Buffer, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: FARO_PATH, payload: body, headers: { 'content-type': 'application/json', 'x-api-key': KEY, ...headers } });

// wall-clock: the Faro receiver judges item timestamps (retention, future) by the machine's clock
const NOW_ISO = () => new Date().toISOString();
const until = (check: () => void) => vi.waitFor(check, { timeout: 20_000, interval: 20 });

describe('Faro receiver: what reaches the store', () => {
  it('accepted items reach faro_items as rows of the key\'s app; a bad item reaches ingest_rejects with its reason and place', async () => {
    const r = await receiver();
    const ts = NOW_ISO();
    const body = JSON.stringify({
      meta: { session: { id: 'sess-1' }, page: { url: 'https://shop.example/' } },
      logs: [{ message: `fetch /requests/${RID1}`, level: 'info', timestamp: ts }, { level: 'info' }],
    });
    const res = await post(r.app, body);
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ accepted: 1, rejected: 1, duplicate: false, errors: [{ item: 1, reason: 'log: message must be a string' }] });
    await until(() => expect(r.rowsOf('faro_items')).toHaveLength(1));
    await until(() => expect(r.rowsOf('ingest_rejects')).toHaveLength(1));
    expect(r.rowsOf('faro_items')[0]).toMatchObject({
      kind: 'log',
      app: 'shop-web',
      session_id: 'sess-1',
      page_url: 'https://shop.example/',
      message: `fetch /requests/${RID1}`,
      request_id: RID1,
      timestamp: ts.replace('T', ' ').replace('Z', ''),
    });
    // The rows go in with the columns of faro_items, as JSONEachRow.
    expect(r.inserts.find((i) => i.table === 'faro_items')?.query).toBe(
      'INSERT INTO faro_items (received_at, timestamp, kind, app, app_namespace, release, app_version, environment, session_id, user_id, page_url, level, message, domain, values, attributes, trace_id, span_id, request_id, raw) FORMAT JSONEachRow',
    );
    const reject = r.rowsOf('ingest_rejects')[0];
    expect(reject).toMatchObject({ source: 'faro', reason: 'log: message must be a string', raw: '{"level":"info"}', line: 1 });
    expect(String(reject.batch_id)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('takes each configured key as its own app; the same payload from another app is not a duplicate', async () => {
    const r = await receiver();
    const body = JSON.stringify({ logs: [{ message: 'same' }] });
    expect((await post(r.app, body)).json()).toMatchObject({ duplicate: false });
    expect((await post(r.app, body, { 'x-api-key': KEY2 })).json()).toMatchObject({ duplicate: false });
    expect((await post(r.app, body, { 'x-api-key': KEY2 })).json()).toMatchObject({ duplicate: true });
    await until(() => expect(r.rowsOf('faro_items').map((x) => x.app).sort()).toEqual(['admin-web', 'shop-web']));
  });

  it('a payload with nothing but rejects stores no row and one reject; an empty object stores nothing', async () => {
    const r = await receiver();
    expect((await post(r.app, JSON.stringify({ logs: [{}] }))).json()).toEqual({ accepted: 0, rejected: 1, duplicate: false, errors: [{ item: 0, reason: 'log: message must be a string' }] });
    expect((await post(r.app, '{}')).json()).toEqual({ accepted: 0, rejected: 0, duplicate: false });
    await until(() => expect(r.rowsOf('ingest_rejects')).toHaveLength(1));
    // Nothing at all went to faro_items, not even an empty insert.
    expect(r.inserts.map((i) => i.table)).toEqual(['ingest_rejects']);
  });

  it('the session comes from x-faro-session-id when the payload names none', async () => {
    const r = await receiver();
    await post(r.app, JSON.stringify({ logs: [{ message: 'm' }] }), { 'x-faro-session-id': 'hdr-sess' });
    await until(() => expect(r.rowsOf('faro_items').map((x) => x.session_id)).toEqual(['hdr-sess']));
  });

  it('a body nested past 1000 levels has its deep item refused as too_deep; its neighbour is kept', async () => {
    const r = await receiver();
    const deep = `{"message":"deep","context":{"a":${'['.repeat(1000)}${']'.repeat(1000)}}}`;
    const res = await post(r.app, `{"logs":[{"message":"ok"},${deep}]}`);
    expect(res.json()).toEqual({ accepted: 1, rejected: 1, duplicate: false, errors: [{ item: 1, reason: 'log: too_deep: nested 1002 levels deep; at most 1000 can be stored' }] });
  });

  it('a POST without any body is a 400 asking for a Faro payload', async () => {
    const r = await receiver();
    const res = await r.app.inject({ method: 'POST', url: FARO_PATH, headers: { 'x-api-key': KEY } });
    expect([res.statusCode, res.json()]).toMatchObject([400, { title: 'Bad Request', detail: 'empty body: expected a Faro payload (JSON)' }]);
  });

  it('bodies that are not JSON, or JSON but not an object, are Bad Request errors', async () => {
    const r = await receiver();
    expect((await post(r.app, '{"logs":')).json()).toMatchObject({ title: 'Bad Request', detail: expect.stringMatching(/^the body is not JSON: /) });
    expect((await post(r.app, '[]')).json()).toMatchObject({ title: 'Bad Request', detail: 'expected a JSON object with meta, logs, exceptions, measurements, events or traces' });
  });

  it('a spool that fails otherwise than full is a 500, not a 503 to retry', async () => {
    const r = await receiver();
    await r.component!.spool.close();
    const res = await post(r.app, JSON.stringify({ logs: [{ message: 'm' }] }));
    expect(res.statusCode).toBe(500);
    expect(res.headers['retry-after']).toBeUndefined();
  });

  it('a body over FARO_MAX_BODY_BYTES is refused with 413 before it is parsed', async () => {
    const r = await receiver({ env: { FARO_MAX_BODY_BYTES: '100' } });
    const body = JSON.stringify({ logs: [{ message: 'x'.repeat(200) }] });
    expect((await post(r.app, body)).statusCode).toBe(413);
    expect((await post(r.app, JSON.stringify({ logs: [{ message: 'short' }] }))).statusCode).toBe(202);
  });
  it('items accepted while the store is down reach it after a restart, once', async () => {
    const first = await receiver({ storeDown: () => true });
    expect((await post(first.app, JSON.stringify({ logs: [{ message: 'kept across a restart' }] }))).statusCode).toBe(202);
    await first.stop();
    const second = await receiver({ dataDir: first.dataDir });
    await until(() => expect(second.rowsOf('faro_items').map((x) => x.message)).toEqual(['kept across a restart']));
    expect(first.inserts).toEqual([]);
  });
});

describe('Faro receiver: set-up', () => {
  it('sets faro_items to FARO_RETENTION_DAYS when the table says otherwise, and logs that it is on', async () => {
    const r = await receiver({ env: { FARO_RETENTION_DAYS: '30', FARO_ALLOWED_ORIGINS: 'https://shop.example' } });
    expect(r.commands).toEqual(['ALTER TABLE faro_items MODIFY TTL toDateTime(timestamp) + INTERVAL 30 DAY']);
    // Existing parts keep their data until they merge (no rewrite at start-up), and the change is logged.
    expect(r.commandSettings).toEqual([{ materialize_ttl_after_modify: 0 }]);
    expect(r.log.lines.find((l) => l.msg === 'faro_items retention set to 30 days')).toMatchObject({ component: 'faro', table: 'faro_items', from: 90, to: 30 });
    expect(r.log.lines.find((l) => l.msg === 'Faro receiver on')).toMatchObject({ component: 'faro', path: '/v1/faro/collect', apps: ['shop-web', 'admin-web'], origins: ['https://shop.example'] });
    const same = await receiver({ env: { FARO_RETENTION_DAYS: '30' }, ttlDays: 30 });
    expect(same.commands).toEqual([]);
  });

  it('an item older than FARO_RETENTION_DAYS is refused by that retention', async () => {
    const r = await receiver({ env: { FARO_RETENTION_DAYS: '2' } });
    // wall-clock: the Faro receiver judges item timestamps (retention, future) by the machine's clock
    const old = new Date(Date.now() - 3 * 86_400_000).toISOString();
    expect((await post(r.app, JSON.stringify({ logs: [{ message: 'm', timestamp: old }] }))).json().errors).toEqual([
      { item: 0, reason: 'log: timestamp is older than the 2-day retention (FARO_RETENTION_DAYS): it would be dropped as soon as stored' },
    ]);
  });

  it('keeps its spool under DATA_DIR/spool/faro; the component is named faro', async () => {
    const r = await receiver();
    expect(existsSync(join(r.dataDir, 'spool', 'faro'))).toBe(true);
    expect((r.component as unknown as { name: string }).name).toBe('faro');
  });

  it('FARO_APP_KEYS naming no pair (",") leaves the receiver off', async () => {
    const r = await receiver({ env: { FARO_APP_KEYS: ',' } });
    expect((await post(r.app, '{}')).statusCode).toBe(404);
  });

  it('with FARO_APP_KEYS set, the demo key is not one of them', async () => {
    const r = await receiver({ demoKey: 'demo-key-0123456789abcdef' });
    expect((await post(r.app, '{}', { 'x-api-key': 'demo-key-0123456789abcdef' })).statusCode).toBe(401);
  });

  it('tallyhouse_faro_spool_bytes is what waits in the spool: 0 once the store took it, more while it is down', async () => {
    let down = true;
    const r = await receiver({ storeDown: () => down });
    const body = JSON.stringify({ logs: [{ message: 'kept while the store is down' }] });
    expect((await post(r.app, body)).statusCode).toBe(202);
    const gauge = async () => (await r.registry.getSingleMetric('tallyhouse_faro_spool_bytes')!.get()).values[0]?.value;
    expect(await gauge()).toBe(r.component!.spool.bytes);
    expect(await gauge()).toBeGreaterThan(0);
    expect(await r.registry.metrics()).toMatch(/^# HELP tallyhouse_faro_spool_bytes \S.*spool/m);
    down = false;
    await until(() => expect(r.rowsOf('faro_items')).toHaveLength(1));
    await until(async () => expect(await gauge()).toBe(0));
  });
});

describe('Faro receiver: the token bucket per key', () => {
  it('bursts of FARO_RATE_LIMIT_PER_SECOND, refilled at that rate, never above it; each key its own bucket', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.parse('2026-11-21T12:00:00Z'));
    const r = await receiver({ env: { FARO_RATE_LIMIT_PER_SECOND: '2' } });
    let n = 0;
    const send = async (key = KEY) => {
      const res = await post(r.app, JSON.stringify({ logs: [{ message: `m${n++}` }] }), { 'x-api-key': key });
      return res.statusCode === 429 ? `429 ${String(res.headers['retry-after'])}` : String(res.statusCode);
    };
    expect([await send(), await send(), await send()]).toEqual(['202', '202', '429 1']);
    // The other key has a full bucket of its own.
    expect([await send(KEY2), await send(KEY2), await send(KEY2)]).toEqual(['202', '202', '429 1']);
    // Half a second later: one token back (2 a second).
    vi.setSystemTime(Date.parse('2026-11-21T12:00:00.500Z'));
    expect([await send(), await send()]).toEqual(['202', '429 1']);
    // A quarter of a second: half a token, not enough.
    vi.setSystemTime(Date.parse('2026-11-21T12:00:00.750Z'));
    expect(await send()).toBe('429 1');
    // Ten idle seconds fill the bucket to 2, not 20.
    vi.setSystemTime(Date.parse('2026-11-21T12:00:10.750Z'));
    expect([await send(), await send(), await send()]).toEqual(['202', '202', '429 1']);
  });
});

describe('Faro receiver: request ids per session', () => {
  it('past FARO_SESSION_MAX_REQUEST_IDS an item is stored without its request id, and the answer counts it', async () => {
    const r = await receiver({ env: { FARO_SESSION_MAX_REQUEST_IDS: '2' } });
    const logs = [RID1, RID2, RID3].map((id) => ({ message: `GET /requests/${id}` }));
    const res = await post(r.app, JSON.stringify({ meta: { session: { id: 'capped' } }, logs }));
    expect(res.json()).toEqual({
      accepted: 3,
      rejected: 0,
      duplicate: false,
      request_ids_over_limit: 1,
      message: '1 items were stored without their request id: their session already names FARO_SESSION_MAX_REQUEST_IDS (2) request ids',
    });
    expect(r.sessionQueries).toEqual([{ session_id: 'capped', limit: 2 }]);
    await until(() => expect(r.rowsOf('faro_items').map((x) => x.request_id)).toEqual([RID1, RID2, '']));
  });

  it('counts the ids the store already holds for the session; a store that fails counts as none, with a warning', async () => {
    const held = await receiver({ env: { FARO_SESSION_MAX_REQUEST_IDS: '1' }, storedIds: async () => [{ request_id: RID3 }] });
    expect((await post(held.app, JSON.stringify({ meta: { session: { id: 's' } }, logs: [{ message: `/requests/${RID1}` }] }))).json()).toMatchObject({ request_ids_over_limit: 1 });
    // An id the store already holds for the session is no new one: kept, whatever the cap.
    const known = await receiver({ env: { FARO_SESSION_MAX_REQUEST_IDS: '1' }, storedIds: async () => [{ request_id: RID1 }] });
    expect((await post(known.app, JSON.stringify({ meta: { session: { id: 's' } }, logs: [{ message: `/requests/${RID1}` }] }))).json()).toEqual({ accepted: 1, rejected: 0, duplicate: false });
    const failing = await receiver({
      env: { FARO_SESSION_MAX_REQUEST_IDS: '1' },
      storedIds: async () => {
        throw new Error('store down');
      },
    });
    expect((await post(failing.app, JSON.stringify({ meta: { session: { id: 's' } }, logs: [{ message: `/requests/${RID1}` }] }))).json()).toEqual({ accepted: 1, rejected: 0, duplicate: false });
    expect(failing.log.lines.find((l) => l.level === 40)).toMatchObject({ component: 'faro', err: 'store down', msg: "a session's stored request ids could not be read; counting from none" });
  });
});

describe('Faro receiver: busy and full', () => {
  it('beyond FARO_MAX_BODIES_READING bodies read at once: 503 with Retry-After 5, naming the limit; the slot comes back', async () => {
    // No wait for a slot (PUSH_SLOT_MAX_WAIT_MS 0): the refusal itself is what is tested here.
    const r = await receiver({ env: { FARO_MAX_BODIES_READING: '1', PUSH_SLOT_MAX_WAIT_MS: '0' } });
    await r.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = r.app.server.address() as AddressInfo;
    const slow = request({ host: '127.0.0.1', port, method: 'POST', path: FARO_PATH, headers: { 'content-type': 'application/json', 'x-api-key': KEY, 'transfer-encoding': 'chunked' } });
    const first = new Promise<number>((resolve, reject) => {
      slow.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      slow.on('error', reject);
    });
    slow.write('{"logs":[');
    // Once its headers are in, it holds the only slot.
    const slots = pushBudgets(r.app.server, parseConfig({ NODE_ENV: 'test' })).slots.faro;
    await until(() => expect(slots.inUse).toBe(1));
    const busy = await post(r.app, '{}');
    expect(busy.statusCode).toBe(503);
    expect(busy.headers['retry-after']).toBe('5');
    expect(busy.headers.connection).toBe('close');
    expect(busy.json()).toMatchObject({ title: 'Service Unavailable', detail: '1 bodies are being read already (FARO_MAX_BODIES_READING); retry after 5 s' });
    const refused = (await r.registry.getSingleMetric('tallyhouse_push_bodies_refused_total')!.get()).values;
    expect(refused.map((v) => [v.labels, v.value])).toEqual([[{ endpoint: 'faro', reason: 'busy' }, 1]]);
    slow.end(']}');
    expect(await first).toBe(202);
    await until(async () => expect((await post(r.app, '{"logs":[]}')).statusCode).toBe(202));
  });

  it('a sender that goes away mid-body gives its read slot back', async () => {
    // No wait for a slot (PUSH_SLOT_MAX_WAIT_MS 0): the refusal itself is what is tested here.
    const r = await receiver({ env: { FARO_MAX_BODIES_READING: '1', PUSH_SLOT_MAX_WAIT_MS: '0' } });
    await r.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = r.app.server.address() as AddressInfo;
    const gone = request({ host: '127.0.0.1', port, method: 'POST', path: FARO_PATH, headers: { 'content-type': 'application/json', 'x-api-key': KEY, 'transfer-encoding': 'chunked' } });
    gone.on('error', () => undefined);
    gone.write('{"logs":[');
    const slots = pushBudgets(r.app.server, parseConfig({ NODE_ENV: 'test' })).slots.faro;
    await until(() => expect(slots.inUse).toBe(1));
    gone.destroy();
    await until(() => expect(slots.inUse).toBe(0));
  });

  it('a full spool: 503 with the spool\'s Retry-After', async () => {
    const r = await receiver({ env: { LOG_DRAIN_SPOOL_MAX_BYTES: '300' }, storeDown: () => true });
    let full;
    for (let i = 0; i < 50 && !full; i++) {
      const res = await post(r.app, JSON.stringify({ logs: [{ message: `filler ${i} ${'f'.repeat(100)}` }] }));
      if (res.statusCode === 503) full = res;
      else expect(res.statusCode).toBe(202);
    }
    expect(full?.json()).toMatchObject({ title: 'Service Unavailable', detail: expect.stringContaining('spool is full') });
    expect(Number(full?.headers['retry-after'])).toBeGreaterThan(0);
  });
});
