// Issue 31: parts of src/platform/client.ts that client.test.ts and client-audit.test.ts leave unchecked: the
// constructor's refusals, the base path, the event stream (the logs tail's call), text answers, the log lines of a
// retry, the in-flight limit's bookkeeping under aborts, and the backoff formula. Oracles: the platform interface
// (Key authorization, JSON bodies, text/event-stream), and backoff values worked by hand from "full jitter: a
// uniform wait in [0, min(max, base * 2^(attempt-1)))".
import { afterEach, describe, expect, it } from 'vitest';
import { backoffDelayMs, PlatformClient, PlatformError, platformPaths } from '../../src/platform/index.js';
import type { Logger } from '../../src/log.js';
import { hang, json, startScriptedServer, text, type ScriptedServer, type Step } from './scripted-server.js';

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  while (opened.length > 0) await opened.pop()?.close();
});

async function serve(steps: Step[]): Promise<ScriptedServer> {
  const server = await startScriptedServer(steps);
  opened.push(server);
  return server;
}

function client(baseUrl: string, opts: Partial<ConstructorParameters<typeof PlatformClient>[0]> = {}): PlatformClient {
  const c = new PlatformClient({ baseUrl, apiKey: 'api-key-1', adminKey: 'admin-key-1', backoffBaseMs: 8, maxBackoffMs: 100, random: () => 0.5, ...opts });
  opened.push(c);
  return c;
}

async function failure(promise: Promise<unknown>): Promise<PlatformError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof PlatformError) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
}

async function readAll(body: AsyncIterable<Buffer>): Promise<string> {
  let out = '';
  for await (const chunk of body) out += chunk.toString();
  return out;
}

describe('backoffDelayMs', () => {
  it('is a uniform share of min(max, base * 2^(attempt-1)), rounded down', () => {
    expect(backoffDelayMs(1, 100, 1_000, () => 0.5)).toBe(50);
    expect(backoffDelayMs(4, 100, 1_000, () => 0.5)).toBe(400);
    expect(backoffDelayMs(5, 100, 1_000, () => 0.5)).toBe(500);
    expect(backoffDelayMs(1, 100, 1_000, () => 0.999)).toBe(99);
    expect(backoffDelayMs(3, 100, 1_000, () => 0)).toBe(0);
  });
});

describe('PlatformClient: construction and paths', () => {
  it('refuses a base URL that is not a URL, or not http(s)', () => {
    expect(() => new PlatformClient({ baseUrl: 'not a url' })).toThrow(new TypeError('PlatformClient: baseUrl is not a valid URL'));
    expect(() => new PlatformClient({ baseUrl: 'ftp://example.com' })).toThrow(new TypeError('PlatformClient: baseUrl must be http or https, got ftp:'));
  });

  it('refuses a relative path without a leading slash, sending nothing', async () => {
    const server = await serve([json(200, {})]);
    await expect(client(server.baseUrl).getJson('v1/serverless/apps')).rejects.toThrow(new TypeError('PlatformClient: path must start with / or be an absolute URL'));
    expect(server.requests).toHaveLength(0);
  });

  it('drops trailing slashes of the base path, and sends the key to an absolute URL on its own origin', async () => {
    const server = await serve([json(200, { ok: 1 })]);
    const platform = client(`${server.baseUrl}/prefix//`);
    await platform.getJson(platformPaths.apps);
    await platform.getJson(`${server.baseUrl.replace('http:', 'HTTP:')}/v1/serverless/apps?x=1`);
    expect(server.requests.map((r) => [r.path, r.query.get('x'), r.headers.authorization])).toEqual([
      ['/prefix/v1/serverless/apps', null, 'Key api-key-1'],
      ['/v1/serverless/apps', '1', 'Key api-key-1'],
    ]);
  });

  it('takes a relative path holding a URL in its query as relative', async () => {
    const server = await serve([json(200, { ok: 1 })]);
    await client(`${server.baseUrl}/prefix`).getJson('/v1/serverless/apps?next=http://other.example/x');
    expect(server.requests.map((r) => [r.path, r.query.get('next'), r.headers.authorization])).toEqual([['/prefix/v1/serverless/apps', 'http://other.example/x', 'Key api-key-1']]);
  });

  it('sends nothing when no key is set (issue 50.6: a configuration error naming SVC_API_KEY)', async () => {
    const server = await serve([json(200, { ok: 1 })]);
    const error = await failure(client(server.baseUrl, { apiKey: '', adminKey: '' }).getJson(platformPaths.apps));
    expect(error).toMatchObject({ type: 'missing_key', keyUsed: null, attempts: 0 });
    expect(server.requests).toHaveLength(0);
  });

  it('reports its in-flight limit, at least 1, and makes at least one attempt', async () => {
    const server = await serve([json(503, '')]);
    expect(client(server.baseUrl).inFlight).toEqual({ now: 0, max: 4 });
    expect(client(server.baseUrl, { maxInFlight: 0 }).inFlight).toEqual({ now: 0, max: 1 });
    const error = await failure(client(server.baseUrl, { maxAttempts: 0 }).getJson(platformPaths.apps));
    expect(error.attempts).toBe(1);
    expect(error.message).toContain('gave up after 1 attempts');
    expect(server.requests).toHaveLength(1);
  });
});

describe('PlatformClient: answers', () => {
  it('reads 204 and 205 as null, and a cut-off 2xx body as a retryable truncated_body naming its size', async () => {
    const server = await serve([text(204, ''), text(205, ''), text(200, '{"a":', { 'content-type': 'application/json' })]);
    const platform = client(server.baseUrl, { maxAttempts: 1 });
    expect(await platform.getJson(platformPaths.apps)).toBeNull();
    expect(await platform.getJson(platformPaths.apps)).toBeNull();
    const error = await failure(platform.getJson(platformPaths.apps));
    expect(error).toMatchObject({ status: 200, type: 'truncated_body', retryable: true, method: 'GET', path: '/v1/serverless/apps', keyUsed: 'api' });
    expect(error.message).toBe('GET /v1/serverless/apps answered 200 with a body that is not complete JSON (5 bytes) — gave up after 1 attempts');
  });

  it('names the root when the whole answer does not match the schema', async () => {
    const server = await serve([json(200, [1, 2])]);
    const { z } = await import('zod');
    const error = await failure(client(server.baseUrl).getJson(platformPaths.apps, { schema: z.object({ apps: z.array(z.string()) }) }));
    expect(error).toMatchObject({ type: 'invalid_response', retryable: false, status: 200, attempts: 1 });
    expect(error.message).toMatch(/^GET \/v1\/serverless\/apps answered 200 with a response that does not match the expected schema at \(root\): /);
  });

  it('reads text with its content type, sending the accept and extra headers asked for', async () => {
    const server = await serve([text(200, 'up 1\n', { 'content-type': 'text/plain; version=0.0.4' }), text(200, 'x')]);
    const platform = client(server.baseUrl);
    expect(await platform.getText('/metrics', { headers: { 'x-extra': 'e' }, query: { a: 'b' } })).toEqual({ body: 'up 1\n', contentType: 'text/plain; version=0.0.4' });
    expect(await platform.getText('/metrics', { accept: 'application/openmetrics-text' })).toEqual({ body: 'x', contentType: null });
    expect(server.requests.map((r) => [r.method, r.headers.accept, r.headers['x-extra'], r.query.get('a'), r.headers['content-type']])).toEqual([
      ['GET', 'text/plain', 'e', 'b', undefined],
      ['GET', 'application/openmetrics-text', undefined, null, undefined],
    ]);
  });

  it('paginates a POST with a null body when none is given, and stops on an empty cursor', async () => {
    const server = await serve([json(200, { items: ['a'], next_cursor: '' })]);
    const { z } = await import('zod');
    const pages: unknown[] = [];
    for await (const page of client(server.baseUrl).paginate('/v1/x', { method: 'POST', schema: z.looseObject({ items: z.array(z.string()) }) })) pages.push(page);
    expect(pages).toEqual([{ items: ['a'], next_cursor: '' }]);
    expect(server.requests.map((r) => [r.method, r.body, r.headers['content-type']])).toEqual([['POST', 'null', 'application/json']]);
  });

  it('stops with has_more and an empty cursor, naming the path and the reason', async () => {
    const server = await serve([json(200, { items: [], has_more: true, next_cursor: '' })]);
    const { z } = await import('zod');
    const walk = async () => {
      for await (const _ of client(server.baseUrl).paginate('/v1/serverless/apps', { schema: z.looseObject({}) })) void _;
    };
    const error = await failure(walk());
    expect(error).toMatchObject({ status: 200, type: 'invalid_response', retryable: false, scope: 'api', keyUsed: 'api', method: 'GET', path: '/v1/serverless/apps', attempts: 1 });
    expect(error.message).toBe('GET /v1/serverless/apps: pagination cannot continue: has_more is true but next_cursor is missing');
  });
});

describe('PlatformClient: request shapes', () => {
  it('a GET carries no body and no content type; a page asks for JSON', async () => {
    const server = await serve([json(200, { items: [] })]);
    const { z } = await import('zod');
    const platform = client(server.baseUrl);
    await platform.getJson(platformPaths.apps);
    for await (const _ of platform.paginate(platformPaths.apps, { schema: z.looseObject({}) })) void _;
    expect(server.requests.map((r) => [r.method, r.body, r.headers['content-type'], r.headers['content-length'], r.headers.accept])).toEqual([
      ['GET', '', undefined, undefined, 'application/json'],
      ['GET', '', undefined, undefined, 'application/json'],
    ]);
  });

  it('posts null for a POST without a body', async () => {
    const server = await serve([json(200, {})]);
    await client(server.baseUrl).postJson('/v1/x', undefined);
    expect(server.requests.map((r) => [r.method, r.body, r.headers['content-type']])).toEqual([['POST', 'null', 'application/json']]);
  });

  it('sends lists in the array format asked for', async () => {
    const server = await serve([json(200, {})]);
    await client(server.baseUrl, { arrayFormat: 'comma' }).getJson(platformPaths.apps, { query: { id: ['a', 'b'] } });
    await client(server.baseUrl).getJson(platformPaths.apps, { query: { id: ['a', 'b'] } });
    expect(server.requests.map((r) => r.query.getAll('id'))).toEqual([['a,b'], ['a', 'b']]);
  });

  it('refuses a page that is JSON null as a response that does not match, not a crash', async () => {
    const server = await serve([json(200, 'null')]);
    const { z } = await import('zod');
    const walk = async () => {
      for await (const _ of client(server.baseUrl).paginate(platformPaths.apps, { schema: z.looseObject({ items: z.array(z.string()) }) })) void _;
    };
    const error = await failure(walk());
    expect(error).toMatchObject({ type: 'invalid_response', status: 200, retryable: false });
  });
});

describe('PlatformClient: the event stream', () => {
  it('POSTs the JSON body with the key and yields the stream bytes', async () => {
    const server = await serve([
      (res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
        res.write('data: one\n\n');
        res.end('data: two\n\n');
      },
    ]);
    const body = await client(server.baseUrl).openEventStream('/v1/serverless/logs/stream', { query: { app_id: 'acme/img' }, body: { filters: [] } });
    expect(await readAll(body)).toBe('data: one\n\ndata: two\n\n');
    expect(server.requests.map((r) => [r.method, r.path, r.query.get('app_id'), r.body, r.headers.accept, r.headers['content-type'], r.headers.authorization, r.headers['user-agent']])).toEqual([
      ['POST', '/v1/serverless/logs/stream', 'acme/img', '{"filters":[]}', 'text/event-stream', 'application/json', 'Key api-key-1', 'tallyhouse/0.1'],
    ]);
  });

  it('sends a null body when none is given, and the API key, never the admin key', async () => {
    const server = await serve([text(200, '', { 'content-type': 'text/event-stream' })]);
    await readAll(await client(server.baseUrl, { apiKey: 'api-k', adminKey: 'admin-k' }).openEventStream('/v1/serverless/logs/stream'));
    expect(server.requests.map((r) => [r.body, r.headers.authorization])).toEqual([['null', 'Key api-k']]);
    const error = await failure(client(server.baseUrl, { apiKey: '', adminKey: 'admin-k' }).openEventStream('/v1/serverless/logs/stream'));
    expect(error).toMatchObject({ type: 'missing_key', keyUsed: null });
    expect(server.requests).toHaveLength(1);
  });

  it('fails on an error status as the platform error, once, without retrying', async () => {
    const server = await serve([json(429, { error: { type: 'rate_limited', message: 'slow' } }, { 'retry-after': '3' })]);
    const error = await failure(client(server.baseUrl).openEventStream('/v1/serverless/logs/stream'));
    expect(error).toMatchObject({ status: 429, type: 'rate_limited', retryable: true, retryAfterMs: 3_000 });
    expect(server.requests).toHaveLength(1);
  });

  it('fails a 2xx that is not an event stream as a retryable invalid_response', async () => {
    const server = await serve([json(200, { ok: 1 }), text(200, 'x')]);
    const platform = client(server.baseUrl);
    const a = await failure(platform.openEventStream('/v1/serverless/logs/stream'));
    expect(a).toMatchObject({ status: 200, type: 'invalid_response', retryable: true, attempts: 1, method: 'POST', path: '/v1/serverless/logs/stream', keyUsed: 'api' });
    expect(a.message).toBe('POST /v1/serverless/logs/stream answered 200 with application/json, not an event stream');
    const b = await failure(platform.openEventStream('/v1/serverless/logs/stream'));
    expect(b.message).toBe('POST /v1/serverless/logs/stream answered 200 with no content type, not an event stream');
  });

  it('fails a refused connection as a platform error with no status', async () => {
    const server = await serve([json(200, {})]);
    const url = server.baseUrl;
    await server.close();
    const error = await failure(client(url).openEventStream('/v1/serverless/logs/stream'));
    expect(error.status).toBeNull();
    expect(error.retryable).toBe(true);
  });
});

describe('PlatformClient: retries as logged', () => {
  it('logs each retry with its attempt, wait, status and type, and the call done with its attempts', async () => {
    const lines: Array<[string, Record<string, unknown>, string]> = [];
    const logger = {
      debug: (o: Record<string, unknown>, m: string) => lines.push(['debug', o, m]),
      warn: (o: Record<string, unknown>, m: string) => lines.push(['warn', o, m]),
    } as unknown as Logger;
    const server = await serve([json(503, { error: { type: 'server_error', message: 'down' } }), json(200, { ok: 1 })]);
    await client(server.baseUrl, { logger }).getJson(platformPaths.apps);
    expect(lines.map(([level, o, m]) => [level, m, o.method, o.path, o.attempt ?? o.attempts, o.delayMs, o.status, o.type])).toEqual([
      ['warn', 'platform call failed; retrying', 'GET', '/v1/serverless/apps', 1, 4, 503, 'server_error'],
      ['debug', 'platform call done', 'GET', '/v1/serverless/apps', 2, undefined, undefined, undefined],
    ]);
    expect(typeof lines[1][1].durationMs).toBe('number');
  });

  it('says "1 attempt" when the first wait would pass the time budget', async () => {
    const server = await serve([json(503, '', { 'retry-after': '10' })]);
    const error = await failure(client(server.baseUrl, { maxElapsedMs: 5_000 }).getJson(platformPaths.apps));
    expect(error.message).toContain(' — gave up after 1 attempt: waiting 10000 ms would pass the 5000 ms time budget');
  });
});

describe('PlatformClient: the in-flight limit under aborts', () => {
  it('a caller aborted while waiting for a slot leaves the queue, and the slot goes to the next', async () => {
    let release: (() => void) | undefined;
    const server = await serve([
      (res) => {
        release = () => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"n":1}');
        };
      },
      json(200, { n: 2 }),
    ]);
    const platform = client(server.baseUrl, { maxInFlight: 1 });
    const first = platform.getJson(platformPaths.apps);
    while (server.requests.length < 1) await new Promise((r) => setTimeout(r, 5));
    const controller = new AbortController();
    const waiting = failure(platform.getJson(platformPaths.apps, { ctx: { signal: controller.signal } }));
    const third = platform.getJson(platformPaths.apps);
    controller.abort(new Error('stop'));
    const aborted = await waiting;
    expect(aborted).toMatchObject({ type: 'aborted', retryable: false, attempts: 1, method: 'GET', path: '/v1/serverless/apps' });
    expect(aborted.message).toBe('GET /v1/serverless/apps: aborted by the caller');
    expect(aborted.cause).toEqual(new Error('stop'));
    expect(platform.inFlight.now).toBe(1);
    release!();
    expect(await first).toEqual({ n: 1 });
    expect(await third).toEqual({ n: 2 });
    expect(server.requests).toHaveLength(2);
    expect(platform.inFlight.now).toBe(0);
  });

  it('a caller aborted before it starts sends nothing', async () => {
    const server = await serve([hang()]);
    const controller = new AbortController();
    controller.abort();
    const error = await failure(client(server.baseUrl).getJson(platformPaths.apps, { ctx: { signal: controller.signal } }));
    expect(error).toMatchObject({ type: 'aborted', attempts: 1 });
    expect(server.requests).toHaveLength(0);
  });
});

describe('PlatformClient: what the first mutation run left', () => {
  it('takes an https base URL', () => {
    expect(() => new PlatformClient({ baseUrl: 'https://platform.example/api' })).not.toThrow();
  });

  it('names the key a call used, or none', async () => {
    const server = await serve([json(500, '')]);
    const none = await failure(client(server.baseUrl, { apiKey: '', adminKey: '', maxAttempts: 1 }).getJson(platformPaths.apps));
    expect(none.keyUsed).toBeNull();
    const adminOnly = await failure(client(server.baseUrl, { apiKey: '', maxAttempts: 1 }).getJson(platformPaths.serverlessUsage));
    expect(adminOnly.keyUsed).toBe('admin');
    const apiWithoutKey = await failure(client(server.baseUrl, { apiKey: '', maxAttempts: 1 }).getJson(platformPaths.apps));
    expect(apiWithoutKey).toMatchObject({ keyUsed: null, type: 'missing_key' });
  });

  it('says which key is missing and which query is wrong, sending nothing', async () => {
    const server = await serve([json(200, {})]);
    const noAdmin = await failure(client(server.baseUrl, { adminKey: '' }).getJson(platformPaths.serverlessUsage));
    expect(noAdmin.message).toBe('GET /v1/serverless/usage needs an ADMIN-scope key; SVC_ADMIN_KEY is not set');
    const badQuery = await failure(client(server.baseUrl).getJson(platformPaths.apps, { query: { id: [] } }));
    expect(badQuery).toMatchObject({ type: 'invalid_request', retryable: false });
    expect(badQuery.message).toBe('GET /v1/serverless/apps: query parameter id is an empty list; omit it instead');
    expect(server.requests).toHaveLength(0);
  });

  it('names a path on another origin with its origin', async () => {
    const other = await serve([json(500, '')]);
    const server = await serve([json(200, {})]);
    const error = await failure(client(server.baseUrl, { maxAttempts: 1 }).getJson(`${other.baseUrl}/jwks`));
    expect(error.path).toBe(`${other.baseUrl}/jwks`);
    expect(other.requests[0].headers.authorization).toBeUndefined();
  });

  it('takes a 300 answer as an error, not as a success', async () => {
    const server = await serve([json(300, { ok: 1 })]);
    const error = await failure(client(server.baseUrl, { maxAttempts: 1 }).getJson(platformPaths.apps));
    expect(error.status).toBe(300);
  });

  it('a time budget that ends during an attempt is a retryable timeout', async () => {
    const server = await serve([hang()]);
    const error = await failure(client(server.baseUrl, { maxElapsedMs: 150 }).getJson(platformPaths.apps));
    expect(error).toMatchObject({ type: 'timeout', retryable: true, attempts: 1 });
  });

  it('says "2 attempts" when the second wait would pass the time budget', async () => {
    const server = await serve([json(503, '', { 'retry-after': '0.01' }), json(503, '', { 'retry-after': '10' })]);
    const error = await failure(client(server.baseUrl, { maxElapsedMs: 5_000 }).getJson(platformPaths.apps));
    expect(error.message).toContain(' — gave up after 2 attempts: waiting 10000 ms would pass the 5000 ms time budget');
  });

  it('a caller aborting during the backoff gets its own reason as the cause', async () => {
    const server = await serve([json(503, '', { 'retry-after': '30' })]);
    const controller = new AbortController();
    const reason = new Error('shutting down');
    const error = await failure(client(server.baseUrl).getJson(platformPaths.apps, { ctx: { signal: controller.signal, onRetry: () => controller.abort(reason) } }));
    expect(error.type).toBe('aborted');
    expect(error.cause).toBe(reason);
  });

  it('a caller aborting while its request is open gets aborted, not a retry', async () => {
    const server = await serve([hang()]);
    const controller = new AbortController();
    const retries: unknown[] = [];
    const call = failure(client(server.baseUrl).getJson(platformPaths.apps, { ctx: { signal: controller.signal, onRetry: (r) => retries.push(r) } }));
    while (server.requests.length < 1) await new Promise((r) => setTimeout(r, 5));
    controller.abort(new Error('stop'));
    const error = await call;
    expect(error).toMatchObject({ type: 'aborted', retryable: false, attempts: 1 });
    expect(retries).toEqual([]);
  });

  it('logs a duration no longer than the call took', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = { debug: (o: Record<string, unknown>) => lines.push(o), warn: () => undefined } as unknown as Logger;
    const server = await serve([json(200, {})]);
    const t0 = performance.now();
    await client(server.baseUrl, { logger }).getJson(platformPaths.apps);
    const took = performance.now() - t0;
    expect(lines[0].durationMs as number).toBeGreaterThanOrEqual(0);
    expect(lines[0].durationMs as number).toBeLessThanOrEqual(Math.ceil(took));
  });
});

describe('PlatformClient.paginate: what the first mutation run left', () => {
  it('an explicit has_more false ends the walk even with a cursor (platform notes)', async () => {
    const server = await serve([json(200, { items: ['a'], has_more: false, next_cursor: 'c2' }), json(200, { items: ['b'] })]);
    const { z } = await import('zod');
    const pages: unknown[] = [];
    for await (const page of client(server.baseUrl).paginate('/v1/x', { schema: z.looseObject({ items: z.array(z.string()) }) })) pages.push(page);
    expect(pages).toHaveLength(1);
    expect(server.requests).toHaveLength(1);
  });

  it('a cursor that is not a string is no cursor', async () => {
    const server = await serve([json(200, { items: [], has_more: true, next_cursor: 5 })]);
    const { z } = await import('zod');
    const walk = async () => {
      for await (const _ of client(`${server.baseUrl}/prefix`).paginate('/v1/serverless/apps', { schema: z.looseObject({}), scope: 'admin' })) void _;
    };
    const error = await failure(walk());
    // The error names the path as sent (base prefix included) and the scope the call was made with.
    expect(error).toMatchObject({ path: '/prefix/v1/serverless/apps', scope: 'admin', keyUsed: 'admin' });
    expect(error.message).toBe('GET /prefix/v1/serverless/apps: pagination cannot continue: has_more is true but next_cursor is missing');
    expect(server.requests).toHaveLength(1);
  });
});


describe('PlatformClient: what the static-mutant run left (issue 31)', () => {
  it('an error answer whose body is cut off is still classified by its status: a 404 is not_found, not retried', async () => {
    const cut404: Step = (res) => {
      res.writeHead(404, { 'content-type': 'application/json', 'content-length': '200' });
      res.write('{"error":{"type":"not_f');
      setTimeout(() => res.socket?.destroy(), 10);
    };
    const server = await serve([cut404, json(200, { ok: 1 })]);
    const error = await failure(client(server.baseUrl).getJson(platformPaths.apps));
    expect([error.status, error.type, error.retryable, error.attempts]).toEqual([404, 'not_found', false, 1]);
    expect(server.requests).toHaveLength(1);
  });

  it('close() closes the connections once: twice is the same, and a call afterwards fails without reaching the platform', async () => {
    const server = await serve([json(200, { ok: 1 }), json(200, { ok: 2 })]);
    const platform = new PlatformClient({ baseUrl: server.baseUrl, apiKey: 'api-key-1', maxAttempts: 1 });
    expect(await platform.getJson(platformPaths.apps)).toEqual({ ok: 1 });
    await Promise.all([platform.close(), platform.close()]);
    await platform.close();
    const error = await failure(platform.getJson(platformPaths.apps));
    expect(error.status).toBeNull();
    expect(server.requests).toHaveLength(1);
  });
});
