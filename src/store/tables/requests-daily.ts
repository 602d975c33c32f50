import { z } from 'zod';
import { DateTime } from 'luxon';
import type { Store } from '../client.js';
import { defineTable, namedQuery, chNumber } from './table.js';
import { CostRow, costAggregates, PRICED_SETTINGS, pricedRequestsFrom } from './requests.js';
import { nextVersionMs, toDateTime64 } from '../../values.js';

export const RequestsDailyRow = z.object({
  timezone: z.string(),
  endpoint_id: z.string(),
  day: z.string(),
  request_count: z.number().int(),
  billed_requests: z.number().int(),
  unbilled_requests: z.number().int(),
  billable_units: z.string(),
  unpriced_requests: z.number().int(),
  cost: z.string().nullable(),
  currency: z.string().nullable(),
  version: z.number().int(),
  computed_at: z.string(),
});

export const requestsDaily = defineTable('requests_daily', RequestsDailyRow);

/**
 * Recomputes the local days of `timezone` that overlap [from, to) from `requests` FINAL and the prices in
 * effect (every endpoint, with the cost queries' own fragments from requests.ts), server-side: INSERT ... SELECT.
 * Whole days only, so each stored row covers its day completely.
 */
export async function refreshRequestDays(store: Pick<Store, 'client'>, timezone: string, from: Date, to: Date): Promise<void> {
  const dayStart = DateTime.fromJSDate(from, { zone: timezone }).startOf('day');
  const dayEnd = DateTime.fromJSDate(new Date(Math.max(to.getTime() - 1, from.getTime())), { zone: timezone }).startOf('day').plus({ days: 1 });
  const version = nextVersionMs();
  await store.client.command({
    query: `INSERT INTO requests_daily (timezone, endpoint_id, day, request_count, billed_requests, unbilled_requests,
                                        billable_units, unpriced_requests, cost, currency, version, computed_at)
      SELECT {timezone:String}, r.endpoint_id, toDate(r.ended_at, {timezone:String}) AS local_day,
       ${costAggregates('typed')},
       {version:UInt64}, now64(3)
      ${pricedRequestsFrom(['billable_units'])}
      GROUP BY r.endpoint_id, local_day
      ${PRICED_SETTINGS}`,
    query_params: {
      timezone,
      from: toDateTime64(dayStart.toJSDate()),
      to: toDateTime64(dayEnd.toJSDate()),
      endpoint_ids: [],
      version,
    },
  });
}

/** The first and last `ended_at` stored: the range a full rebuild covers. */
export const requestsExtent = namedQuery(
  'requests_extent',
  `SELECT toString(min(ended_at)) AS first, toString(max(ended_at)) AS last, count() AS n FROM requests`,
  z.object({ first: z.string(), last: z.string(), n: chNumber }),
);

const DailyCostRow = CostRow;

const GROUPINGS = { endpoint: 'endpoint_id', endpoint_day: 'endpoint_id, day' } as const;

function dailySql(grouping: keyof typeof GROUPINGS): string {
  return `SELECT endpoint_id, ${grouping === 'endpoint_day' ? 'toString(day) AS day_text,' : ''}
            sum(request_count) AS request_count, sum(billed_requests) AS billed_requests,
            sum(unbilled_requests) AS unbilled_requests, toString(sum(billable_units)) AS billable_units,
            sum(unpriced_requests) AS unpriced_requests, toString(sum(cost)) AS cost, any(currency) AS currency
     FROM requests_daily FINAL
     WHERE timezone = {timezone:String} AND day >= {from:Date} AND day < {to:Date}
       AND (length({endpoint_ids:Array(String)}) = 0 OR has({endpoint_ids:Array(String)}, endpoint_id))
     GROUP BY ${GROUPINGS[grouping].replace('day', 'day_text')}
     ORDER BY ${GROUPINGS[grouping].replace('day', 'day_text')}`;
}

export interface DailyCostParams extends Record<string, unknown> {
  timezone: string;
  from: string; // local date, inclusive
  to: string; // local date, exclusive
  endpoint_ids: string[];
}

/** Per endpoint over whole local days, from the rollup. */
export const dailyCostByEndpoint = namedQuery<DailyCostParams, typeof DailyCostRow>('daily_request_cost_by_endpoint', dailySql('endpoint'), DailyCostRow);

const DailyCostDayRow = DailyCostRow.extend({ day_text: z.string() });
/** Per endpoint and local day, from the rollup. */
export const dailyCostByEndpointDay = namedQuery<DailyCostParams, typeof DailyCostDayRow>(
  'daily_request_cost_by_endpoint_day',
  dailySql('endpoint_day'),
  DailyCostDayRow,
);
