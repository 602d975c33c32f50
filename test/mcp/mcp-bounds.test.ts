// Issue 49.3/49.5: MCP bounded like the rest. The review: 2,000 held GET /mcp streams added 475 MB (~240 KB each),
// and one 30 KB POST /mcp JSON-RPC batch ran 100 tool queries and answered 14 MB. Here: GET streams are capped
// overall (MCP_MAX_STREAMS, 503) and per token (MCP_MAX_STREAMS_PER_CLIENT, 429), and a batch over
// MCP_MAX_BATCH_MESSAGES is refused (400) before any call runs. Defaults: 32 streams, 4 per client, 8 messages.
import { request as httpRequest, type ClientRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/service.js';
import { mcpExtension } from '../../src/mcp/extension.js';
import { createRegistry } from '../../src/metrics.js';
import { createLogger } from '../../src/log.js';
import { testConfig } from '../support/store.js';
import { apiExtension } from '../../src/api/index.js';
import { sessionRoutes } from '../../src/api/session-routes.js';
import { activeReadGate, inReadLane } from '../../src/store/read-lanes.js';

const TOKENS = Array.from({ length: 10 }, (_, i) => `mcp-bounds-token-${i}-0123456789`);
let service: Service;
let port: number;
const held: ClientRequest[] = [];

beforeAll(async () => {
  const config = testConfig({ PORT: '0', JOBS_ENABLED: 'false', API_TOKENS: TOKENS.join(','), METRICS_TOKEN: 'metrics-token-0123456789' });
  service = await startService(config, { logger: createLogger('silent'), registry: createRegistry({ defaultMetrics: false }), extensions: [mcpExtension('test')] });
  port = Number(new URL(service.url).port);
});
afterAll(async () => {
  for (const r of held) r.destroy();
  await service?.close();
});

/** GET /mcp as an event stream; resolves with the status once the head arrives (an accepted stream stays open). */
function openStream(token: string): Promise<number> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, method: 'GET', path: '/mcp', agent: false, headers: { accept: 'text/event-stream', authorization: `Bearer ${token}` } });
    req.on('response', (res) => {
      if (res.statusCode === 200) held.push(req);
      else res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.end();
  });
}

async function postMcp(body: unknown, url = service.url): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${TOKENS[0]}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

describe('MCP bounds', () => {
  it('2,000 GET /mcp from 10 tokens: 32 held (4 per token at most), the rest refused at once (429 per token, 503 overall), with < 100 MB growth', async () => {
    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    // One token alone: its fifth stream is refused (per client), whatever room there is overall.
    const first = [];
    for (let i = 0; i < 5; i++) first.push(await openStream(TOKENS[0]));
    expect(first).toEqual([200, 200, 200, 200, 429]);
    const statuses: number[] = [...first];
    // In waves (each refused connection closes at once), round-robin over the tokens.
    for (let wave = 0; wave < 10; wave++) {
      const size = wave === 9 ? 195 : 200;
      statuses.push(...(await Promise.all(Array.from({ length: size }, (_, i) => openStream(TOKENS[(wave * 200 + i) % TOKENS.length])))));
    }
    const growthMb = (process.memoryUsage().rss - rssBefore) / 1e6;
    const count = (s: number) => statuses.filter((x) => x === s).length;
    console.log(`2,000 GET /mcp: ${count(200)} held, ${count(429)} refused per token, ${count(503)} refused overall; RSS growth ${growthMb.toFixed(1)} MB (client and service in this process)`);
    expect([count(200), count(429) + count(503), statuses.length]).toEqual([32, 1968, 2000]);
    expect([count(429) > 0, count(503) > 0]).toEqual([true, true]);
    expect(growthMb).toBeLessThan(100);
    // A closed stream frees its place.
    held.pop()!.destroy();
    let status = 0;
    for (let i = 0; i < 100 && status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 20));
      status = await openStream(TOKENS[9 - (i % 10)]);
    }
    expect(status).toBe(200);
  }, 120_000);

  it('a JSON-RPC batch over MCP_MAX_BATCH_MESSAGES (100 calls) is refused 400 naming the limit, before any call runs; one at the limit is answered', async () => {
    const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'cost', arguments: { from: '2026-11-01', to: '2026-11-02' } } });
    const refused = await postMcp(Array.from({ length: 100 }, (_, i) => call(i)));
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toBe('Invalid Request: a batch of 100 messages exceeds MCP_MAX_BATCH_MESSAGES (8); send fewer calls per request');
    const pings = await postMcp(Array.from({ length: 8 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' })));
    expect(pings.status).toBe(200);
    expect((pings.body as Array<{ id: number; result: unknown }>).map((r) => r.id).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  }, 60_000);
});

describe('MCP answer bytes per request (MCP_MAX_RESPONSE_BYTES)', () => {
  const health = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'pipeline_health', arguments: {} } });
  type Answer = { id: number; result: { isError?: boolean; content: Array<{ text: string }> } };

  it("a batch's answers share the request's budget: past it a call is a tool error naming the limit, and the next request starts afresh", async () => {
    const one = await postMcp(health(1));
    expect(one.status).toBe(200);
    expect(one.body.result.isError).toBeUndefined();
    const size = Buffer.byteLength(JSON.stringify(one.body.result));
    // Room for two answers, not three: a second service on the same store with that limit.
    const limit = Math.floor(size * 2.5);
    const small = await startService(
      testConfig({ PORT: '0', JOBS_ENABLED: 'false', API_TOKENS: TOKENS.join(','), METRICS_TOKEN: 'metrics-token-0123456789', MCP_MAX_RESPONSE_BYTES: String(limit) }),
      { logger: createLogger('silent'), registry: createRegistry({ defaultMetrics: false }), extensions: [mcpExtension('test')] },
    );
    try {
      const batch = await postMcp([health(1), health(2), health(3)], small.url);
      expect(batch.status).toBe(200);
      const answers = (batch.body as Answer[]).sort((a, b) => a.id - b.id);
      const refused = answers.filter((a) => a.result.isError);
      expect([answers.length, refused.length]).toEqual([3, 1]);
      expect(refused[0].result.content[0].text).toMatch(
        new RegExp(`^the answer is \\d+ bytes, over the \\d+ bytes this request may still carry \\(MCP_MAX_RESPONSE_BYTES, ${limit} per request\\); no partial answer is given`),
      );
      // A request of its own has the whole budget again.
      const again = await postMcp(health(4), small.url);
      expect(again.body.result.isError).toBeUndefined();
    } finally {
      await small.close();
    }
  }, 60_000);
});

describe('MCP and the read lanes (src/store/read-lanes.ts)', () => {
  const work = () => activeReadGate()!.stats().interactiveWork;
  async function until(check: () => boolean): Promise<void> {
    for (let i = 0; i < 250 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
  }

  it('an open GET /mcp stream is no interactive work, and a client that leaves mid-call ends its call', async () => {
    const svc = await startService(
      testConfig({ PORT: '0', JOBS_ENABLED: 'false', API_TOKENS: TOKENS.join(','), METRICS_TOKEN: 'metrics-token-0123456789' }),
      { logger: createLogger('silent'), registry: createRegistry({ defaultMetrics: false }), extensions: [apiExtension([sessionRoutes]), mcpExtension('test')] },
    );
    const svcPort = Number(new URL(svc.url).port);
    let release!: () => void;
    let holding: Promise<void> | undefined;
    try {
      // A stream held open: it ran no tool, so heavy reads must not hold back for it (before: 1 for as long as it lasted).
      const stream = httpRequest({ host: '127.0.0.1', port: svcPort, method: 'GET', path: '/mcp', agent: false, headers: { accept: 'text/event-stream', authorization: `Bearer ${TOKENS[1]}` } });
      const opened = new Promise<number>((resolve) => stream.on('response', (res) => resolve(res.statusCode ?? 0)));
      stream.end();
      expect(await opened).toBe(200);
      expect(work()).toBe(0);
      stream.destroy();

      // The only heavy slot held: the session tool's route (heavy) waits for it, so the call is still running when
      // its client leaves. Leaving ends the call's interactive work (before: it never ended, and from then on every
      // heavy read in the service waited its full second).
      holding = inReadLane('heavy', () => activeReadGate()!.run(() => new Promise<void>((resolve) => (release = resolve))));
      const leave = new AbortController();
      const call = fetch(`${svc.url}/mcp`, {
        method: 'POST',
        signal: leave.signal,
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${TOKENS[2]}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'session', arguments: { session_id: 'any-session' } } }),
      }).catch(() => 'left');
      await until(() => work() === 1);
      expect(work()).toBe(1);
      leave.abort();
      expect(await call).toBe('left');
      await until(() => work() === 0);
      expect(work()).toBe(0);
      // The call's read still waited in the heavy line after it left (12,000 such reads piled up in an attack, with
      // 2 GB of RSS and /cost at 247 s): dropped once its client has gone.
      await until(() => activeReadGate()!.stats().heavyWaiting === 0);
      expect(activeReadGate()!.stats().heavyWaiting).toBe(0);

      // The same for a query-API request (a heavy route) whose client leaves while its read waits.
      const gone = new AbortController();
      const get = fetch(`${svc.url}/api/v1/sessions/any-session`, { signal: gone.signal, headers: { authorization: `Bearer ${TOKENS[3]}` } }).catch(() => 'left');
      await until(() => activeReadGate()!.stats().heavyWaiting === 1);
      expect(activeReadGate()!.stats().heavyWaiting).toBe(1);
      gone.abort();
      expect(await get).toBe('left');
      await until(() => activeReadGate()!.stats().heavyWaiting === 0);
      expect(activeReadGate()!.stats().heavyWaiting).toBe(0);
    } finally {
      release?.();
      await holding;
      await svc.close();
    }
  }, 60_000);
});
