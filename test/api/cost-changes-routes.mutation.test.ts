// GET /api/v1/cost/changes (src/api/cost-changes-routes.ts) with no store (issue 31: the mutation score of the money
// modules): the route on a bare fastify app, a stand-in client answering the line and day-collection queries.
// Checked by hand: the default baseline is the period of the same length just before `from`; group_by defaults
// to app,endpoint and repeats count once; limit keeps the top movers; bad ranges are a 400 naming the parameter.
import Fastify, { type FastifyInstance } from 'fastify';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, describe, expect, it } from 'vitest';
import { costChangeRoutes } from '../../src/api/cost-changes-routes.js';
import { badParameter, installErrorHandler, parseQuery } from '../../src/api/http.js';
import { RouteRegistry } from '../../src/api/routes.js';
import { collectedDays, dayCollections } from '../../src/store/tables/cost-day-collections.js';
import { createLogger } from '../../src/log.js';
import type { Runtime } from '../../src/runtime.js';

const asked: Array<{ query: string; params: Record<string, unknown> }> = [];
const timezones: string[] = [];
const config = { API_MAX_RANGE_DAYS: 31, LATE_BILLING_WINDOW_HOURS: 48 };
let app: FastifyInstance;

// October 30-31 against November 1-2: acme/a 10 s for 1 -> 20 s for 2 (+1); acme/b 1 -> 3 (+2); acme/c 5 -> 4.5 (-0.5).
const line = (app: string, quantity: string, subtotal: string) => ({ g_app: app, app, machine_type: 'CPU', is_surge: false, currency: 'USD', quantity, subtotal, discount: '0' });
const store = {
  client: {
    query: async ({ query, query_params }: { query: string; query_params: Record<string, unknown> }) => {
      const name = query === collectedDays.sql ? 'spans' : query === dayCollections.sql ? 'collections' : query.includes('FROM model_usage_buckets') ? 'model' : 'serverless';
      asked.push({ query: name, params: query_params });
      let rows: unknown[] = [];
      if (name === 'spans') {
        // Coverage: every day of every range read whole on Nov 11 (issue 45.1).
        for (let d = Date.parse(`${String(query_params.from)}T00:00:00Z`); d < Date.parse(`${String(query_params.to)}T00:00:00Z`); d += 86_400_000) {
          rows.push({ local_day: new Date(d).toISOString().slice(0, 10), collected_ms: Date.parse('2026-11-11T00:00:00Z') });
        }
      } else if (name === 'serverless') {
        rows = query_params.from === '2026-10-30'
          ? [line('acme/a', '10', '1'), line('acme/b', '1', '1'), line('acme/c', '5', '5')]
          : [line('acme/a', '20', '2'), line('acme/b', '3', '3'), line('acme/c', '4.5', '4.5')];
      } else if (name === 'collections' && query_params.from === '2026-10-30') {
        rows = ['2026-10-30', '2026-10-31'].flatMap((day) => [
          { local_day: day, collected_text: '2026-11-10 00:00:00.000', fingerprint: 'f' },
          { local_day: day, collected_text: '2026-11-11 00:00:00.000', fingerprint: 'f' },
        ]);
      }
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
  const rt = { store, config, logger: createLogger('silent'), now: () => new Date('2026-11-11T00:00:00Z') } as unknown as Runtime;
  installErrorHandler(app, rt);
  const registry = new RouteRegistry(parseQuery);
  costChangeRoutes(app, registry, rt, async (_rt, tz) => {
    timezones.push(tz);
    if (tz !== 'UTC') throw badParameter('timezone', 'expected one of the collected timezones: UTC');
  });
  await app.ready();
}
afterAll(async () => {
  await app?.close();
});

const get = async (query: string) => {
  await ready();
  asked.length = 0;
  return app.inject({ method: 'GET', url: `/cost/changes?${query}` });
};

describe('GET /cost/changes, by hand', () => {
  it('the default baseline is the period of the same length just before from; default groups app and endpoint', async () => {
    const res = await get('from=2026-11-01&to=2026-11-03');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect([body.timezone, body.from, body.to, body.baseline_from, body.baseline_to, body.product, body.group_by]).toEqual([
      'UTC', '2026-11-01', '2026-11-03', '2026-10-30', '2026-11-01', 'all', ['app', 'endpoint'],
    ]);
    expect(body.groups.map((g: { group: Record<string, string>; difference: string }) => [g.group.app, g.difference])).toEqual([['acme/b', '2'], ['acme/a', '1'], ['acme/c', '-0.5']]);
    expect(body.totals).toEqual([{ currency: 'USD', baseline: '7', current: '9.5', difference: '2.5', volume: '2.5', price: '0', discount: '0', new: '0', gone: '0', not_collected: '0', baseline_per_day: '3.5', current_per_day: '4.75' }]);
    // October's two days are final under the 48-hour window (collections of 10 and 11 November agree).
    expect(body.final).toEqual({ baseline: true, current: false, provisional_days: ['2026-11-01', '2026-11-02'] });
    expect(asked.filter((a) => a.query === 'serverless').map((a) => [a.params.from, a.params.to])).toEqual([['2026-10-30', '2026-11-01'], ['2026-11-01', '2026-11-03']]);
    expect(timezones.at(-1)).toBe('UTC');
  });

  it('LATE_BILLING_WINDOW_HOURS decides finality: 400 hours after 31 October is 17 November, after the collections', async () => {
    config.LATE_BILLING_WINDOW_HOURS = 400;
    try {
      expect((await get('from=2026-11-01&to=2026-11-03')).json().final.baseline).toBe(false);
    } finally {
      config.LATE_BILLING_WINDOW_HOURS = 48;
    }
  });

  it('a baseline given by its ends; group_by once per key; product and limit', async () => {
    const res = await get('from=2026-11-01&to=2026-11-03&baseline_from=2026-10-30&baseline_to=2026-11-01&group_by=app,app&product=serverless&limit=2');
    const body = res.json();
    expect(body.group_by).toEqual(['app']);
    expect(body.product).toBe('serverless');
    expect(body.groups.map((g: { group: Record<string, string> }) => g.group.app)).toEqual(['acme/b', 'acme/a']);
    expect(body.totals[0].difference).toBe('2.5'); // totals cover every group
    expect(asked.some((a) => a.query === 'model')).toBe(false);
    // baseline_from alone: baseline_to is from.
    const only = (await get('from=2026-11-01&to=2026-11-03&baseline_from=2026-10-30')).json();
    expect([only.baseline_from, only.baseline_to]).toEqual(['2026-10-30', '2026-11-01']);
    // baseline_to alone: the baseline is as long as the period, ending there.
    const end = (await get('from=2026-11-01&to=2026-11-03&baseline_to=2026-10-20')).json();
    expect([end.baseline_from, end.baseline_to]).toEqual(['2026-10-18', '2026-10-20']);
  });

  it('CSV: a row per group and a total, named after the period; limit applies to the groups', async () => {
    const res = await get('from=2026-11-01&to=2026-11-03&format=csv&limit=1');
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    expect(res.headers['content-disposition']).toBe('attachment; filename="cost-changes-2026-11-01-2026-11-03.csv"');
    const rows = parseCsv(res.body, { columns: true }) as Array<Record<string, string>>;
    expect(rows.map((r) => [r.row_type, r.rank, r.app, r.difference])).toEqual([['group', '1', 'acme/b', '2'], ['total', '', '', '2.5']]);
  });

  it('bad ranges and timezones are a 400 naming the parameter', async () => {
    const error = async (query: string) => {
      const res = await get(query);
      return [res.statusCode, res.json().error.parameter, res.json().error.message];
    };
    expect(await error('from=2026-11-03&to=2026-11-01')).toEqual([400, 'to', 'to: expected a date after from (2026-11-03); to is exclusive']);
    expect(await error('from=2026-11-01&to=2026-11-01')).toEqual([400, 'to', 'to: expected a date after from (2026-11-01); to is exclusive']);
    expect(await error('from=2026-01-01&to=2026-03-01')).toEqual([400, 'to', 'to: expected a range of at most 31 days (API_MAX_RANGE_DAYS); this one spans 59']);
    expect(await error('from=2026-11-01&to=2026-11-03&baseline_from=2026-10-30&baseline_to=2026-10-30')).toEqual([
      400, 'baseline_to', 'baseline_to: expected a date after baseline_from (2026-10-30); baseline_to is exclusive',
    ]);
    expect(await error('from=2026-11-01&to=2026-11-03&baseline_from=2026-08-01&baseline_to=2026-10-01')).toEqual([
      400, 'to', 'to: expected a range of at most 31 days (API_MAX_RANGE_DAYS); this one spans 61',
    ]);
    expect(await error('from=2026-11-01&to=2026-11-03&timezone=Europe/Paris')).toEqual([400, 'timezone', 'timezone: expected one of the collected timezones: UTC']);
    expect(timezones.at(-1)).toBe('Europe/Paris');
    // A bad date names which one.
    expect(await error('from=2026-11-1&to=2026-11-03')).toEqual([400, 'from', 'from: expected a date YYYY-MM-DD (current period: first local day, inclusive)']);
    expect(await error('from=2026-11-01&to=3')).toEqual([400, 'to', 'to: expected a date YYYY-MM-DD (current period: last local day, exclusive)']);
    expect((await error('from=2026-11-01&to=2026-11-03&baseline_from=x'))[2]).toMatch(/^baseline_from: expected a date YYYY-MM-DD \(baseline: first local day/);
    expect((await error('from=2026-11-01&to=2026-11-03&baseline_to=x'))[2]).toMatch(/^baseline_to: expected a date YYYY-MM-DD \(baseline: last local day, exclusive/);
    // Each product by name.
    for (const product of ['all', 'serverless', 'model_api']) expect((await get(`from=2026-11-01&to=2026-11-03&product=${product}`)).json().product).toBe(product);
    // 31 days is within the limit.
    expect((await get('from=2026-10-01&to=2026-11-01')).statusCode).toBe(200);
  });
});
