// Issue 50.5: one client for every platform call. The platform's own /metrics scrape and the live log stream's
// (re)connect go through the shared PlatformClient: a 429 there honours Retry-After and pauses every other platform
// call, as a 429 on any collector's call does. Oracle: a loopback server recording when each request arrived.
import { afterEach, describe, expect, it } from 'vitest';
import { PlatformClient } from '../../src/platform/index.js';
import { scrapeTarget, scrapeTargets } from '../../src/collectors/scrape.js';
import { followLogStream } from '../../src/cli/logs-tail.js';
import { testConfig } from '../support/store.js';
import { json, startScriptedServer, text, type ScriptedServer, type Step } from '../platform/scripted-server.js';

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  while (opened.length > 0) await opened.pop()?.close();
});

const EXPOSITION = '# TYPE svc_app_queue_size gauge\nsvc_app_queue_size{application="acme/a"} 3\n';

/** A server answering by path, recording each arrival's time (performance.now()). */
async function byPath(routes: Record<string, Step[]>): Promise<{ server: ScriptedServer; arrivals: Array<{ path: string; atMs: number }> }> {
  const arrivals: Array<{ path: string; atMs: number }> = [];
  const seen: Record<string, number> = {};
  const server = await startScriptedServer([
    (res, req) => {
      arrivals.push({ path: req.path, atMs: performance.now() });
      const steps = routes[req.path] ?? [json(404, { error: { type: 'not_found', message: 'no route' } })];
      const n = (seen[req.path] = (seen[req.path] ?? 0) + 1);
      steps[Math.min(n, steps.length) - 1](res, req);
    },
  ]);
  opened.push(server);
  return { server, arrivals };
}

function client(baseUrl: string): PlatformClient {
  const c = new PlatformClient({ baseUrl, apiKey: 'api-key-1', adminKey: 'admin-key-1', backoffBaseMs: 5, maxBackoffMs: 20, random: () => 0.5 });
  opened.push(c);
  return c;
}

describe('the platform scrape through the shared client (issue 50.5)', () => {
  it("a 429 on the scrape: its Retry-After is waited, the scrape then succeeds, and another platform call waits it out too", async () => {
    const { server, arrivals } = await byPath({
      '/metrics': [json(429, { error: { type: 'rate_limited', message: 'concurrency limit of 2 requests reached', limit: 2 } }, { 'retry-after': '1' }), text(200, EXPOSITION, { 'content-type': 'text/plain; version=0.0.4' })],
      '/v1/serverless/apps': [json(200, { apps: [] })],
    });
    const platform = client(server.baseUrl);
    const config = testConfig({ SVC_API_KEY: 'api-key-1', SVC_BASE_URL: server.baseUrl });
    const [target] = scrapeTargets(config, { baseUrl: server.baseUrl, apiKey: 'api-key-1', client: platform });
    const scraping = scrapeTarget(target);
    // Another job's call, started once the 429 has arrived.
    while (!arrivals.some((a) => a.path === '/metrics')) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 50));
    const other = platform.getJson('/v1/serverless/apps');
    const result = await scraping;
    await other;
    expect(result.samples.map((s) => [s.name, s.value])).toEqual([['svc_app_queue_size', 3]]);
    const [first429, retried] = arrivals.filter((a) => a.path === '/metrics');
    const apps = arrivals.find((a) => a.path === '/v1/serverless/apps')!;
    // undici and the timers are approximate; Retry-After: 1 means no attempt before ~1 s after the 429.
    expect(retried.atMs - first429.atMs).toBeGreaterThanOrEqual(900);
    expect(apps.atMs - first429.atMs).toBeGreaterThanOrEqual(900);
    // The key went in the client's Authorization header, once.
    expect(server.requests.filter((r) => r.path === '/metrics').every((r) => r.headers.authorization === 'Key api-key-1')).toBe(true);
  });

  it("the log stream's reconnect after a 429 waits its Retry-After and pauses the other calls", async () => {
    const { server, arrivals } = await byPath({
      '/v1/serverless/logs/stream': [
        json(429, { error: { type: 'rate_limited', message: 'slow down', limit: 2 } }, { 'retry-after': '1' }),
        (res) => {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write(`data: ${JSON.stringify({ timestamp: '2026-11-21T10:00:00.000Z', level: 'INFO', message: 'hello', app: 'acme/a', labels: {} })}\n\n`);
        },
      ],
      '/v1/serverless/apps': [json(200, { apps: [] })],
    });
    const platform = client(server.baseUrl);
    const stop = new AbortController();
    const states: string[] = [];
    const got: string[] = [];
    const following = followLogStream(platform, {
      filters: {},
      signal: stop.signal,
      backoffBaseMs: 5,
      onRecord: (r) => {
        got.push(String(r.message));
        stop.abort();
      },
      onState: (s) => states.push(s.kind === 'dropped' ? `dropped, retry in ${s.retryInMs} ms` : 'connected'),
    });
    while (!arrivals.some((a) => a.path === '/v1/serverless/logs/stream')) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 50));
    await platform.getJson('/v1/serverless/apps');
    await following;
    expect(got).toEqual(['hello']);
    expect(states[0]).toBe('dropped, retry in 1000 ms');
    const [first429, reconnect] = arrivals.filter((a) => a.path === '/v1/serverless/logs/stream');
    const apps = arrivals.find((a) => a.path === '/v1/serverless/apps')!;
    expect(reconnect.atMs - first429.atMs).toBeGreaterThanOrEqual(900);
    expect(apps.atMs - first429.atMs).toBeGreaterThanOrEqual(900);
  });
});
