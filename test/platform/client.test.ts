import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AppsResponse,
  authFailureMessage,
  PlatformClient,
  PlatformError,
  appPath,
  platformPaths,
  type PlatformClientOptions,
  type RetryInfo,
} from '../../src/platform/index.js';
import { hang, json, resetMidBody, stallBody, startScriptedServer, text, type ScriptedServer, type Step } from './scripted-server.js';

const API_KEY = 'api-key-7f3a9c';
const ADMIN_KEY = 'admin-key-c41d2e';

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  while (opened.length > 0) await opened.pop()?.close();
});

async function serve(steps: Step[]): Promise<ScriptedServer> {
  const server = await startScriptedServer(steps);
  opened.push(server);
  return server;
}

// Clients are closed before the servers (afterEach pops in reverse order of creation).
function client(server: ScriptedServer, opts: Partial<PlatformClientOptions> = {}): PlatformClient {
  const platform = new PlatformClient({
    baseUrl: server.baseUrl,
    apiKey: API_KEY,
    adminKey: ADMIN_KEY,
    backoffBaseMs: 8,
    maxBackoffMs: 100,
    random: () => 0.5,
    ...opts,
  });
  opened.push(platform);
  return platform;
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

function recordRetries(): { retries: RetryInfo[]; onRetry: (info: RetryInfo) => void } {
  const retries: RetryInfo[] = [];
  return { retries, onRetry: (info) => retries.push(info) };
}

const APPS = { apps: [{ endpoint_id: 'acme/img', owner: 'acme', name: 'img' }] };

describe('PlatformClient: keys and scopes', () => {
  it('sends the API key by default and the admin key for the usage endpoints', async () => {
    const server = await serve([json(200, { ok: 1 })]);
    const platform = client(server);
    expect(await platform.getJson(platformPaths.apps)).toEqual({ ok: 1 });
    await platform.getJson(platformPaths.serverlessUsage, { query: { start: '2026-03-01' } });
    await platform.getJson(platformPaths.meta, { scope: 'admin' });
    expect(server.requests.map((r) => [r.path, r.headers.authorization])).toEqual([
      ['/v1/serverless/apps', `Key ${API_KEY}`],
      ['/v1/serverless/usage', `Key ${ADMIN_KEY}`],
      ['/v1/meta', `Key ${ADMIN_KEY}`],
    ]);
    expect(server.requests[1].query.get('start')).toBe('2026-03-01');
    expect(server.requests[0].headers.accept).toBe('application/json');
    expect(server.requests[0].headers['user-agent']).toBe('tallyhouse/0.1');
  });

  it('fails an admin call without sending it when no admin key is set', async () => {
    const server = await serve([json(200, {})]);
    const platform = client(server, { adminKey: undefined });
    const error = await failure(platform.getJson(platformPaths.serverlessUsage));
    expect(error).toMatchObject({ type: 'missing_key', scope: 'admin', retryable: false, attempts: 0, status: null });
    expect(authFailureMessage(error, 'the usage collector')).toBe(
      'the usage collector needs an ADMIN-scope key; SVC_ADMIN_KEY is not set (GET /v1/serverless/usage was not sent)',
    );
    expect(server.requests).toHaveLength(0);
  });

  it('never sends the admin key to an API-scope call (issue 50.6): without an API key it fails naming SVC_API_KEY; no key on another origin', async () => {
    const server = await serve([json(200, {})]);
    const other = await serve([json(200, { keys: [] })]);
    const platform = client(server, { apiKey: undefined });
    const error = await failure(platform.getJson(platformPaths.apps));
    expect(error).toMatchObject({ type: 'missing_key', status: null, retryable: false, scope: 'api', keyUsed: null });
    expect(error.message).toContain('SVC_API_KEY is not set');
    expect(authFailureMessage(error, 'the apps collector')).toBe('the apps collector needs an API-scope key; SVC_API_KEY is not set (GET /v1/serverless/apps was not sent)');
    expect(server.requests).toHaveLength(0);
    await platform.getJson(platformPaths.serverlessUsage);
    expect(server.requests[0].headers.authorization).toBe(`Key ${ADMIN_KEY}`);
    await platform.getJson(`${other.baseUrl}${platformPaths.jwks}`);
    expect(other.requests[0].headers.authorization).toBeUndefined();
  });

  it('puts the base URL path prefix before every path and escapes app path parts', async () => {
    const server = await serve([json(200, { queue_size: 2 })]);
    const platform = new PlatformClient({ baseUrl: `${server.baseUrl}/platform/`, apiKey: API_KEY });
    opened.push(platform);
    await platform.getJson(appPath('acme', 'img gen', 'queue'));
    expect(server.requests[0].path).toBe('/platform/v1/serverless/apps/acme/img%20gen/queue');
  });

  it('stops on 403 with an error naming the scope, without retrying', async () => {
    const server = await serve([
      json(403, { error: { type: 'authorization_error', message: 'Admin scope required', request_id: 'req-403', docs_url: 'https://docs/errors' } }),
      json(200, {}),
    ]);
    const platform = client(server, { adminKey: undefined, apiKey: API_KEY });
    const error = await failure(platform.getJson(platformPaths.modelsUsage, { scope: 'api' }));
    expect(error).toMatchObject({
      status: 403,
      type: 'authorization_error',
      errorType: null,
      retryable: false,
      requestId: 'req-403',
      scope: 'api',
      keyUsed: 'api',
      path: '/v1/models/usage',
      attempts: 1,
      serverMessage: 'Admin scope required',
      docsUrl: 'https://docs/errors',
    });
    expect(server.requests).toHaveLength(1);
    expect(error.message).not.toContain(API_KEY);
  });

  it('reports a 401 on an admin call as needing an ADMIN-scope key', async () => {
    const server = await serve([json(401, { error: { type: 'authorization_error', message: 'Invalid key' } })]);
    const error = await failure(client(server).getJson(platformPaths.serverlessUsage));
    expect(error).toMatchObject({ status: 401, scope: 'admin', keyUsed: 'admin', retryable: false, attempts: 1 });
    expect(authFailureMessage(error, 'the usage collector')).toBe(
      'the usage collector needs an ADMIN-scope key; the key in SVC_ADMIN_KEY was refused (wrong, revoked or malformed) (GET /v1/serverless/usage answered 401)',
    );
  });
});

describe('PlatformClient: error formats', () => {
  it('reads a request-level error (body and X-Svc-Error-Type) and retries it', async () => {
    const server = await serve([
      json(503, { detail: 'Runner disconnected during processing', error_type: 'runner_disconnected' }, {
        'x-svc-error-type': 'runner_disconnected',
        'x-svc-request-id': 'rq-1',
      }),
      json(200, APPS),
    ]);
    const { retries, onRetry } = recordRetries();
    const result = await client(server).getJson(platformPaths.apps, { schema: AppsResponse, ctx: { onRetry } });
    expect(result.apps[0].endpoint_id).toBe('acme/img');
    expect(retries).toHaveLength(1);
    expect(retries[0].error).toMatchObject({
      status: 503,
      type: 'server_error',
      errorType: 'runner_disconnected',
      retryable: true,
      requestId: 'rq-1',
      serverMessage: 'Runner disconnected during processing',
      attempts: 1,
    });
    expect(server.requests).toHaveLength(2);
  });

  it('takes error_type from the header when the body is empty', async () => {
    const server = await serve([text(504, '', { 'x-svc-error-type': 'request_timeout' })]);
    const error = await failure(client(server, { maxAttempts: 2 }).getJson(platformPaths.apps));
    expect(error).toMatchObject({ status: 504, type: 'server_error', errorType: 'request_timeout', retryable: true, attempts: 2 });
    expect(error.message).toBe(
      'GET /v1/serverless/apps answered 504 server_error (request_timeout) with empty body — gave up after 2 attempts',
    );
  });

  it('does not retry a model-level 500 that says X-Svc-Retryable: false', async () => {
    const server = await serve([
      json(
        500,
        { detail: [{ loc: ['body'], msg: 'Internal error', type: 'internal_server_error', url: 'https://docs/errors/#internal_server_error' }] },
        { 'x-svc-retryable': 'false' },
      ),
      json(200, {}),
    ]);
    const error = await failure(client(server).getJson(platformPaths.apps));
    expect(error).toMatchObject({ status: 500, type: 'internal_server_error', retryable: false, attempts: 1 });
    expect(error.details).toEqual([
      { loc: ['body'], msg: 'Internal error', type: 'internal_server_error', url: 'https://docs/errors/#internal_server_error', ctx: null },
    ]);
    expect(server.requests).toHaveLength(1);
  });

  it('retries a model-level 500 that says X-Svc-Retryable: true', async () => {
    const server = await serve([
      json(500, { detail: [{ loc: ['body'], msg: 'x', type: 'downstream_service_unavailable', url: 'u' }] }, { 'x-svc-retryable': 'true' }),
      json(200, { ok: true }),
    ]);
    expect(await client(server).getJson(platformPaths.apps)).toEqual({ ok: true });
    expect(server.requests).toHaveLength(2);
  });

  it('reads a model-level 422 with ctx and never retries it', async () => {
    const server = await serve([
      json(422, {
        detail: [{ loc: ['body', 'limit'], msg: 'Input should be less than or equal to 100', type: 'less_than_equal', url: 'u', ctx: { le: 100 }, input: 500 }],
      }),
    ]);
    const error = await failure(client(server).getJson(platformPaths.requestsByEndpoint, { query: { limit: 500 } }));
    expect(error).toMatchObject({
      status: 422,
      type: 'less_than_equal',
      retryable: false,
      attempts: 1,
      serverMessage: 'body.limit: Input should be less than or equal to 100',
    });
    expect(error.details[0].ctx).toEqual({ le: 100 });
    expect(server.requests).toHaveLength(1);
  });

  it('describes a non-JSON error body by size only and retries the 5xx', async () => {
    const html = '<html><body>Bad gateway, token=abc</body></html>';
    const server = await serve([text(502, html, { 'content-type': 'text/html' })]);
    const error = await failure(client(server, { maxAttempts: 3 }).getJson(platformPaths.apps));
    expect(error).toMatchObject({ status: 502, type: 'server_error', retryable: true, attempts: 3 });
    expect(error.message).toBe(
      `GET /v1/serverless/apps answered 502 server_error with non-JSON body of ${html.length} bytes — gave up after 3 attempts`,
    );
    expect(server.requests).toHaveLength(3);
  });

  it('does not retry 501 not_implemented', async () => {
    const server = await serve([json(501, { error: { type: 'not_implemented', message: 'Not yet' } })]);
    const error = await failure(client(server).getJson(platformPaths.apps));
    expect(error).toMatchObject({ status: 501, type: 'not_implemented', retryable: false, attempts: 1 });
  });

  it.each([400, 401, 403, 404, 301, 302, 307, 308])('never retries %i', async (status) => {
    const body = status === 404 ? { error: { type: 'not_found', message: 'No such app' } } : {};
    const headers: Record<string, string> = status < 400 ? { location: '/elsewhere' } : {};
    const server = await serve([json(status, body, { ...headers, 'x-svc-retryable': 'true' }), json(200, {})]);
    const error = await failure(client(server).getJson(platformPaths.apps));
    expect(error.status).toBe(status);
    expect(error.retryable).toBe(false);
    expect(error.attempts).toBe(1);
    expect(server.requests).toHaveLength(1);
    if (status === 404) expect(error.type).toBe('not_found');
    if (status < 400) expect(error.type).toBe('redirect');
  });
});

describe('PlatformClient: retry timing', () => {
  it('honours Retry-After on a 429', async () => {
    const server = await serve([
      json(429, { error: { type: 'rate_limited', message: 'Slow down' } }, { 'retry-after': '0.05' }),
      json(200, { ok: 1 }),
    ]);
    const { retries, onRetry } = recordRetries();
    await client(server).getJson(platformPaths.apps, { ctx: { onRetry } });
    expect(retries.map((r) => [r.attempt, r.delayMs, r.error.type, r.error.retryAfterMs])).toEqual([[1, 50, 'rate_limited', 50]]);
  });

  it('honours x-ratelimit-reset on a 429 without Retry-After', async () => {
    const server = await serve([json(429, '', { 'x-ratelimit-reset': '0.03' }), json(200, { ok: 1 })]);
    const { retries, onRetry } = recordRetries();
    await client(server).getJson(platformPaths.apps, { ctx: { onRetry } });
    expect(retries.map((r) => r.delayMs)).toEqual([30]);
    expect(retries[0].error.type).toBe('rate_limited');
  });

  it('backs off exponentially with full jitter when the 429 gives no hint', async () => {
    const server = await serve([json(429, ''), json(429, ''), json(429, ''), json(200, { ok: 1 })]);
    const { retries, onRetry } = recordRetries();
    // random 0.5 of the ceiling base * 2^(attempt-1): 8 -> 4, 16 -> 8, 32 -> 16.
    await client(server).getJson(platformPaths.apps, { ctx: { onRetry } });
    expect(retries.map((r) => [r.attempt, r.delayMs])).toEqual([
      [1, 4],
      [2, 8],
      [3, 16],
    ]);
    expect(server.requests).toHaveLength(4);
  });

  it('caps the backoff ceiling at maxBackoffMs', async () => {
    const server = await serve([json(500, '')]);
    const { retries, onRetry } = recordRetries();
    await failure(client(server, { maxAttempts: 5, backoffBaseMs: 10, maxBackoffMs: 30, random: () => 0.999 }).getJson(platformPaths.apps, { ctx: { onRetry } }));
    expect(retries.map((r) => r.delayMs)).toEqual([9, 19, 29, 29]);
  });

  it('gives up after maxAttempts', async () => {
    const server = await serve([json(503, { error: { type: 'server_error', message: 'down' } })]);
    const { retries, onRetry } = recordRetries();
    const error = await failure(client(server, { maxAttempts: 3 }).getJson(platformPaths.apps, { ctx: { onRetry } }));
    expect(error).toMatchObject({ status: 503, type: 'server_error', retryable: true, attempts: 3 });
    expect(retries.map((r) => r.attempt)).toEqual([1, 2]);
    expect(server.requests).toHaveLength(3);
  });

  it('gives up when the next wait would pass maxElapsedMs', async () => {
    const server = await serve([json(503, '')]);
    const { retries, onRetry } = recordRetries();
    // Waits of 1 then 2 s against a 3 s budget: the second wait cannot fit, and the first fits however slowly a
    // loaded machine answers the first attempt (up to 2 s).
    const platform = client(server, { maxAttempts: 10, backoffBaseMs: 2_000, maxBackoffMs: 10_000, maxElapsedMs: 3_000 });
    const error = await failure(platform.getJson(platformPaths.apps, { ctx: { onRetry } }));
    expect(error.attempts).toBe(2);
    expect(retries.map((r) => r.delayMs)).toEqual([1_000]);
    expect(error.message).toContain('waiting 2000 ms would pass the 3000 ms time budget');
    expect(server.requests).toHaveLength(2);
  });

  it('gives up at once when Retry-After is longer than the time budget', async () => {
    const server = await serve([json(429, '', { 'retry-after': '60' })]);
    const error = await failure(client(server, { maxElapsedMs: 2_000 }).getJson(platformPaths.apps));
    expect(error).toMatchObject({ status: 429, type: 'rate_limited', retryable: true, retryAfterMs: 60_000, attempts: 1 });
    expect(server.requests).toHaveLength(1);
  });

  it('aborts an attempt still running when the time budget ends', async () => {
    const server = await serve([hang()]);
    const error = await failure(client(server, { maxElapsedMs: 150 }).getJson(platformPaths.apps));
    expect(error).toMatchObject({ type: 'timeout', status: null, attempts: 1 });
    expect(error.message).toBe('GET /v1/serverless/apps: the 150 ms time budget ran out during attempt 1');
  });

  it('stops waiting when the caller aborts during the backoff', async () => {
    const server = await serve([json(503, '', { 'retry-after': '30' })]);
    const controller = new AbortController();
    const error = await failure(
      client(server).getJson(platformPaths.apps, { ctx: { signal: controller.signal, onRetry: () => controller.abort() } }),
    );
    expect(error).toMatchObject({ type: 'aborted', retryable: false, attempts: 1 });
    expect(server.requests).toHaveLength(1);
  });
});

describe('PlatformClient: broken transfers', () => {
  it('retries a connection reset in the middle of the body', async () => {
    const server = await serve([resetMidBody(), json(200, APPS)]);
    const { retries, onRetry } = recordRetries();
    const result = await client(server).getJson(platformPaths.apps, { schema: AppsResponse, ctx: { onRetry } });
    expect(result.apps[0].name).toBe('img');
    expect(retries.map((r) => [r.error.type, r.error.status, r.error.retryable])).toEqual([['truncated_body', 200, true]]);
  });

  it('retries a 200 whose JSON is cut off', async () => {
    const server = await serve([text(200, '{"apps": [{"endpoint_id": "acme/img"', { 'content-type': 'application/json' }), json(200, APPS)]);
    const { retries, onRetry } = recordRetries();
    const result = await client(server).getJson(platformPaths.apps, { schema: AppsResponse, ctx: { onRetry } });
    expect(result.apps).toHaveLength(1);
    expect(retries[0].error).toMatchObject({ type: 'truncated_body', status: 200, retryable: true });
    expect(retries[0].error.message).toBe('GET /v1/serverless/apps answered 200 with a body that is not complete JSON (36 bytes)');
  });

  it('retries when the headers are slower than headersTimeoutMs', async () => {
    const server = await serve([hang(), json(200, { ok: 1 })]);
    const { retries, onRetry } = recordRetries();
    const result = await client(server, { headersTimeoutMs: 2_000 }).getJson(platformPaths.apps, { ctx: { onRetry } });
    expect(result).toEqual({ ok: 1 });
    expect(retries.map((r) => [r.error.type, r.error.status])).toEqual([['timeout', null]]);
    expect(retries[0].error.message).toBe('GET /v1/serverless/apps: headers timeout (UND_ERR_HEADERS_TIMEOUT)');
  });

  it('retries when the body stalls longer than bodyTimeoutMs', async () => {
    const server = await serve([stallBody(), json(200, { ok: 2 })]);
    const { retries, onRetry } = recordRetries();
    const result = await client(server, { bodyTimeoutMs: 2_000 }).getJson(platformPaths.apps, { ctx: { onRetry } });
    expect(result).toEqual({ ok: 2 });
    expect(retries.map((r) => [r.error.type, r.error.status])).toEqual([['timeout', 200]]);
  });

  it('retries a refused connection as a network error up to maxAttempts', async () => {
    const server = await serve([json(200, {})]);
    const baseUrl = server.baseUrl;
    await server.close();
    const platform = new PlatformClient({ baseUrl, apiKey: API_KEY, backoffBaseMs: 1, maxAttempts: 3 });
    opened.push(platform);
    const error = await failure(platform.getJson(platformPaths.apps));
    expect(error).toMatchObject({ type: 'network_error', status: null, retryable: true, attempts: 3 });
  });
});

describe('PlatformClient: responses', () => {
  it('refuses a 2xx that does not match the schema, naming the place but not the body', async () => {
    const server = await serve([json(200, { apps: [{ endpoint_id: 42, owner: 'secret-owner' }] })]);
    const error = await failure(client(server).getJson(platformPaths.apps, { schema: AppsResponse }));
    expect(error).toMatchObject({ type: 'invalid_response', status: 200, retryable: false, attempts: 1 });
    expect(error.message).toBe(
      'GET /v1/serverless/apps answered 200 with a response that does not match the expected schema at apps.0.endpoint_id: Invalid input: expected string, received number',
    );
    expect(error.message).not.toContain('secret-owner');
    expect(server.requests).toHaveLength(1);
  });

  it('posts JSON and reads text', async () => {
    const exposition = '# TYPE svc_app_queue_size gauge\nsvc_app_queue_size{application="img"} 3\n';
    const server = await serve([
      (res, req) => json(200, { echoed: JSON.parse(req.body), type: req.headers['content-type'] })(res, req),
      text(200, exposition, { 'content-type': 'text/plain; version=0.0.4' }),
    ]);
    const platform = client(server);
    const posted = await platform.postJson(platformPaths.logsHistory, [{ key: 'app', value: 'img', condition_type: 'EXACT' }]);
    expect(posted).toEqual({ echoed: [{ key: 'app', value: 'img', condition_type: 'EXACT' }], type: 'application/json' });
    const metrics = await platform.getText(platformPaths.metrics, { accept: 'text/plain; version=0.0.4' });
    expect(metrics).toEqual({ body: exposition, contentType: 'text/plain; version=0.0.4' });
    expect(server.requests[1].headers.accept).toBe('text/plain; version=0.0.4');
  });

  it('refuses a list of more than 50 values before sending anything', async () => {
    const server = await serve([json(200, {})]);
    const names = Array.from({ length: 51 }, (_, i) => `app-${i}`);
    const error = await failure(client(server).getJson(platformPaths.serverlessUsage, { query: { app: names } }));
    expect(error).toMatchObject({ type: 'invalid_request', retryable: false, attempts: 0 });
    expect(server.requests).toHaveLength(0);
  });

  it('never logs a key', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    const logger = pino({ level: 'debug' }, sink);
    const server = await serve([json(503, ''), json(401, { error: { type: 'authorization_error', message: 'bad key' } })]);
    await failure(client(server, { logger }).getJson(platformPaths.serverlessUsage));
    const output = lines.join('');
    expect(lines.length).toBeGreaterThan(0);
    expect(output).toContain('platform call failed; retrying');
    expect(output).not.toContain(ADMIN_KEY);
    expect(output).not.toContain(API_KEY);
  });
});

describe('PlatformClient.paginate', () => {
  const RequestsPage = z.looseObject({ items: z.array(z.looseObject({ request_id: z.string() })) });
  const item = (id: string) => ({ request_id: id, endpoint_id: 'acme/img', ended_at: '2026-03-01T00:00:00Z', status_code: 200, duration: 1 });

  it('follows next_cursor across 3 pages and passes each cursor back unchanged', async () => {
    const cursors = ['eyJvZmZzZXQiOjJ9+/=', 'c2:page 3&x=1'];
    const server = await serve([
      json(200, { items: [item('r1'), item('r2')], next_cursor: cursors[0], has_more: true }),
      json(200, { items: [item('r3')], next_cursor: cursors[1], has_more: true }),
      json(200, { items: [item('r4')], next_cursor: null, has_more: false }),
    ]);
    const pages = [];
    for await (const page of client(server).paginate(platformPaths.requestsByEndpoint, {
      query: { endpoint_id: ['acme/img', 'acme/txt'], expand: 'billing', limit: 2 },
      schema: RequestsPage,
    })) {
      pages.push(page);
    }
    expect(pages.map((p) => p.items.map((i) => i.request_id))).toEqual([['r1', 'r2'], ['r3'], ['r4']]);
    expect(server.requests.map((r) => r.query.get('cursor'))).toEqual([null, cursors[0], cursors[1]]);
    for (const request of server.requests) {
      expect(request.query.getAll('endpoint_id')).toEqual(['acme/img', 'acme/txt']);
      expect(request.query.get('expand')).toBe('billing');
      expect(request.query.get('limit')).toBe('2');
    }
  });

  it('resumes from a saved cursor and paginates POST calls with the same body', async () => {
    const page = (cursor: string | null, more: boolean) => json(200, { items: [], next_cursor: cursor, has_more: more });
    const server = await serve([page('k2', true), page(null, false)]);
    const filters = [{ key: 'level', value: 'ERROR', condition_type: 'EXACT' }];
    const logsPage = z.looseObject({ items: z.array(z.unknown()) });
    let count = 0;
    for await (const _ of client(server).paginate(platformPaths.logsHistory, {
      method: 'POST',
      body: filters,
      query: { cursor: 'k1', limit: 1000 },
      schema: logsPage,
    })) {
      count += 1;
    }
    expect(count).toBe(2);
    expect(server.requests.map((r) => [r.method, r.query.get('cursor'), JSON.parse(r.body)])).toEqual([
      ['POST', 'k1', filters],
      ['POST', 'k2', filters],
    ]);
  });

  it('stops with an error when has_more comes without a cursor, after yielding the page', async () => {
    const server = await serve([json(200, { items: [item('r1')], next_cursor: null, has_more: true })]);
    const seen: string[] = [];
    const error = await failure(
      (async () => {
        for await (const page of client(server).paginate(platformPaths.requestsByEndpoint, { schema: RequestsPage })) {
          seen.push(...page.items.map((i) => i.request_id));
        }
      })(),
    );
    expect(seen).toEqual(['r1']);
    expect(error).toMatchObject({ type: 'invalid_response', retryable: false, path: '/v1/serverless/requests/by-endpoint' });
    expect(error.message).toBe('GET /v1/serverless/requests/by-endpoint: pagination cannot continue: has_more is true but next_cursor is missing');
    expect(server.requests).toHaveLength(1);
  });

  it('stops with an error when a cursor repeats', async () => {
    const server = await serve([
      json(200, { items: [], next_cursor: 'a', has_more: true }),
      json(200, { items: [], next_cursor: 'b', has_more: true }),
      json(200, { items: [], next_cursor: 'a', has_more: true }),
    ]);
    const error = await failure(
      (async () => {
        for await (const _ of client(server).paginate(platformPaths.requestsByEndpoint, { schema: RequestsPage })) {
          // drain
        }
      })(),
    );
    expect(error.message).toContain('next_cursor repeats an earlier cursor');
    expect(server.requests).toHaveLength(3);
  });

  it('retries a failed page without losing its cursor', async () => {
    const server = await serve([
      json(200, { items: [item('r1')], next_cursor: 'p2', has_more: true }),
      json(502, ''),
      json(200, { items: [item('r2')], next_cursor: null, has_more: false }),
    ]);
    const ids: string[] = [];
    for await (const page of client(server).paginate(platformPaths.requestsByEndpoint, { schema: RequestsPage })) {
      ids.push(...page.items.map((i) => i.request_id));
    }
    expect(ids).toEqual(['r1', 'r2']);
    expect(server.requests.map((r) => r.query.get('cursor'))).toEqual([null, 'p2', 'p2']);
  });
  /** Resolves once the server has seen `n` requests (the test's timeout bounds the wait). */
  async function seen(server: ScriptedServer, n: number): Promise<void> {
    while (server.requests.length < n) await new Promise((resolve) => setTimeout(resolve, 5));
  }

  /** Resolves once the client has no call open (a prefetched page has arrived, or its call has failed). */
  async function settled(platform: PlatformClient): Promise<void> {
    while (platform.inFlight.now > 0) await new Promise((resolve) => setTimeout(resolve, 5));
  }

  it('with prefetch, asks for the next page while the caller still holds this one; pages and cursors as without', async () => {
    const server = await serve([
      json(200, { items: [item('r1'), item('r2')], next_cursor: 'p2', has_more: true }),
      json(200, { items: [item('r3')], next_cursor: 'p3', has_more: true }),
      // An explicit has_more false ends the walk, cursor or not.
      json(200, { items: [item('r4')], next_cursor: 'p4', has_more: false }),
    ]);
    const platform = client(server);
    const pages: string[][] = [];
    const openWhileHeld: number[] = [];
    // A call context without a signal (only onRetry) is one a caller may pass.
    for await (const page of platform.paginate(platformPaths.requestsByEndpoint, { schema: RequestsPage, prefetch: true, ctx: { onRetry: () => undefined } })) {
      pages.push(page.items.map((i) => i.request_id));
      // The next page's call is open while this page is held (a call takes its slot as it starts), and reaches the
      // platform before this page is done with; the last page (has_more false) opens none.
      openWhileHeld.push(platform.inFlight.now);
      if (pages.length < 3) await seen(server, pages.length + 1);
    }
    expect(pages).toEqual([['r1', 'r2'], ['r3'], ['r4']]);
    expect(openWhileHeld).toEqual([1, 1, 0]);
    expect(server.requests.map((r) => r.query.get('cursor'))).toEqual([null, 'p2', 'p3']);
  });

  it('with prefetch, a repeated cursor is not asked for: the walk stops with the error after its page', async () => {
    const server = await serve([
      json(200, { items: [item('r1')], next_cursor: 'a', has_more: true }),
      json(200, { items: [item('r2')], next_cursor: 'a', has_more: true }),
    ]);
    const platform = client(server);
    const done: string[] = [];
    const openWhileHeld: number[] = [];
    const error = await failure(
      (async () => {
        for await (const page of platform.paginate(platformPaths.requestsByEndpoint, { schema: RequestsPage, prefetch: true })) {
          done.push(...page.items.map((i) => i.request_id));
          openWhileHeld.push(platform.inFlight.now);
        }
      })(),
    );
    expect(done).toEqual(['r1', 'r2']);
    expect(openWhileHeld).toEqual([1, 0]);
    expect(error.message).toContain('next_cursor repeats an earlier cursor');
    expect(server.requests.map((r) => r.query.get('cursor'))).toEqual([null, 'a']);
  });

  it('with prefetch, a page that arrived after the caller aborted is not handed over', async () => {
    const server = await serve([
      json(200, { items: [item('r1')], next_cursor: 'p2', has_more: true }),
      json(200, { items: [item('r2')], next_cursor: 'p3', has_more: true }),
      json(200, { items: [item('r3')], next_cursor: null, has_more: false }),
    ]);
    const platform = client(server);
    const caller = new AbortController();
    const done: string[] = [];
    const error = await failure(
      (async () => {
        for await (const page of platform.paginate(platformPaths.requestsByEndpoint, { schema: RequestsPage, prefetch: true, ctx: { signal: caller.signal } })) {
          done.push(...page.items.map((i) => i.request_id));
          await settled(platform); // page 2 is in hand
          caller.abort(new Error('shutting down'));
        }
      })(),
    );
    expect(done).toEqual(['r1']);
    expect(error).toMatchObject({ type: 'aborted', retryable: false });
    expect(error.message).toBe('GET /v1/serverless/requests/by-endpoint: aborted by the caller');
    expect(server.requests).toHaveLength(2);
  });

  it('without prefetch, the next page is asked for only when the caller asks for it', async () => {
    const server = await serve([
      json(200, { items: [item('r1')], next_cursor: 'p2', has_more: true }),
      json(200, { items: [item('r2')], next_cursor: null, has_more: false }),
    ]);
    const platform = client(server);
    const openWhileHeld: number[] = [];
    for await (const _ of platform.paginate(platformPaths.requestsByEndpoint, { schema: RequestsPage })) {
      openWhileHeld.push(platform.inFlight.now);
    }
    expect(openWhileHeld).toEqual([0, 0]);
    expect(server.requests).toHaveLength(2);
  });

  it("with prefetch, the caller's abort cancels the prefetched call: the walk ends 'aborted by the caller'", async () => {
    const server = await serve([json(200, { items: [item('r1')], next_cursor: 'p2', has_more: true }), hang()]);
    const platform = client(server, { headersTimeoutMs: 60_000 });
    const caller = new AbortController();
    const retries = recordRetries();
    const error = await failure(
      (async () => {
        for await (const _ of platform.paginate(platformPaths.requestsByEndpoint, {
          schema: RequestsPage,
          prefetch: true,
          ctx: { signal: caller.signal, onRetry: retries.onRetry },
        })) {
          await seen(server, 2);
          caller.abort(new Error('shutting down'));
        }
      })(),
    );
    expect(error).toMatchObject({ type: 'aborted', retryable: false, path: '/v1/serverless/requests/by-endpoint' });
    expect(error.message).toBe('GET /v1/serverless/requests/by-endpoint: aborted by the caller');
    expect(retries.retries).toEqual([]);
    expect(server.requests).toHaveLength(2);
  });

  it('with prefetch, a caller that stops early leaves no call running and no error behind', async () => {
    const server = await serve([json(200, { items: [item('r1')], next_cursor: 'p2', has_more: true }), hang()]);
    const platform = client(server, { headersTimeoutMs: 60_000 });
    const retries = recordRetries();
    for await (const page of platform.paginate(platformPaths.requestsByEndpoint, { schema: RequestsPage, prefetch: true, ctx: retries })) {
      expect(page.items.map((i) => i.request_id)).toEqual(['r1']);
      await seen(server, 2);
      break;
    }
    // The prefetched call is cancelled, not left waiting out its 60 s (close() waits for every call in flight, so
    // this test would time out), and nothing is retried; an unhandled rejection would fail this file.
    await platform.close();
    expect(retries.retries).toEqual([]);
    expect(server.requests).toHaveLength(2);
  });

  it('with prefetch, a next page the platform refuses fails the walk when the caller asks for it, not before', async () => {
    const server = await serve([
      json(200, { items: [item('r1')], next_cursor: 'p2', has_more: true }),
      json(400, { error: { type: 'invalid_request', message: 'bad cursor' } }),
    ]);
    const platform = client(server);
    const done: string[] = [];
    const error = await failure(
      (async () => {
        for await (const page of platform.paginate(platformPaths.requestsByEndpoint, { schema: RequestsPage, prefetch: true })) {
          // The refusal has arrived meanwhile; this page is still finished with.
          await settled(platform);
          done.push(...page.items.map((i) => i.request_id));
        }
      })(),
    );
    expect(done).toEqual(['r1']);
    expect(error).toMatchObject({ status: 400, retryable: false, path: '/v1/serverless/requests/by-endpoint' });
    expect(server.requests).toHaveLength(2);
  });
});
