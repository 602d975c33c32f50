import type { FastifyInstance } from 'fastify';
import { DateTime, IANAZone } from 'luxon';
import { z } from 'zod';
import type { Runtime } from '../runtime.js';
import { Checkpoints } from '../store/tables/checkpoints.js';
import { requestCostByEndpoint, requestCostByEndpointDay } from '../store/tables/requests.js';
import { dailyCostByEndpoint, dailyCostByEndpointDay } from '../store/tables/requests-daily.js';
import { toDateTime64 } from '../values.js';
import { rollupReady } from '../collectors/requests-rollup.js';
import { badParameter, checkRangeDays, dateParam, formatParam, listParam, sendTable } from './http.js';
import type { RouteRegistry } from './routes.js';
import { RequestCostResponse } from './responses.js';

const COLUMNS = ['request_count', 'billed_requests', 'unbilled_requests', 'billable_units', 'unpriced_requests', 'cost', 'currency'] as const;

const Query = z.strictObject({
  from: dateParam('first local day, inclusive'),
  to: dateParam('last local day, exclusive'),
  timezone: z.string().default('UTC').describe('IANA zone of the days'),
  endpoint_id: listParam().describe('only these endpoint ids (repeatable)'),
  group_by: listParam()
    .pipe(z.array(z.enum(['day'], { error: 'expected day (or nothing: one row per endpoint)' })))
    .describe('day: one row per endpoint and day'),
  format: formatParam,
});

/**
 * GET /cost/requests: per endpoint (and day) the requests, their billable units, their cost at the unit prices
 * in effect when each ended, and how many are still unbilled, so a reader sees how complete the figure is. Read
 * from the daily rollup for zones in TIMEZONES once it is built, else from the requests themselves.
 */
export function requestCostRoutes(app: FastifyInstance, registry: RouteRegistry, rt: Runtime): void {
  const checkpoints = new Checkpoints(rt.store, rt.writer);
  registry.get(app, {
    path: '/cost/requests',
    operationId: 'getRequestCost',
    response: RequestCostResponse,
    summary: 'Requests, billable units, cost from unit_prices and unbilled requests per endpoint (and day)',
    description:
      'cost covers billed requests with a price in effect; unbilled_requests (billing not recorded yet) and unpriced_requests (no price) say what it does not include yet.',
    query: Query,
    csv: true,
    handler: async (q, request, reply) => {
      if (!IANAZone.isValidZone(q.timezone)) throw badParameter('timezone', 'expected an IANA time zone such as UTC or America/New_York');
      if (q.to <= q.from) throw badParameter('to', `expected a date after from (${q.from}); to is exclusive`);
      checkRangeDays((Date.parse(q.to) - Date.parse(q.from)) / 86_400_000, rt.config.API_MAX_RANGE_DAYS, 'API_MAX_RANGE_DAYS');
      const byDay = q.group_by.includes('day');
      let source: 'rollup' | 'requests';
      let rows: Array<Record<string, unknown>>;
      if (rt.config.TIMEZONES.includes(q.timezone) && (await rollupReady({ checkpoints }, q.timezone))) {
        source = 'rollup';
        const params = { timezone: q.timezone, from: q.from, to: q.to, endpoint_ids: q.endpoint_id };
        rows = byDay
          ? (await dailyCostByEndpointDay(rt.store, params)).map(({ day_text, ...r }) => ({ ...r, day: day_text }))
          : await dailyCostByEndpoint(rt.store, params);
      } else {
        source = 'requests';
        const params = {
          timezone: q.timezone,
          from: toDateTime64(DateTime.fromISO(q.from, { zone: q.timezone }).toJSDate()),
          to: toDateTime64(DateTime.fromISO(q.to, { zone: q.timezone }).toJSDate()),
          endpoint_ids: q.endpoint_id,
        };
        rows = byDay ? await requestCostByEndpointDay(rt.store, params) : await requestCostByEndpoint(rt.store, params);
      }
      const columns = ['endpoint_id', ...(byDay ? ['day'] : []), ...COLUMNS];
      const table = { columns, rows: rows.map((r) => Object.fromEntries(columns.map((c) => [c, (r[c] ?? null) as string | number | null]))) };
      return sendTable(reply, request, q.format, table, () => ({ timezone: q.timezone, from: q.from, to: q.to, source, rows: table.rows }), 'request-cost.csv');
    },
  });
}
