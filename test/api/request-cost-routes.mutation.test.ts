// GET /api/v1/cost/requests (src/api/request-cost-routes.ts) with no store (issue 31: the mutation score of the
// money modules): the route on a bare fastify app, a stand-in client answering the rollup checkpoint and the four
// cost queries. Checked by hand: the daily rollup is read for a zone in TIMEZONES once built (a checkpoint that is
// not 'stale'), else the requests themselves over the local days' UTC bounds; every column is in the answer.
import Fastify, { type FastifyInstance } from 'fastify';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, describe, expect, it } from 'vitest';
import { requestCostRoutes } from '../../src/api/request-cost-routes.js';
import { installErrorHandler, parseQuery } from '../../src/api/http.js';
import { RouteRegistry } from '../../src/api/routes.js';
import { requestCostByEndpoint, requestCostByEndpointDay } from '../../src/store/tables/requests.js';
import { dailyCostByEndpoint, dailyCostByEndpointDay } from '../../src/store/tables/requests-daily.js';
import { createLogger } from '../../src/log.js';
import type { Runtime } from '../../src/runtime.js';

const asked: Array<{ query: string; params: Record<string, unknown> }> = [];
let checkpoint: string | undefined;
let app: FastifyInstance;

const row = { endpoint_id: 'svc-ai/flux', request_count: '5', billed_requests: '4', unbilled_requests: '1', billable_units: '8', unpriced_requests: '0', cost: '0.2', currency: 'USD' };
const store = {
  client: {
    query: async ({ query, query_params }: { query: string; query_params: Record<string, unknown> }) => {
      const name =
        query === requestCostByEndpoint.sql ? 'requests' : query === requestCostByEndpointDay.sql ? 'requestsDay'
          : query === dailyCostByEndpoint.sql ? 'daily' : query === dailyCostByEndpointDay.sql ? 'dailyDay'
            : query.includes('FROM checkpoints') ? 'checkpoint' : '?';
      asked.push({ query: name, params: query_params });
      const rows =
        name === 'checkpoint' ? (checkpoint === undefined ? [] : [{ value: checkpoint }])
          : name === 'daily' ? [{ ...row, cost: null }]
            : name === 'dailyDay' ? [{ ...row, day_text: '2026-11-01' }]
              : name === 'requestsDay' ? [{ ...row, day: '2026-11-02' }]
                : name === 'requests' ? [row] : [];
      return { json: async () => rows };
    },
  },
};

// Built on first use inside a test, not in beforeAll: a route that fails to register then fails a test, which
// Stryker counts (a failing hook left it counting no test at all, and the mutant as survived).
let built: Promise<void> | undefined;
const ready = () => (built ??= build());
async function build(): Promise<void> {
  app = Fastify();
  const rt = { store, writer: {}, config: { TIMEZONES: ['UTC', 'Asia/Kolkata'], API_MAX_RANGE_DAYS: 31 }, logger: createLogger('silent') } as unknown as Runtime;
  installErrorHandler(app, rt);
  requestCostRoutes(app, new RouteRegistry(parseQuery), rt);
  await app.ready();
}
afterAll(async () => {
  await app?.close();
});

const get = async (query: string) => {
  await ready();
  asked.length = 0;
  const res = await app.inject({ method: 'GET', url: `/cost/requests?${query}` });
  return { res, body: String(res.headers['content-type'] ?? '').startsWith('application/json') ? res.json() : undefined };
};
// Counts are numbers in the answer (ClickHouse sends UInt64 quoted), amounts exact decimal text.
const COLUMNS = { request_count: 5, billed_requests: 4, unbilled_requests: 1, billable_units: '8', unpriced_requests: 0, currency: 'USD' };

describe('GET /cost/requests, by hand', () => {
  it('a zone in TIMEZONES with its rollup built: the rollup, per endpoint or per endpoint and day', async () => {
    checkpoint = '2026-11-20';
    const { body } = await get('from=2026-11-01&to=2026-11-03&timezone=Asia/Kolkata&endpoint_id=svc-ai/flux&endpoint_id=svc-ai/x');
    expect(body).toEqual({ timezone: 'Asia/Kolkata', from: '2026-11-01', to: '2026-11-03', source: 'rollup', rows: [{ endpoint_id: 'svc-ai/flux', ...COLUMNS, cost: null }] });
    expect(asked).toEqual([
      { query: 'checkpoint', params: { job: 'requests', key: 'rollup:Asia/Kolkata' } },
      { query: 'daily', params: { timezone: 'Asia/Kolkata', from: '2026-11-01', to: '2026-11-03', endpoint_ids: ['svc-ai/flux', 'svc-ai/x'] } },
    ]);
    const day = await get('from=2026-11-01&to=2026-11-03&group_by=day');
    expect(day.body.rows).toEqual([{ endpoint_id: 'svc-ai/flux', day: '2026-11-01', ...COLUMNS, cost: '0.2' }]);
    expect(asked.map((a) => a.query)).toEqual(['checkpoint', 'dailyDay']);
  });

  it('a stale or missing rollup, or a zone not in TIMEZONES: the requests, between the local days\' UTC bounds', async () => {
    for (const value of ['stale', undefined]) {
      checkpoint = value;
      const { body } = await get('from=2026-11-01&to=2026-11-03&timezone=Asia/Kolkata');
      expect(body.source).toBe('requests');
      expect(body.rows).toEqual([{ endpoint_id: 'svc-ai/flux', ...COLUMNS, cost: '0.2' }]);
      // Asia/Kolkata is UTC+5:30: its 1 November begins at 31 October 18:30 UTC.
      expect(asked.at(-1)).toEqual({ query: 'requests', params: { timezone: 'Asia/Kolkata', from: '2026-10-31 18:30:00.000', to: '2026-11-02 18:30:00.000', endpoint_ids: [] } });
    }
    checkpoint = '2026-11-20';
    const paris = await get('from=2026-11-01&to=2026-11-03&timezone=Europe/Paris&group_by=day');
    expect(paris.body.source).toBe('requests');
    expect(paris.body.rows).toEqual([{ endpoint_id: 'svc-ai/flux', day: '2026-11-02', ...COLUMNS, cost: '0.2' }]);
    expect(asked.map((a) => a.query)).toEqual(['requestsDay']);
    expect(asked[0].params).toMatchObject({ from: '2026-10-31 23:00:00.000', to: '2026-11-02 23:00:00.000' });
  });

  it('CSV with the same columns', async () => {
    checkpoint = undefined;
    const { res } = await get('from=2026-11-01&to=2026-11-03&format=csv');
    expect(res.headers['content-disposition']).toBe('attachment; filename="request-cost.csv"');
    expect(parseCsv(res.body)).toEqual([
      ['endpoint_id', 'request_count', 'billed_requests', 'unbilled_requests', 'billable_units', 'unpriced_requests', 'cost', 'currency'],
      ['svc-ai/flux', '5', '4', '1', '8', '0', '0.2', 'USD'],
    ]);
  });

  it('bad parameters are a 400 naming them', async () => {
    const error = async (query: string) => {
      const { res } = await get(query);
      return [res.statusCode, res.json().error.parameter, res.json().error.message];
    };
    expect(await error('from=2026-11-01&to=2026-11-03&timezone=Mars/Base')).toEqual([400, 'timezone', 'timezone: expected an IANA time zone such as UTC or America/New_York']);
    expect(await error('from=2026-11-01&to=2026-11-01')).toEqual([400, 'to', 'to: expected a date after from (2026-11-01); to is exclusive']);
    expect(await error('from=2026-01-01&to=2026-03-01')).toEqual([400, 'to', 'to: expected a range of at most 31 days (API_MAX_RANGE_DAYS); this one spans 59']);
    // The messages name which date and what group_by takes.
    expect(await error('from=2026-11-1&to=2026-11-03')).toEqual([400, 'from', 'from: expected a date YYYY-MM-DD (first local day, inclusive)']);
    expect(await error('from=2026-11-01&to=tomorrow')).toEqual([400, 'to', 'to: expected a date YYYY-MM-DD (last local day, exclusive)']);
    expect((await error('from=2026-11-01&to=2026-11-03&group_by=week')).slice(0, 2)).toEqual([400, 'group_by']);
    expect(asked).toEqual([]);
  });
});
