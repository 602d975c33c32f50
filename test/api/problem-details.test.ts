// One error shape for every HTTP answer (issue 43): each route of the OpenAPI document, provoked into every error it
// declares, answers RFC 9457 application/problem+json with type, title, status, detail and instance, and keeps the
// `error` object ({type, message, parameter}) the query API's clients read; so do /metrics, /readyz, the push
// endpoints, MCP's refusals before JSON-RPC, the console and an unknown path.
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { analyticsRoutes } from '../../src/api/analytics-routes.js';
import { anomalyRoutes } from '../../src/api/anomaly-routes.js';
import { efficiencyRoutes } from '../../src/api/efficiency-routes.js';
import { logStreamRoutes } from '../../src/api/log-stream-route.js';
import { logsRoutes } from '../../src/api/logs-routes.js';
import { requestCostRoutes } from '../../src/api/request-cost-routes.js';
import { sessionRoutes } from '../../src/api/session-routes.js';
import { consoleExtension } from '../../src/console/index.js';
import { addReadinessCondition } from '../../src/http/health.js';
import { installProblemHandlers } from '../../src/http/problem.js';
import { logDrainExtension } from '../../src/ingest/drain/extension.js';
import { faroExtension, FARO_PATH } from '../../src/ingest/faro/extension.js';
import { webhookExtension, WEBHOOK_PATH } from '../../src/ingest/webhooks.js';
import { mcpExtension } from '../../src/mcp/extension.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { testConfig } from '../support/store.js';

const TOKEN = 'problem-token-0123456789';
const OTHER = 'problem-token-other-0123456789';
const THIRD = 'problem-token-third-0123456789';
let service: Service;
let port: number;
type Doc = { paths: Record<string, { get: { responses: Record<string, unknown>; parameters: Array<{ name: string; in: string; schema: { format?: string } }> } }> };
let doc: Doc;

interface Answer {
  status: number;
  type: string;
  body: Record<string, unknown> & { error?: Record<string, unknown> };
}

/** One request over node:http (fetch cannot send a foreign Host header); `hold` keeps a stream open. */
function ask(path: string, opts: { token?: string; host?: string; method?: string; body?: string; headers?: Record<string, string>; hold?: boolean } = {}): Promise<Answer & { close: () => void }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: opts.method ?? 'GET',
        headers: {
          host: opts.host ?? `127.0.0.1:${port}`,
          ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
          ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...opts.headers,
        },
      },
      (res) => {
        const type = String(res.headers['content-type'] ?? '');
        const close = () => res.destroy();
        if (opts.hold && res.statusCode === 200) return resolve({ status: 200, type, body: {}, close });
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          let body: Answer['body'] = {};
          try {
            body = JSON.parse(text) as Answer['body'];
          } catch {
            body = { text };
          }
          resolve({ status: res.statusCode ?? 0, type, body, close });
        });
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** The problem document's fields, and the kept `error` object, for a request to `path` answered with `status`. */
function expectProblem(a: Answer, status: number, path: string, code?: string): void {
  expect(a.status, `${path}: ${JSON.stringify(a.body)}`).toBe(status);
  expect(a.type, path).toMatch(/^application\/problem\+json\b/);
  expect(a.body.status).toBe(status);
  expect(a.body.type).toMatch(/^urn:tallyhouse:problem:[a-z_]+$/);
  expect(typeof a.body.title).toBe('string');
  expect((a.body.title as string).length).toBeGreaterThan(0);
  expect(typeof a.body.detail).toBe('string');
  expect((a.body.detail as string).length).toBeGreaterThan(0);
  expect(a.body.instance).toBe(path.split('?')[0]);
  expect(a.body.error).toMatchObject({ type: String(a.body.type).slice('urn:tallyhouse:problem:'.length), message: a.body.detail });
  if (code) expect(a.body.error!.type).toBe(code);
}

beforeAll(async () => {
  service = await startService(
    testConfig({
      PORT: '0',
      API_TOKENS: `${TOKEN},${OTHER},${THIRD}`,
      METRICS_TOKEN: 'metrics-token-0123456789',
      FARO_APP_KEYS: 'web=faro-key-0123456789abc',
      WEBHOOK_IP_RANGES_CHECK: 'false',
      LOG_STREAM_MAX_CLIENTS: '2',
      LOG_STREAM_MAX_PER_CLIENT: '1',
    }),
    {
      logger: createLogger('silent'),
      registry: createRegistry({ defaultMetrics: false }),
      extensions: [
        apiExtension([requestCostRoutes, analyticsRoutes, logStreamRoutes, logsRoutes, sessionRoutes, efficiencyRoutes, anomalyRoutes]),
        mcpExtension('test'),
        consoleExtension(),
        logDrainExtension(),
        webhookExtension({ jwksUrl: () => 'http://127.0.0.1:9/.well-known/jwks.json' }),
        faroExtension(),
      ],
    },
  );
  port = Number(new URL(service.url).port);
  doc = (await ask('/api/v1/openapi.json', { token: TOKEN })).body as unknown as Doc;
});
afterAll(async () => {
  await service?.close();
});

/** A request for each route's declared 404: what is asked has nothing collected (the store is empty). */
const NOTHING_COLLECTED: Record<string, string> = {
  '/api/v1/reports/finance': '/api/v1/reports/finance?month=2025-01',
  '/api/v1/reports/focus': '/api/v1/reports/focus?month=2025-01&format=json',
  '/api/v1/sessions/{session_id}': '/api/v1/sessions/no-such-session',
};
const concrete = (path: string) => path.replace('{session_id}', 'no-such-session');

describe('every route of the OpenAPI document answers its errors as application/problem+json', () => {
  it('the document lists the routes, and each error it declares is provoked below or by the handler test', () => {
    const paths = Object.keys(doc.paths);
    expect(paths.length).toBeGreaterThanOrEqual(15);
    const provoked = new Set(['400', '401', '421', '422', '500']);
    for (const [path, p] of Object.entries(doc.paths)) {
      for (const status of Object.keys(p.get.responses).filter((s) => s !== '200')) {
        const covered = provoked.has(status) || (status === '404' && path in NOTHING_COLLECTED) || (path === '/api/v1/logs/stream' && ['429', '503'].includes(status));
        expect(covered, `${path} ${status}`).toBe(true);
      }
    }
  });

  it('no token: 401 on every route', async () => {
    for (const path of Object.keys(doc.paths).map(concrete)) expectProblem(await ask(path), 401, path, 'authorization_error');
  });

  it('an unknown parameter: 400 naming the first parameter at fault (a missing required one, else the unknown one), on every route', async () => {
    for (const [path, p] of Object.entries(doc.paths)) {
      const a = await ask(`${concrete(path)}?no_such_parameter=1`, { token: TOKEN });
      expectProblem(a, 400, concrete(path), 'validation_error');
      const required = p.get.parameters.filter((x) => x.in === 'query' && (x as { required?: boolean }).required).map((x) => x.name);
      expect(a.body.error!.parameter, path).toBe(required[0] ?? 'no_such_parameter');
      expect(a.body.detail).toMatch(new RegExp(`^${a.body.error!.parameter}: `));
    }
  });

  it('an impossible date (2026-02-30): 400 naming the parameter, on every route with a date parameter', async () => {
    let checked = 0;
    for (const [path, p] of Object.entries(doc.paths)) {
      const date = p.get.parameters.find((x) => x.in === 'query' && x.schema.format === 'date');
      if (!date) continue;
      checked++;
      const a = await ask(`${concrete(path)}?${date.name}=2026-02-30`, { token: TOKEN });
      expectProblem(a, 400, concrete(path), 'validation_error');
      expect(a.body.error!.parameter, path).toBe(date.name);
    }
    expect(checked).toBeGreaterThanOrEqual(6);
  });

  it('a Host that is not this service: 421 on every route', async () => {
    for (const path of Object.keys(doc.paths).map(concrete)) expectProblem(await ask(path, { token: TOKEN, host: 'rebound.example' }), 421, path, 'misdirected_request');
  });

  it('nothing collected: 404 where a route declares it', async () => {
    for (const [path, url] of Object.entries(NOTHING_COLLECTED)) expectProblem(await ask(url, { token: TOKEN }), 404, url, 'no_data');
  });

  it('GET /logs/stream over its limits: 429 per token, then 503 for all', async () => {
    const first = await ask('/api/v1/logs/stream', { token: TOKEN, hold: true });
    expect(first.status).toBe(200);
    const perToken = await ask('/api/v1/logs/stream', { token: TOKEN });
    expectProblem(perToken, 429, '/api/v1/logs/stream', 'too_many_streams');
    const second = await ask('/api/v1/logs/stream', { token: OTHER, hold: true });
    expect(second.status).toBe(200);
    expectProblem(await ask('/api/v1/logs/stream', { token: THIRD }), 503, '/api/v1/logs/stream', 'unavailable');
    first.close();
    second.close();
  });
});

describe('the rest of the service answers errors in the same shape', () => {
  it('an unknown path, inside and outside the query API: 404', async () => {
    expectProblem(await ask('/api/v1/no-such-route', { token: TOKEN }), 404, '/api/v1/no-such-route', 'not_found');
    expectProblem(await ask('/no-such-path'), 404, '/no-such-path', 'not_found');
  });

  it("the router's refusals: a malformed percent-encoding 400, an over-long path segment 414, without the path echoed", async () => {
    const bad = await ask('/api/v1/sessions/%zz', { token: TOKEN });
    expectProblem(bad, 400, '/api/v1/sessions/%zz', 'bad_request');
    expect(bad.body.detail).toBe('the URL is not valid (a malformed percent-encoding)');
    const long = `/api/v1/sessions/${'x'.repeat(3000)}`;
    const over = await ask(long, { token: TOKEN });
    expectProblem(over, 414, long, 'bad_request');
    expect(over.body.detail).toBe('a path segment is longer than this service accepts');
  });

  it('/metrics without its token: 401; /readyz not ready: 503 with its reason', async () => {
    expectProblem(await ask('/metrics'), 401, '/metrics', 'authorization_error');
    const remove = addReadinessCondition(service.app.server, () => 'the test says not ready');
    try {
      const a = await ask('/readyz');
      expectProblem(a, 503, '/readyz', 'not_ready');
      expect(a.body).toMatchObject({ detail: 'the test says not ready', reason: 'the test says not ready' });
    } finally {
      remove();
    }
  });

  it('the push endpoints: the drain, webhooks and Faro refuse a sender without credentials', async () => {
    expectProblem(await ask('/v1/drains/logs', { method: 'POST', body: '[]' }), 401, '/v1/drains/logs', 'unauthorized');
    const webhook = await ask(WEBHOOK_PATH, { method: 'POST', body: '{}' });
    expectProblem(webhook, 401, WEBHOOK_PATH, 'missing_headers');
    expectProblem(await ask(FARO_PATH, { method: 'POST', body: '{}' }), 401, FARO_PATH, 'unauthorized');
    const empty = await ask(FARO_PATH, { method: 'POST', body: '', headers: { 'x-api-key': 'faro-key-0123456789abc' } });
    expectProblem(empty, 400, FARO_PATH, 'bad_request');
  });

  it('MCP without a token (outside JSON-RPC) and a console file that is not there', async () => {
    expectProblem(await ask('/mcp', { method: 'POST', body: '{}' }), 401, '/mcp', 'authorization_error');
    expectProblem(await ask('/console/no-such-file.js'), 404, '/console/no-such-file.js', 'not_found');
  });
});

describe('the one handler answers a query over its limit (422) and a failure (500) as problems', () => {
  it('hides the statement of a failure and gives the request id', async () => {
    const app = Fastify();
    installProblemHandlers(app);
    app.get('/limit', async () => {
      throw Object.assign(new Error('Timeout exceeded: elapsed 2 seconds, maximum: 1'), { name: 'ClickHouseError', code: '159', type: 'TIMEOUT_EXCEEDED' });
    });
    app.get('/boom', async () => {
      throw new Error("Code: 62. Syntax error while executing SELECT secret_value FROM t WHERE key = 'k'");
    });
    const limit = await app.inject({ method: 'GET', url: '/limit' });
    const boom = await app.inject({ method: 'GET', url: '/boom?x=1' });
    await app.close();
    expect(limit.statusCode).toBe(422);
    expect(limit.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(limit.json()).toMatchObject({ type: 'urn:tallyhouse:problem:query_limit', status: 422, instance: '/limit', error: { type: 'query_limit' } });
    expect(boom.statusCode).toBe(500);
    expect(boom.headers['content-type']).toMatch(/^application\/problem\+json/);
    const body = boom.json();
    expect(body).toMatchObject({ type: 'urn:tallyhouse:problem:internal_error', title: 'Internal error', status: 500, instance: '/boom', error: { type: 'internal_error' } });
    expect(body.request_id).toEqual(expect.any(String));
    expect(body.error.request_id).toBe(body.request_id);
    expect(boom.body).not.toContain('secret_value');
  });
});

describe('what the service refuses before a route runs is a problem too', () => {
  it('headers over the size limit: 431 from the client-error handler', async () => {
    const text = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let got = '';
      socket.on('data', (c) => (got += c.toString('utf8')));
      socket.on('close', () => resolve(got));
      socket.on('error', (err) => (got ? resolve(got) : reject(err)));
      socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Big: ${'x'.repeat(20_000)}\r\n\r\n`);
    });
    const [head, body] = text.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 431 /);
    expect(head).toMatch(/\r\nContent-Type: application\/problem\+json/);
    expect(JSON.parse(body)).toMatchObject({ type: 'urn:tallyhouse:problem:request_header_fields_too_large', status: 431, title: 'Request Header Fields Too Large', error: { type: 'request_header_fields_too_large' } });
  });

  it('a request that arrives while the service stops: 503', async () => {
    let during: Answer | undefined;
    const stopping = await startService(testConfig({ PORT: '0' }), {
      logger: createLogger('silent'),
      registry: createRegistry({ defaultMetrics: false }),
      // preClose runs once close() has begun and before the server stops listening: a request then is one that
      // arrives on a connection while the service stops.
      extensions: [
        async (rt) => {
          rt.app.addHook('preClose', async () => {
            const saved = port;
            port = Number(new URL(stopping.url).port);
            try {
              during = await ask('/healthz');
            } finally {
              port = saved;
            }
          });
        },
      ],
    });
    await stopping.close();
    expectProblem(during!, 503, '/healthz', 'stopping');
  });
});
