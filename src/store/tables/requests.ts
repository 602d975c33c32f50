import { z } from 'zod';
import { chDecimal, chNumber, decimalText, defineTable, namedQuery } from './table.js';

/**
 * One serverless request (sql/007_create_requests.sql). `duration` is Float64 seconds, not a Decimal: it is a
 * measurement that feeds percentiles and averages (float arithmetic either way), the platform sends it as a
 * JSON double that a Float64 stores exactly, and no money is ever computed from it — what is billed is
 * `billable_units`, which is a Decimal.
 */
export const RequestRow = z.object({
  request_id: z.string(),
  gateway_request_id: z.string().nullable(),
  endpoint_id: z.string(),
  started_at: z.string().nullable(), // DateTime64(3) UTC text
  sent_at: z.string().nullable(),
  ended_at: z.string(),
  status_code: z.number().int().min(0).max(65535),
  duration: z.number(), // seconds
  runner_id: z.string().nullable(),
  billable_units: decimalText.nullable(),
  raw: z.string(),
  version: z.number().int().nonnegative(),
  collected_at: z.string(),
});
export type RequestRow = z.input<typeof RequestRow>;

export const requests = defineTable('requests', RequestRow);

/** Decimals `billable_units` keeps (Decimal(38, 9)): values are rounded to these before they are written. */
export const BILLABLE_UNITS_SCALE = 9;

/** Added to the version of a copy that carries billable units: it outranks every copy without. */
export const BILLED_VERSION_BIT = 2 ** 52;

/** The version of a collected copy: billed copies always win, then the latest collection. */
export function requestVersion(billed: boolean, collectedAtMs: number): number {
  if (!Number.isSafeInteger(collectedAtMs) || collectedAtMs < 0 || collectedAtMs >= BILLED_VERSION_BIT) {
    throw new RangeError(`collection time out of range: ${collectedAtMs}`);
  }
  return (billed ? BILLED_VERSION_BIT : 0) + collectedAtMs;
}

// ---- cost (GET /cost/requests) -------------------------------------------------------------------

/**
 * Parameters of the cost queries. `from`/`to` are DateTime64(3) UTC text ('YYYY-MM-DD HH:MM:SS.mmm', see
 * toDateTime64), `to` exclusive, on `ended_at`; `endpoint_ids` empty = every endpoint; `timezone` is the IANA
 * zone whose calendar days `day` is in (the by-day query only).
 */
export interface RequestCostParams extends Record<string, unknown> {
  from: string;
  to: string;
  endpoint_ids: string[];
  timezone: string;
}

/** Cost of requests per endpoint (and day): also the row shape of the requests_daily rollup queries. */
export const CostRow = z.object({
  endpoint_id: z.string(),
  request_count: chNumber,
  /** Requests whose billable units are known. */
  billed_requests: chNumber,
  /** Requests the platform has not billed yet (billable_units NULL): their cost is not in `cost` yet. */
  unbilled_requests: chNumber,
  /** Sum of the known billable units, exact decimal text ('0' when none). */
  billable_units: chDecimal,
  /** Billed requests with no price in effect when they ended: their cost is not in `cost`. */
  unpriced_requests: chNumber,
  /** Sum of billable_units x unit price in effect at ended_at, exact decimal text; null when nothing was priced. */
  cost: chDecimal.nullable(),
  /** The prices' currency; null when nothing was priced. */
  currency: z.string().nullable(),
});

// Every cost figure, raw or rolled up (requests_daily), is computed from the same two fragments, so the rollup
// and the raw path of GET /cost/requests give identical numbers.
//
// FINAL resolves the copies of each request (billed wins, see requestVersion); the WHERE is on sorting-key
// columns, so ClickHouse applies it before the FINAL merge and reads only the granules of the range.
// ASOF LEFT JOIN picks, per request, the endpoint's price with the latest effective_from <= ended_at: the price
// in effect when the request ended. join_use_nulls (PRICED_SETTINGS) makes "no price" NULL rather than a zero price.

const ENDPOINT_FILTER = '(length({endpoint_ids:Array(String)}) = 0 OR has({endpoint_ids:Array(String)}, endpoint_id))';

/**
 * `FROM` requests `r` (FINAL, ended_at in [{from}, {to}), endpoints in {endpoint_ids}, empty = all) with the unit
 * price `p` in effect when each ended. `columns`: the request columns `r` carries (endpoint_id and ended_at
 * always); `tail`: what follows the requests' WHERE (ORDER BY, LIMIT). End the query with PRICED_SETTINGS.
 */
export function pricedRequestsFrom(columns: readonly string[], tail = ''): string {
  return `FROM
     (
       SELECT ${['endpoint_id', 'ended_at', ...columns].join(', ')}
       FROM requests FINAL
       WHERE ended_at >= {from:DateTime64(3, 'UTC')} AND ended_at < {to:DateTime64(3, 'UTC')}
         AND ${ENDPOINT_FILTER}${tail ? `\n       ${tail}` : ''}
     ) AS r
     ASOF LEFT JOIN
     (
       SELECT endpoint_id, effective_from, unit_price, currency
       FROM unit_prices FINAL
       WHERE ${ENDPOINT_FILTER}
     ) AS p
     ON r.endpoint_id = p.endpoint_id AND r.ended_at >= p.effective_from`;
}

export const PRICED_SETTINGS = 'SETTINGS join_use_nulls = 1';

/**
 * The cost aggregates over pricedRequestsFrom, in CostRow's order (request_count ... currency). `text`: decimals
 * as exact text, for reads; `typed`: as Decimal values, for the rollup's INSERT.
 */
export function costAggregates(decimals: 'text' | 'typed'): string {
  const dec = (expr: string) => (decimals === 'text' ? `toString(${expr})` : expr);
  return [
    'count() AS request_count',
    'countIf(r.billable_units IS NOT NULL) AS billed_requests',
    'countIf(r.billable_units IS NULL) AS unbilled_requests',
    `${dec('ifNull(sum(r.billable_units), 0)')} AS billable_units`,
    'countIf(r.billable_units IS NOT NULL AND p.unit_price IS NULL) AS unpriced_requests',
    `${dec('sum(r.billable_units * p.unit_price)')} AS cost`,
    'any(p.currency) AS currency',
  ].join(',\n       ');
}

// One template for both groupings (CONTRIBUTING.md: one query with a parameter, not near-identical copies). The
// grouping is chosen from this allow-list, never from caller text.
const COST_GROUPINGS = {
  endpoint: { select: '', groupBy: 'endpoint_id' },
  endpoint_day: { select: 'toString(toDate(r.ended_at, {timezone:String})) AS day,', groupBy: 'endpoint_id, day' },
} as const;

function costSql(grouping: keyof typeof COST_GROUPINGS): string {
  const g = COST_GROUPINGS[grouping];
  return `SELECT
       r.endpoint_id AS endpoint_id,
       ${g.select}
       ${costAggregates('text')}
     ${pricedRequestsFrom(['billable_units'])}
     GROUP BY ${g.groupBy}
     ORDER BY ${g.groupBy}
     ${PRICED_SETTINGS}`;
}

/** Per endpoint over the range: request count, billable units, cost at the prices in effect, unbilled count. */
export const requestCostByEndpoint = namedQuery<RequestCostParams, typeof CostRow>(
  'request_cost_by_endpoint',
  costSql('endpoint'),
  CostRow,
);

const CostDayRow = CostRow.extend({ day: z.string() /* YYYY-MM-DD in `timezone` */ });

/** As requestCostByEndpoint, per endpoint and calendar day (in `timezone`) of ended_at. */
export const requestCostByEndpointDay = namedQuery<RequestCostParams, typeof CostDayRow>(
  'request_cost_by_endpoint_day',
  costSql('endpoint_day'),
  CostDayRow,
);

/** Parameters of requestCosts: as the cost queries (no timezone), plus the most rows to return. */
export interface RequestCostListParams extends Record<string, unknown> {
  from: string;
  to: string;
  endpoint_ids: string[];
  limit: number;
}

const RequestCostRow = z.object({
  request_id: z.string(),
  endpoint_id: z.string(),
  ended_at: z.string(), // DateTime64(3) UTC text
  status_code: chNumber,
  billable_units: chDecimal.nullable(),
  unit_price: chDecimal.nullable(),
  currency: z.string().nullable(),
  cost: chDecimal.nullable(),
});

/**
 * Per request (drill-down): billable units, the price in effect when it ended and its cost, in key order
 * (endpoint_id, ended_at, request_id). `unit_price`/`cost` are null without a price, `cost` also while unbilled.
 */
export const requestCosts = namedQuery<RequestCostListParams, typeof RequestCostRow>(
  'request_costs',
  `SELECT
     r.request_id AS request_id,
     r.endpoint_id AS endpoint_id,
     toString(r.ended_at) AS ended_at,
     r.status_code AS status_code,
     toString(r.billable_units) AS billable_units,
     toString(p.unit_price) AS unit_price,
     p.currency AS currency,
     toString(r.billable_units * p.unit_price) AS cost
   ${pricedRequestsFrom(['request_id', 'status_code', 'billable_units'], 'ORDER BY endpoint_id, ended_at, request_id\n       LIMIT {limit:UInt32}')}
   ORDER BY endpoint_id, r.ended_at, request_id
   ${PRICED_SETTINGS}`,
  RequestCostRow,
);

// ---- late billing (issue 50.3) -------------------------------------------------------------------

const UnbilledSpanRow = z.object({
  endpoint_id: z.string(),
  /** DateTime64(3) UTC text: the first and last ended_at of the endpoint-day's unbilled requests. */
  first: z.string(),
  last: z.string(),
  unbilled: chNumber,
});

/**
 * The requests still unbilled (billable_units NULL in their best copy) that ended in [{from}, {to}), as one span
 * per endpoint and UTC day: what the re-check of late billing fetches again. The filter on billable_units sits
 * outside the FINAL subquery, so it sees each request's best copy, not a stale unbilled one.
 */
export const unbilledRequestSpans = namedQuery<{ from: string; to: string }, typeof UnbilledSpanRow>(
  'unbilled_request_spans',
  `SELECT endpoint_id, toString(min(ended_at)) AS first, toString(max(ended_at)) AS last, count() AS unbilled
   FROM
   (
     SELECT endpoint_id, ended_at, billable_units
     FROM requests FINAL
     WHERE ended_at >= {from:DateTime64(3, 'UTC')} AND ended_at < {to:DateTime64(3, 'UTC')}
   )
   WHERE billable_units IS NULL
   GROUP BY endpoint_id, toDate(ended_at)
   ORDER BY endpoint_id, first`,
  UnbilledSpanRow,
);

const UnbilledSummaryRow = z.object({
  unbilled: chNumber,
  /** DateTime64(3) UTC text of the oldest unbilled request's ended_at; null when none. */
  oldest_ended_at: z.string().nullable(),
});

/** How many requests that ended in [{after}, {before}) are still unbilled, and when the oldest of them ended. */
export const unbilledRequestsSummary = namedQuery<{ after: string; before: string }, typeof UnbilledSummaryRow>(
  'unbilled_requests_summary',
  `SELECT count() AS unbilled, if(count() = 0, NULL, toString(min(ended_at))) AS oldest_ended_at
   FROM
   (
     SELECT ended_at, billable_units
     FROM requests FINAL
     WHERE ended_at >= {after:DateTime64(3, 'UTC')} AND ended_at < {before:DateTime64(3, 'UTC')}
   )
   WHERE billable_units IS NULL`,
  UnbilledSummaryRow,
);
