// Issue 31: src/api/index.ts (the query API's authentication, its index and OpenAPI server, and the checks of
// /cost, /reports/finance and /reports/focus) on fastify with a recording store, so that mutation testing can afford
// it: no query reaches ClickHouse. Oracles: the README (API_TOKENS as bearer tokens; none means loopback only),
// the routes' documented parameters, and hand-worked ranges (API_MAX_RANGE_DAYS).
import Fastify, { type FastifyInstance } from 'fastify';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { apiExtension, type ApiRoutes } from '../../src/api/index.js';
import { z } from 'zod';
import { parseConfig } from '../../src/config.js';
import { ConfigError } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import type { Runtime } from '../../src/runtime.js';

const apps: FastifyInstance[] = [];
afterEach(async () => {
  while (apps.length > 0) await apps.pop()?.close();
});

/** The API on fastify over a store whose queries answer `answer(sql)`; returns the app and the queries seen. */
async function api(env: Record<string, string> = {}, answer: (sql: string) => unknown[] = () => [], extra: ApiRoutes[] = []) {
  const config = parseConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), 'm3-api-')), LOG_LEVEL: 'silent', NODE_ENV: 'test', ...env });
  const queries: Array<{ sql: string; params: unknown; settings: unknown }> = [];
  const store = {
    mode: 'server',
    client: {
      query: async ({ query, query_params, clickhouse_settings }: { query: string; query_params: unknown; clickhouse_settings: unknown }) => {
        queries.push({ sql: query, params: query_params, settings: clickhouse_settings });
        return { json: async () => answer(query) };
      },
    },
    close: async () => undefined,
  };
  const app = Fastify();
  apps.push(app);
  const rt = { config, logger: createLogger('silent'), registry: createRegistry({ defaultMetrics: false }), store, writer: undefined, now: () => new Date('2026-11-21T12:00:00Z'), app } as unknown as Runtime & { app: FastifyInstance };
  await apiExtension(extra)(rt);
  await app.ready();
  return { app, queries };
}

const get = async (app: FastifyInstance, url: string, headers: Record<string, string> = {}) => {
  const res = await app.inject({ method: 'GET', url, headers });
  return { status: res.statusCode, body: res.headers['content-type']?.toString().includes('json') ? res.json() : res.body, headers: res.headers };
};

describe('query API: authentication', () => {
  it('refuses to start on a non-loopback HOST without API_TOKENS', async () => {
    await expect(api({ HOST: '0.0.0.0' })).rejects.toBeInstanceOf(ConfigError);
    await expect(api({ HOST: '0.0.0.0' })).rejects.toMatchObject({ message: expect.stringContaining('API_TOKENS') });
  });

  it('answers without a token when none is configured (loopback)', async () => {
    const { app } = await api({ HOST: '127.0.0.1' });
    expect((await get(app, '/api/v1/')).status).toBe(200);
  });

  it('with API_TOKENS: a bearer token of the list, any case of "Bearer", spaces trimmed; nothing else', async () => {
    const { app } = await api({ HOST: '0.0.0.0', API_TOKENS: 'tok-one-0123456789,tok-two-0123456789' });
    expect((await get(app, '/api/v1/', { authorization: 'Bearer tok-one-0123456789' })).status).toBe(200);
    expect((await get(app, '/api/v1/', { authorization: 'bearer   tok-two-0123456789 ' })).status).toBe(200);
    const refused = await get(app, '/api/v1/', { authorization: 'Bearer tok-three-0123456789' });
    expect(refused).toMatchObject({ status: 401, body: { error: { type: 'authorization_error', message: 'a valid "Authorization: Bearer <token>" header is required (API_TOKENS)' } } });
    expect((await get(app, '/api/v1/')).status).toBe(401);
    expect((await get(app, '/api/v1/', { authorization: 'tok-one-0123456789' })).status).toBe(401);
    expect((await get(app, '/api/v1/', { authorization: 'Basic tok-one-0123456789' })).status).toBe(401);
    expect((await get(app, '/api/v1/', { authorization: 'xBearer tok-one-0123456789' })).status).toBe(401);
    expect((await get(app, '/api/v1/', { authorization: 'Bearer tok-one-0123456789 extra' })).status).toBe(401);
  });
});

describe('query API: index and OpenAPI', () => {
  it('lists the routes with {param} paths and points at the OpenAPI document', async () => {
    const thing: ApiRoutes = (app, registry) =>
      registry.get(app, { path: '/things/:thing_id/parts/:part', operationId: 'getThingPart', summary: 'a part', response: z.object({}), query: z.strictObject({}), handler: async () => ({}) } as never);
    const { app } = await api({}, () => [], [thing]);
    const { body } = await get(app, '/api/v1/');
    expect(body.service).toBe('tallyhouse');
    expect(body.openapi).toBe('/api/v1/openapi.json');
    expect(body.routes.map((r: { path: string; operationId: string }) => [r.path, r.operationId])).toEqual(
      expect.arrayContaining([
        ['/api/v1/cost', 'getCost'],
        ['/api/v1/reports/finance', 'getFinanceReport'],
        ['/api/v1/reports/focus', 'getFocusReport'],
      ]),
    );
    expect(body.routes.find((r: { operationId: string }) => r.operationId === 'getThingPart')).toEqual({ path: '/api/v1/things/{thing_id}/parts/{part}', operationId: 'getThingPart', summary: 'a part' });
  });

  it('names PUBLIC_URL as the server, else the listening address (IPv6 in brackets), never the Host header', async () => {
    const a = await api({ PUBLIC_URL: 'https://th.example.com/' });
    const docA = (await get(a.app, '/api/v1/openapi.json', { host: 'evil.example' })).body;
    expect(docA.servers.map((x: { url: string }) => x.url)).toEqual(['https://th.example.com']);
    expect(docA.info.title).toBe('Tallyhouse query API');
    const b = await api({ HOST: '127.0.0.1', PORT: '8123' });
    expect((await get(b.app, '/api/v1/openapi.json', { host: 'evil.example' })).body.servers.map((x: { url: string }) => x.url)).toEqual(['http://127.0.0.1:8123']);
    const c = await api({ HOST: '::1', PORT: '8124' });
    expect((await get(c.app, '/api/v1/openapi.json')).body.servers.map((x: { url: string }) => x.url)).toEqual(['http://[::1]:8124']);
  });
});

describe('GET /cost: checks before any cost query', () => {
  const zones = (sql: string) => (sql.includes('timezone') && sql.includes('DISTINCT') ? [{ timezone: 'Europe/Berlin' }] : []);

  it('refuses to >= from, and a range longer than API_MAX_RANGE_DAYS', async () => {
    const { app, queries } = await api({ API_MAX_RANGE_DAYS: '31' }, zones);
    const same = await get(app, '/api/v1/cost?from=2026-11-01&to=2026-11-01');
    expect(same).toMatchObject({ status: 400, body: { error: { parameter: 'to', message: expect.stringContaining('expected a date after from (2026-11-01); to is exclusive') } } });
    expect((await get(app, '/api/v1/cost?from=2026-11-02&to=2026-11-01')).status).toBe(400);
    // 2026-11-01 .. 2026-12-02 is 31 days: allowed; .. 12-03 is 32: refused.
    expect((await get(app, '/api/v1/cost?from=2026-11-01&to=2026-12-03')).status).toBe(400);
    expect(queries).toEqual([]);
    expect((await get(app, '/api/v1/cost?from=2026-11-01&to=2026-12-02')).status).toBe(200);
  });

  it('accepts the collected and the configured timezones only, naming them all', async () => {
    const { app } = await api({ TIMEZONES: 'UTC,Asia/Kolkata' }, zones);
    const refused = await get(app, '/api/v1/cost?from=2026-11-01&to=2026-11-02&timezone=America/Chicago');
    expect(refused).toMatchObject({ status: 400, body: { error: { parameter: 'timezone', message: expect.stringContaining('expected one of the collected timezones: Asia/Kolkata, Europe/Berlin, UTC') } } });
    expect((await get(app, '/api/v1/cost?from=2026-11-01&to=2026-11-02&timezone=Europe/Berlin')).status).toBe(200);
    expect((await get(app, '/api/v1/cost?from=2026-11-01&to=2026-11-02&timezone=Asia/Kolkata')).status).toBe(200);
  });

  it('refuses groups, apps and endpoints that do not apply to the product', async () => {
    const { app } = await api({}, zones);
    const base = '/api/v1/cost?from=2026-11-01&to=2026-11-02';
    const g = await get(app, `${base}&product=model_api&group_by=machine_type`);
    expect(g).toMatchObject({ status: 400, body: { error: { parameter: 'group_by', message: 'group_by: machine_type do not apply to product=model_api; expected a subset of endpoint, api_key, unit, day, week, month' } } });
    expect((await get(app, `${base}&group_by=endpoint`)).body.error.message).toMatch(/^group_by: endpoint do not apply to product=serverless; expected a subset of /);
    expect((await get(app, `${base}&product=model_api&app=img`)).body.error).toMatchObject({ parameter: 'app', message: 'app: applies to product=serverless; use endpoint for model_api' });
    expect((await get(app, `${base}&endpoint=svc/flux`)).body.error).toMatchObject({ parameter: 'endpoint', message: 'endpoint: applies to product=model_api; use app for serverless' });
    expect((await get(app, `${base}&group_by=nonsense`)).status).toBe(400);
  });

  it('answers the columns of the groups asked, the currency, the money columns of the product, and final', async () => {
    const { app } = await api({}, zones);
    const serverless = await get(app, '/api/v1/cost?from=2026-11-01&to=2026-11-02&group_by=app,app&format=csv');
    expect(String(serverless.body).split(/\r?\n/)[0]).toBe('app,currency,machine_seconds,surge_machine_seconds,subtotal,discount,cost,surge_cost,final');
    const model = await get(app, '/api/v1/cost?from=2026-11-01&to=2026-11-02&product=model_api&group_by=endpoint&format=csv');
    expect(String(model.body).split(/\r?\n/)[0]).toBe('endpoint,currency,quantity,subtotal,discount,cost,final');
    const json = await get(app, '/api/v1/cost?from=2026-11-01&to=2026-11-03&timezone=Europe/Berlin&group_by=day');
    expect(json.body).toMatchObject({ timezone: 'Europe/Berlin', from: '2026-11-01', to: '2026-11-03', product: 'serverless', group_by: ['day'], final: false, rows: [] });
  });
});

describe('GET /reports/finance and /reports/focus: checks', () => {
  it('refuses a timezone that is not an IANA zone, and a malformed month', async () => {
    const { app, queries } = await api();
    expect(await get(app, '/api/v1/reports/finance?month=2026-11&timezone=Mars/Base')).toMatchObject({ status: 400, body: { error: { parameter: 'timezone', message: expect.stringContaining('expected an IANA time zone') } } });
    expect((await get(app, '/api/v1/reports/finance?month=2026-13')).status).toBe(400);
    expect((await get(app, '/api/v1/reports/focus?month=1999-12')).status).toBe(400);
    expect(queries).toEqual([]);
  });

  it('a month with nothing collected is a 404 no_data; one not begun is a 400 on month', async () => {
    const { app } = await api();
    expect((await get(app, '/api/v1/reports/finance?month=2026-01')).body.error.type).toBe('no_data');
    expect(await get(app, '/api/v1/reports/finance?month=2099-01')).toMatchObject({ status: 400, body: { error: { parameter: 'month' } } });
    expect(await get(app, '/api/v1/reports/focus?month=2026-01')).toMatchObject({ status: 404, body: { error: { type: 'no_data' } } });
  });
});
