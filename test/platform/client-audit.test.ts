// Issue 31: bugs an audit planted in the platform client that no test caught. Each test here fails with its bug
// planted: pagination that stops on a cursor when `has_more` is absent (the notes: a missing has_more with a cursor
// is followed); a 429 that no longer pauses the other callers; PLATFORM_MAX_IN_FLIGHT not enforced. The oracle is
// a loopback server that records what reached it (pages asked for, arrival order and times, requests held open).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { PlatformClient, platformPaths } from '../../src/platform/index.js';
import { json, startScriptedServer } from './scripted-server.js';

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  while (opened.length > 0) await opened.pop()?.close();
});

function client(baseUrl: string, opts: Partial<ConstructorParameters<typeof PlatformClient>[0]> = {}): PlatformClient {
  const c = new PlatformClient({ baseUrl, apiKey: 'api-key-1', adminKey: 'admin-key-1', backoffBaseMs: 8, maxBackoffMs: 100, random: () => 0.5, ...opts });
  opened.push(c);
  return c;
}

/** A server whose requests wait until the test answers them; it counts how many are open at once. */
async function holdingServer() {
  const held: Array<{ path: string; answer: (status: number, body: unknown, headers?: Record<string, string>) => void }> = [];
  const arrivals: Array<{ path: string; atMs: number }> = [];
  let open = 0;
  let maxOpen = 0;
  const waiters: Array<() => void> = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      arrivals.push({ path, atMs: performance.now() });
      open++;
      maxOpen = Math.max(maxOpen, open);
      held.push({
        path,
        answer: (status, body, headers = {}) => {
          open--;
          res.writeHead(status, { 'content-type': 'application/json', ...headers });
          res.end(JSON.stringify(body));
        },
      });
      waiters.splice(0).forEach((w) => w());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const handle = {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held,
    arrivals,
    get open() {
      return open;
    },
    get maxOpen() {
      return maxOpen;
    },
    /** Resolves once `accept()` holds: checked at each arrival, and every few ms for what the client does. */
    async until(accept: () => boolean): Promise<void> {
      while (!accept()) {
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 5);
        });
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  opened.push(handle);
  return handle;
}

const Page = z.looseObject({ items: z.array(z.string()) });

describe('platform client: what the audit planted', () => {
  it('pagination follows next_cursor when has_more is absent, and stops on the page without a cursor', async () => {
    const server = await startScriptedServer([
      json(200, { items: ['a', 'b'], next_cursor: 'c1' }),
      json(200, { items: ['c'], next_cursor: 'c2' }),
      json(200, { items: ['d'], next_cursor: null }),
    ]);
    opened.push(server);
    const pages: string[][] = [];
    for await (const page of client(server.baseUrl).paginate(platformPaths.apps, { schema: Page })) pages.push(page.items);
    expect(pages).toEqual([['a', 'b'], ['c'], ['d']]);
    expect(server.requests.map((r) => r.query.get('cursor'))).toEqual([null, 'c1', 'c2']);
  });

  it('a 429 pauses every caller: calls started during its Retry-After reach the platform only after it', async () => {
    const server = await holdingServer();
    const platform = client(server.baseUrl, { maxInFlight: 8 });
    const retryAfterSeconds = 1;
    let sentAt = 0;
    let limited!: () => void;
    const rateLimited = new Promise<void>((resolve) => (limited = resolve));
    // The first call is refused with a 429; once the client has taken it (its retry is announced), two more start.
    const first = platform.getJson('/v1/first', { ctx: { onRetry: () => limited() } });
    await server.until(() => server.held.length === 1);
    sentAt = performance.now();
    server.held[0].answer(429, { error: { type: 'rate_limited', message: 'slow down' } }, { 'retry-after': String(retryAfterSeconds) });
    await rateLimited;
    const others = [platform.getJson('/v1/second'), platform.getJson('/v1/third')];
    await server.until(() => server.held.length === 4);
    for (const h of server.held.slice(1)) h.answer(200, { ok: true });
    await Promise.all([first, ...others]);
    const later = server.arrivals.slice(1);
    expect(later.map((a) => a.path).sort()).toEqual(['/v1/first', '/v1/second', '/v1/third']);
    // A lower bound only (a busy machine makes it later, never earlier); 50 ms for timer rounding.
    for (const a of later) expect(a.atMs - sentAt, a.path).toBeGreaterThanOrEqual(retryAfterSeconds * 1000 - 50);
  });

  it('PLATFORM_MAX_IN_FLIGHT: never more calls open at the platform than the limit, and all of them done', async () => {
    const server = await holdingServer();
    const platform = client(server.baseUrl, { maxInFlight: 2, connections: 8 });
    const calls = Array.from({ length: 6 }, (_, i) => platform.getJson(`/v1/call-${i}`));
    let answered = 0;
    while (answered < 6) {
      // Everything the client has in flight has reached the server (its own count says how many), then the oldest
      // open one is answered: with the limit ignored, all six are open at once.
      await server.until(() => server.held.length > answered && server.held.length >= answered + platform.inFlight.now);
      server.held[answered].answer(200, { ok: true });
      answered++;
    }
    await Promise.all(calls);
    expect(server.arrivals).toHaveLength(6);
    expect(server.maxOpen).toBe(2);
  });
});
