// Issue 31: src/api/index.ts past its checks, on fastify with a store that answers each named query from hand-made
// rows (no ClickHouse): /cost rows and their finality per day, /reports/finance and /reports/focus with data (JSON
// and CSV, their file names, the warning for a timezone outside TIMEZONES), the month bounds, the per-query limits
// of the read-only store, and the OpenAPI document of the three routes. Oracles: the README (query API, TIMEZONES,
// API_QUERY_*, LATE_BILLING_WINDOW_HOURS: a day is final once two collections agree after its late-billing window)
// and hand-worked literals.
import Fastify, { type FastifyInstance } from 'fastify';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { apiExtension } from '../../src/api/index.js';
import { parseConfig } from '../../src/config.js';
import { ConfigError } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import type { Runtime } from '../../src/runtime.js';
import { captureLog } from '../support/log-capture.js';

const apps: FastifyInstance[] = [];
afterEach(async () => {
  while (apps.length > 0) await apps.pop()?.close();
});

type Answer = (sql: string, params: Record<string, unknown>) => unknown[] | undefined;

async function api(env: Record<string, string> = {}, answer: Answer = () => [], opts: { logger?: ReturnType<typeof createLogger>; noExtra?: boolean } = {}) {
  const config = parseConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), 'c1-api-')), LOG_LEVEL: 'silent', NODE_ENV: 'test', ...env });
  const queries: Array<{ sql: string; params: Record<string, unknown>; settings: Record<string, unknown> }> = [];
  const store = {
    mode: 'server',
    client: {
      query: async ({ query, query_params, clickhouse_settings }: { query: string; query_params: Record<string, unknown>; clickhouse_settings: Record<string, unknown> }) => {
        queries.push({ sql: query, params: query_params, settings: clickhouse_settings });
        if (query.includes('boom')) throw new Error('boom');
        return { json: async () => answer(query, query_params) ?? [] };
      },
    },
    close: async () => undefined,
  };
  const app = Fastify();
  apps.push(app);
  const rt = { config, logger: opts.logger ?? createLogger('silent'), registry: createRegistry({ defaultMetrics: false }), store, writer: undefined, app } as unknown as Runtime & { app: FastifyInstance };
  await (opts.noExtra ? apiExtension() : apiExtension([]))(rt);
  await app.ready();
  return { app, queries, rt };
}

const get = async (app: FastifyInstance, url: string, headers: Record<string, string> = {}) => {
  const res = await app.inject({ method: 'GET', url, headers });
  return { status: res.statusCode, body: res.headers['content-type']?.toString().includes('json') ? res.json() : res.body, headers: res.headers };
};

/** Two collections of a day that agree, the second after its 48-hour late-billing window: the day is final. */
const agreed = (day: string) => [
  { local_day: day, collected_text: `${day} 12:00:00.000`, fingerprint: 'fp' },
  { local_day: day, collected_text: '2026-11-20 00:00:00.000', fingerprint: 'fp' },
];
const money = (n: string) => ({ machine_seconds: n, surge_machine_seconds: '0', subtotal: n, discount: '0', cost: n, surge_cost: '0', rows: 1 });

/** The store of a Berlin-collected November: day rows of app img, 11-01 final, 11-02 not. */
const november: Answer = (sql, params) => {
  if (sql.includes('DISTINCT timezone')) return [{ timezone: 'Europe/Berlin' }];
  if (sql.includes('cost_day_collections')) return params.product === 'serverless' ? agreed('2026-11-01') : [];
  if (sql.includes('FROM usage_buckets FINAL') && sql.includes('count() AS rows')) {
    if (sql.includes('AS day')) {
      return [
        { day: '2026-10-31', currency: 'USD', ...money('1') },
        { day: '2026-11-01', currency: 'USD', ...money('2') },
        { day: '2026-11-02', currency: 'USD', ...money('3') },
      ];
    }
    return [{ app: 'img', currency: 'USD', ...money('5') }, { currency: 'EUR', ...money('7') }];
  }
  if (sql.includes('FROM model_usage_buckets FINAL') && sql.includes('AS endpoint')) return [{ endpoint: 'svc-ai/flux', currency: 'USD', quantity: '4', subtotal: '0.4', discount: '0', cost: '0.4', rows: 1 }];
  return [];
};

describe('GET /cost: rows and finality', () => {
  it('by day: each day final only when its collections agreed; a day outside the range is not final', async () => {
    const { app } = await api({}, november);
    const res = await get(app, '/api/v1/cost?from=2026-11-01&to=2026-11-03&timezone=Europe/Berlin&group_by=day');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      timezone: 'Europe/Berlin',
      from: '2026-11-01',
      to: '2026-11-03',
      product: 'serverless',
      group_by: ['day'],
      final: false,
      provisional_days: ['2026-11-02'],
      rows: [
        { day: '2026-10-31', currency: 'USD', ...money('1'), rows: undefined, final: false },
        { day: '2026-11-01', currency: 'USD', ...money('2'), rows: undefined, final: true },
        { day: '2026-11-02', currency: 'USD', ...money('3'), rows: undefined, final: false },
      ].map(({ rows: _rows, ...r }) => r),
    });
  });

  it('not by day: the range\'s finality on every row; a group value the store left out is null', async () => {
    const { app } = await api({}, november);
    const one = await get(app, '/api/v1/cost?from=2026-11-01&to=2026-11-02&timezone=Europe/Berlin&group_by=app');
    expect(one.body).toMatchObject({ final: true, provisional_days: [] });
    expect(one.body.rows).toEqual([
      { app: 'img', currency: 'USD', ...money('5'), rows: undefined, final: true },
      { app: null, currency: 'EUR', ...money('7'), rows: undefined, final: true },
    ].map(({ rows: _rows, ...r }) => r));
    const two = await get(app, '/api/v1/cost?from=2026-11-01&to=2026-11-03&timezone=Europe/Berlin&group_by=app&format=csv');
    expect(String(two.body).trim().split(/\r?\n/)).toEqual([
      'app,currency,machine_seconds,surge_machine_seconds,subtotal,discount,cost,surge_cost,final',
      'img,USD,5,0,5,0,5,0,false',
      ',EUR,7,0,7,0,7,0,false',
    ]);
    expect(two.headers['content-disposition']).toBe('attachment; filename="cost.csv"');
  });

  it('model_api: its own money columns, finality of model collections, the endpoint filter and search passed on', async () => {
    const { app, queries } = await api({}, november);
    const res = await get(app, '/api/v1/cost?from=2026-11-01&to=2026-11-02&timezone=Europe/Berlin&product=model_api&group_by=endpoint&endpoint=svc-ai/flux&search=FLU');
    expect(res.body).toMatchObject({ product: 'model_api', final: false, provisional_days: ['2026-11-01'] });
    expect(res.body.rows).toEqual([{ endpoint: 'svc-ai/flux', currency: 'USD', quantity: '4', subtotal: '0.4', discount: '0', cost: '0.4', final: false }]);
    const q = queries.find((x) => x.sql.includes('FROM model_usage_buckets FINAL'));
    expect(q?.params).toMatchObject({ timezone: 'Europe/Berlin', from: '2026-11-01', to: '2026-11-02', search: 'FLU' });
    expect(JSON.stringify(q?.params)).toContain('svc-ai/flux');
    const collections = queries.filter((x) => x.sql.includes('cost_day_collections')).map((x) => x.params);
    expect(collections).toEqual([{ product: 'model_api', timezone: 'Europe/Berlin', from: '2026-11-01', to: '2026-11-02' }]);
  });

  it('serverless by default, and product=serverless asked outright; the app filter and an empty search passed on', async () => {
    const { app, queries } = await api({}, november);
    expect((await get(app, '/api/v1/cost?from=2026-11-01&to=2026-11-02&timezone=Europe/Berlin&product=serverless&app=img')).status).toBe(200);
    const q = queries.find((x) => x.sql.includes('count() AS rows'));
    expect(q?.params).toEqual({ timezone: 'Europe/Berlin', from: '2026-11-01', to: '2026-11-02', apps: ['img'], search: '' });
  });

  it('the late-billing window is LATE_BILLING_WINDOW_HOURS: a day collected twice alike inside it stays provisional', async () => {
    // 11-01 ends 11-02 00:00 in UTC; the second collection is 11-20 00:00, 18 days on: after 48 h, inside 19 days.
    const utc: Answer = (sql) => (sql.includes('cost_day_collections') ? agreed('2026-11-01') : undefined);
    expect((await get((await api({}, utc)).app, '/api/v1/cost?from=2026-11-01&to=2026-11-02')).body.final).toBe(true);
    expect((await get((await api({ LATE_BILLING_WINDOW_HOURS: String(19 * 24), USAGE_RECOLLECT_DAYS: '20' }, utc)).app, '/api/v1/cost?from=2026-11-01&to=2026-11-02')).body.final).toBe(false);
  });

  it('serverless groups and apps are not refused for serverless, nor endpoints for model_api', async () => {
    const { app } = await api({}, november);
    const base = '/api/v1/cost?from=2026-11-01&to=2026-11-02&timezone=Europe/Berlin';
    expect((await get(app, `${base}&app=img`)).status).toBe(200);
    expect((await get(app, `${base}&product=model_api&endpoint=svc-ai/flux`)).status).toBe(200);
    const two = await get(app, `${base}&product=model_api&group_by=machine_type,surge`);
    expect(two.body.error.message).toBe('group_by: machine_type, surge do not apply to product=model_api; expected a subset of endpoint, api_key, unit, day, week, month');
  });

  it('search: at most 200 characters', async () => {
    const { app } = await api({}, november);
    const base = '/api/v1/cost?from=2026-11-01&to=2026-11-02&timezone=Europe/Berlin';
    expect((await get(app, `${base}&search=${'s'.repeat(200)}`)).status).toBe(200);
    expect((await get(app, `${base}&search=${'s'.repeat(201)}`)).body.error).toMatchObject({ parameter: 'search', message: 'search: expected at most 200 characters' });
  });

  it('an unknown group names every group there is; a range too long names API_MAX_RANGE_DAYS', async () => {
    const { app } = await api({ API_MAX_RANGE_DAYS: '2' }, november);
    const bad = await get(app, '/api/v1/cost?from=2026-11-01&to=2026-11-02&group_by=nonsense');
    expect(bad.body.error).toMatchObject({
      parameter: 'group_by',
      message: 'group_by: expected one of app, environment, machine_type, surge, day, week, month, endpoint, api_key, unit',
    });
    expect((await get(app, '/api/v1/cost?from=2026-11-01&to=2026-11-04')).body.error.message).toContain('API_MAX_RANGE_DAYS');
  });
});

/** One month of serverless usage in the finance report's and the FOCUS file's queries. */
const october: Answer = (sql) => {
  if (sql.includes('GROUP BY app, machine_type, currency') && sql.includes('usage_buckets')) {
    return [{ app: 'img', machine_type: 'GPU-A100', currency: 'USD', machine_seconds: '3600', surge_machine_seconds: '0', subtotal: '3.6', discount: '0', total: '3.6' }];
  }
  if (sql.includes('percent_discount') && sql.includes('FROM usage_buckets FINAL') && sql.includes('is_surge, currency')) {
    return [{ day: '2026-10-05', app: 'img', machine_type: 'GPU-A100', is_surge: false, currency: 'USD', unit_price: '0.001', percent_discount: null, quantity: '3600', cost: '3.6' }];
  }
  return undefined;
};

describe('GET /reports/finance with data', () => {
  it('answers the month; a timezone outside TIMEZONES is answered with a warning naming it; CSV named after month and zone', async () => {
    const { app } = await api({ TIMEZONES: 'UTC' }, october);
    const utc = await get(app, '/api/v1/reports/finance?month=2026-10');
    expect(utc.status).toBe(200);
    expect(utc.body).toMatchObject({ month: '2026-10', timezone: 'UTC', warnings: [] });
    const berlin = await get(app, '/api/v1/reports/finance?month=2026-10&timezone=Europe/Berlin');
    expect(berlin.body.warnings).toEqual(['Europe/Berlin is not in TIMEZONES, so scheduled runs do not keep its usage up to date']);
    const csv = await get(app, '/api/v1/reports/finance?month=2026-10&timezone=America/Argentina/Buenos_Aires&format=csv');
    expect(csv.status).toBe(200);
    expect(csv.headers['content-disposition']).toBe('attachment; filename="finance-2026-10-America_Argentina_Buenos_Aires.csv"');
    expect(String(csv.body)).toContain('img');
  });

  it('a complete month is final once every day\'s collections agreed after LATE_BILLING_WINDOW_HOURS', async () => {
    // Every October day collected twice alike, the second on 11-20: after a 48-hour window, inside a 31-day one.
    const days = Array.from({ length: 31 }, (_, i) => `2026-10-${String(i + 1).padStart(2, '0')}`);
    const collected: Answer = (sql, params) => (sql.includes('cost_day_collections') && params.product === 'serverless' ? days.flatMap(agreed) : october(sql, params));
    const finalOf = async (env: Record<string, string>) => {
      const { app } = await api({ TIMEZONES: 'UTC', ...env }, collected);
      const body = (await get(app, '/api/v1/reports/finance?month=2026-10')).body;
      return body.rows.find((r: { app: string }) => r.app === 'img')?.final;
    };
    expect(await finalOf({})).toBe(true);
    expect(await finalOf({ LATE_BILLING_WINDOW_HOURS: String(31 * 24), USAGE_RECOLLECT_DAYS: '32' })).toBe(false);
  });

  it('a month from 2000-01 to 2100-01, written YYYY-MM and nothing around it', async () => {
    const { app } = await api();
    for (const month of ['2000-01', '2026-10']) expect((await get(app, `/api/v1/reports/finance?month=${month}`)).status, month).toBe(404);
    expect((await get(app, '/api/v1/reports/finance?month=2100-01')).body.error.parameter).toBe('month');
    expect((await get(app, '/api/v1/reports/finance?month=2100-01')).body.error.message).toMatch(/has not/);
    for (const month of ['1999-12', '2100-02']) {
      expect((await get(app, `/api/v1/reports/finance?month=${month}`)).body.error, month).toMatchObject({ parameter: 'month', message: 'month: expected a month between 2000-01 and 2100-01' });
    }
    for (const month of ['x2026-10', '2026-10x', '2026-1']) {
      expect((await get(app, `/api/v1/reports/finance?month=${month}`)).body.error, month).toMatchObject({ parameter: 'month', message: 'month: expected a month YYYY-MM' });
    }
  });
});

describe('GET /reports/focus with data', () => {
  it('CSV by default, JSON when Accept asks for it, format= over both', async () => {
    const { app } = await api({}, october);
    const csv = await get(app, '/api/v1/reports/focus?month=2026-10');
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    expect(csv.headers['content-disposition']).toBe('attachment; filename="focus-2026-10.csv"');
    expect(String(csv.body).split(/\r?\n/)[0]).toMatch(/^BilledCost,BillingAccountId,BillingAccountName,/);
    const json = await get(app, '/api/v1/reports/focus?month=2026-10', { accept: 'application/json' });
    expect(json.body.month).toBe('2026-10');
    expect(json.body.columns.slice(0, 3)).toEqual(['BilledCost', 'BillingAccountId', 'BillingAccountName']);
    expect(json.body.rows).toHaveLength(1);
    expect(json.body.rows[0]).toMatchObject({ BilledCost: '3.6', ChargePeriodStart: expect.stringMatching(/^2026-10-05/) });
    expect((await get(app, '/api/v1/reports/focus?month=2026-10&format=json')).body.month).toBe('2026-10');
    expect((await get(app, '/api/v1/reports/focus?month=2026-10&format=csv', { accept: 'application/json' })).headers['content-type']).toMatch(/^text\/csv/);
  });

  it('a month from 2000-01 to 2100-01, written YYYY-MM (10, 11 and 12 are months); a store failure is a 500, not no_data', async () => {
    const { app } = await api();
    for (const month of ['2000-01', '2026-10', '2026-12', '2100-01']) expect((await get(app, `/api/v1/reports/focus?month=${month}`)).status, month).toBe(404);
    for (const month of ['2100-02', '1999-12']) expect((await get(app, `/api/v1/reports/focus?month=${month}`)).body.error.message, month).toBe('month: expected a month between 2000-01 and 2100-01');
    for (const month of ['x2026-10', '2026-10x', '2026-13']) expect((await get(app, `/api/v1/reports/focus?month=${month}`)).body.error.message, month).toBe('month: expected a month YYYY-MM');
    const failing = await api({}, (sql) => {
      if (sql.includes('percent_discount')) throw new Error('store down');
      return undefined;
    });
    expect((await get(failing.app, '/api/v1/reports/focus?month=2026-10')).status).toBe(500);
  });
});

describe('query API: set-up', () => {
  it('without extra routes; with no API_TOKENS on loopback it says so once', async () => {
    const log = captureLog('info');
    const { app } = await api({ HOST: '127.0.0.1' }, () => [], { logger: log.logger as never, noExtra: true });
    expect((await get(app, '/api/v1/')).status).toBe(200);
    expect(log.lines.map((l) => l.msg)).toContain('query API: no API_TOKENS configured, so it answers on loopback only without a token');
    const quiet = captureLog('info');
    await api({ HOST: '127.0.0.1', API_TOKENS: 'tok-one-0123456789' }, () => [], { logger: quiet.logger as never });
    expect(quiet.lines.map((l) => l.msg)).not.toContain('query API: no API_TOKENS configured, so it answers on loopback only without a token');
  });

  it('refusing an open HOST without tokens says why', async () => {
    const err = await api({ HOST: '0.0.0.0' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain('at least one token when HOST is not a loopback address');
  });

  it('every query runs read-only under API_QUERY_TIMEOUT_SECONDS, API_QUERY_MAX_MEMORY_BYTES and API_QUERY_MAX_RESULT_ROWS', async () => {
    const { app, queries } = await api({ API_QUERY_TIMEOUT_SECONDS: '7', API_QUERY_MAX_MEMORY_BYTES: '123456789', API_QUERY_MAX_RESULT_ROWS: '4321' }, november);
    await get(app, '/api/v1/cost?from=2026-11-01&to=2026-11-02&timezone=Europe/Berlin');
    expect(queries.length).toBeGreaterThan(0);
    for (const q of queries) expect(q.settings).toMatchObject({ readonly: '2', max_execution_time: 7, max_memory_usage: '123456789', max_result_rows: '4321' });
  });

  it('the OpenAPI server is the port it listens on, not PORT, once listening', async () => {
    const { app } = await api({ HOST: '127.0.0.1', PORT: '1' });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    expect((await get(app, '/api/v1/openapi.json')).body.servers.map((x: { url: string }) => x.url)).toEqual([`http://127.0.0.1:${port}`]);
  });
  it('listening on a socket file, the OpenAPI server is HOST and PORT', async () => {
    const { app } = await api({ HOST: '127.0.0.1', PORT: '8126' });
    await app.listen({ path: join(mkdtempSync(join(tmpdir(), 'c1-sock-')), 'api.sock') });
    expect((await get(app, '/api/v1/openapi.json')).body.servers.map((x: { url: string }) => x.url)).toEqual(['http://127.0.0.1:8126']);
  });
});

describe('query API: the OpenAPI document of its routes', () => {
  it('version 1; every parameter of /cost described; the three routes summarised, described, and offered as CSV too', async () => {
    const { app } = await api();
    const doc = (await get(app, '/api/v1/openapi.json')).body;
    expect(doc.info.version).toBe('1');
    expect(doc.info.description).toContain('Money is exact decimal text');
    const cost = doc.paths['/api/v1/cost'].get;
    const described = Object.fromEntries(cost.parameters.map((p: { name: string; description?: string }) => [p.name, p.description ?? '']));
    expect(described.from).toContain('inclusive');
    expect(described.to).toContain('exclusive');
    expect(described.timezone).toContain('collected timezones');
    expect(described.product).toContain('model_api');
    expect(described.group_by).toBe('comma-separated or repeated; serverless: app, environment, machine_type, surge, day, week, month; model_api: endpoint, api_key, unit, day, week, month');
    expect(described.app).toContain('serverless');
    expect(described.endpoint).toContain('model_api');
    expect(described.search).toContain('substring');
    for (const [path, words] of [
      ['/api/v1/cost', /Cost of serverless usage/],
      ['/api/v1/reports/finance', /Monthly cost of both product lines/],
      ['/api/v1/reports/focus', /FOCUS 1\.2/],
    ] as const) {
      const op = doc.paths[path].get;
      expect(op.summary, path).toMatch(words);
      expect(op.description?.length ?? 0, path).toBeGreaterThan(100);
      expect(Object.keys(op.responses['200'].content), path).toEqual(['application/json', 'text/csv']);
    }
    expect(doc.paths['/api/v1/reports/finance'].get.description).toContain('flagged when they differ by more than 0.01');
    expect(doc.paths['/api/v1/reports/focus'].get.description).toContain('CSV by default');
    expect(doc.paths['/api/v1/cost'].get.description).toContain('never summed together');
  });
});
