// Issue 49.2: every platform answer is read through one bounded path. A 2xx past its byte limit (an endless body,
// or a Content-Length over it) fails the call as `response_too_large`, not retried, after at most the limit was
// read; a metric and a log line say so. Error answers are read only as far as their classification needs.
// Issue 50.7: a 429's limit value is a gauge and a log line; deprecation headers are logged once per endpoint.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { PlatformClient, PlatformError, concurrencyLimitOf } from '../../src/platform/index.js';
import { createRegistry } from '../../src/metrics.js';
import { captureLog } from '../support/log-capture.js';
import { json, startScriptedServer } from './scripted-server.js';

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  while (opened.length > 0) await opened.pop()?.close();
});

/** A server that answers every request 200 with a body that never ends; it counts the bytes it got written. */
async function endlessServer(contentType = 'application/json') {
  const written = { bytes: 0, requests: 0, closed: 0 };
  const server = http.createServer((req, res) => {
    written.requests++;
    res.writeHead(200, { 'content-type': contentType });
    const piece = Buffer.alloc(64 * 1024, 'x');
    const pump = (): void => {
      while (!res.destroyed && res.write(piece)) written.bytes += piece.length;
      if (!res.destroyed) res.once('drain', pump);
    };
    res.on('close', () => written.closed++);
    res.write('{"apps":["');
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const handle = {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    written,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
  opened.push(handle);
  return handle;
}

function client(baseUrl: string, opts: Partial<ConstructorParameters<typeof PlatformClient>[0]> = {}): PlatformClient {
  const c = new PlatformClient({ baseUrl, apiKey: 'api-key-1', adminKey: 'admin-key-1', backoffBaseMs: 5, maxBackoffMs: 20, random: () => 0.5, maxElapsedMs: 20_000, ...opts });
  opened.push(c);
  return c;
}

async function failure(p: Promise<unknown>): Promise<PlatformError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(PlatformError);
    return err as PlatformError;
  }
  throw new Error('expected the call to fail');
}

describe('bounded platform answers (issue 49.2)', () => {
  it('cuts an endless 2xx answer off at PLATFORM_MAX_RESPONSE_BYTES: one attempt, a named error, a metric and a log line', async () => {
    const server = await endlessServer();
    const registry = createRegistry({ defaultMetrics: false });
    const { logger, lines } = captureLog('warn');
    const c = client(server.baseUrl, { maxResponseBytes: 1024 * 1024, registry, logger });
    const before = process.memoryUsage();
    const err = await failure(c.getJson('/v1/serverless/apps'));
    expect(err.type).toBe('response_too_large');
    expect(err.retryable).toBe(false);
    expect(err.status).toBe(200);
    expect(err.attempts).toBe(1);
    expect(err.message).toContain('over its limit of 1048576 bytes');
    expect(server.written.requests).toBe(1);
    const after = process.memoryUsage();
    expect(after.arrayBuffers + after.heapUsed - before.arrayBuffers - before.heapUsed).toBeLessThan(64 * 1024 * 1024);
    const metric = (await registry.getSingleMetric('tallyhouse_platform_response_too_large_total')!.get()).values;
    expect(metric).toEqual([{ labels: { endpoint: '/v1/serverless/apps' }, value: 1 }]);
    expect(lines.filter((l) => String(l.msg).includes('over its byte limit'))).toHaveLength(1);
  });

  it('gives runner metrics their own tighter limit, whatever the runner id', async () => {
    const server = await endlessServer('text/plain');
    const c = client(server.baseUrl);
    expect(c.responseLimitBytes('/metrics/runners/r-1')).toBe(1024 * 1024);
    expect(c.responseLimitBytes('/v1/meta')).toBe(256 * 1024);
    expect(c.responseLimitBytes('/v1/serverless/usage')).toBe(8 * 1024 * 1024);
    const err = await failure(c.getText('/metrics/runners/r-1'));
    expect(err.type).toBe('response_too_large');
    expect(err.message).toContain('limit of 1048576 bytes');
  });

  it('refuses a Content-Length over the limit without reading the body', async () => {
    const server = await startScriptedServer([
      (res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(5 * 1024 * 1024) });
        res.write('{"apps":[');
      },
    ]);
    opened.push(server);
    const c = client(server.baseUrl, { maxResponseBytes: 1024 * 1024 });
    const err = await failure(c.getJson('/v1/serverless/apps'));
    expect(err.type).toBe('response_too_large');
    expect(err.message).toContain('5242880 bytes (Content-Length)');
    expect(server.requests).toHaveLength(1);
  });

  it('an answer at the limit is read whole', async () => {
    const body = JSON.stringify({ apps: ['x'.repeat(1000)] });
    const server = await startScriptedServer([json(200, body)]);
    opened.push(server);
    const c = client(server.baseUrl, { maxResponseBytes: Buffer.byteLength(body) });
    expect(await c.getJson('/v1/serverless/apps')).toEqual(JSON.parse(body));
    const tight = client(server.baseUrl, { maxResponseBytes: Buffer.byteLength(body) - 1 });
    expect((await failure(tight.getJson('/v1/serverless/apps'))).type).toBe('response_too_large');
  });

  it('an endless error answer is still classified by its status, from its first 64 KiB', async () => {
    const server = await startScriptedServer([
      (res) => {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.write(JSON.stringify({ error: { type: 'not_found', message: 'no such app' } }).slice(0, -1) + ',"pad":"');
        const piece = Buffer.alloc(64 * 1024, 'y');
        const pump = (): void => {
          while (!res.destroyed && res.write(piece));
          if (!res.destroyed) res.once('drain', pump);
        };
        pump();
      },
    ]);
    opened.push(server);
    const c = client(server.baseUrl);
    const err = await failure(c.getJson('/v1/serverless/apps'));
    expect(err.status).toBe(404);
    expect(err.retryable).toBe(false);
  });
});

describe('what the platform says, shown (issue 50.7)', () => {
  it("a 429's limit value is a gauge and one log line naming PLATFORM_MAX_IN_FLIGHT", async () => {
    const server = await startScriptedServer([
      json(429, { error: { type: 'rate_limited', message: 'concurrency limit of 3 requests reached', limit: 3 } }, { 'retry-after': '0' }),
      json(429, { error: { type: 'rate_limited', message: 'concurrency limit of 3 requests reached', limit: 3 } }, { 'retry-after': '0' }),
      json(200, { apps: [] }),
    ]);
    opened.push(server);
    const registry = createRegistry({ defaultMetrics: false });
    const { logger, lines } = captureLog('warn');
    const c = client(server.baseUrl, { registry, logger, maxInFlight: 8 });
    expect(await c.getJson('/v1/serverless/apps')).toEqual({ apps: [] });
    expect((await registry.getSingleMetric('tallyhouse_platform_concurrency_limit')!.get()).values[0].value).toBe(3);
    const said = lines.filter((l) => l.concurrencyLimit === 3);
    expect(said).toHaveLength(1);
    expect(String(said[0].msg)).toContain('PLATFORM_MAX_IN_FLIGHT is 8');
  });

  it('reads the limit from the body or the x-ratelimit-limit header', () => {
    expect(concurrencyLimitOf('{"limit": 7}', {})).toBe(7);
    expect(concurrencyLimitOf('{"error": {"limit": "5"}}', {})).toBe(5);
    expect(concurrencyLimitOf('not json', { 'x-ratelimit-limit': '12' })).toBe(12);
    expect(concurrencyLimitOf('{}', {})).toBeNull();
  });

  it('deprecation headers: logged once per endpoint, exported as a gauge', async () => {
    const headers = { deprecation: '@1767225600', sunset: 'Thu, 01 Jul 2027 00:00:00 GMT' };
    const server = await startScriptedServer([json(200, { apps: [] }, headers)]);
    opened.push(server);
    const registry = createRegistry({ defaultMetrics: false });
    const { logger, lines } = captureLog('warn');
    const c = client(server.baseUrl, { registry, logger });
    for (let i = 0; i < 3; i++) await c.getJson('/v1/serverless/apps/acme/a/events');
    await c.getJson('/v1/serverless/apps/acme/b/events');
    const logged = lines.filter((l) => String(l.msg).includes('deprecated'));
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ endpoint: '/v1/serverless/apps/{owner}/{name}/events', sunset: headers.sunset, deprecation: headers.deprecation });
    expect((await registry.getSingleMetric('tallyhouse_platform_endpoint_deprecated')!.get()).values).toEqual([
      { labels: { endpoint: '/v1/serverless/apps/{owner}/{name}/events' }, value: 1 },
    ]);
  });
});
