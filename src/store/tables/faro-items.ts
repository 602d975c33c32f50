// Front-end telemetry (sql/021_create_faro_items.sql) and the session queries of GET /api/v1/sessions.
import { z } from 'zod';
import { chNumber, defineTable, namedQuery } from './table.js';
import { pricedRequestsFrom, PRICED_SETTINGS } from './requests.js';

/** The columns a Faro item is written with (JSONEachRow through the Faro spool), in table order. */
export const FARO_ITEM_COLUMNS = [
  'received_at', 'timestamp', 'kind', 'app', 'app_namespace', 'release', 'app_version', 'environment', 'session_id',
  'user_id', 'page_url', 'level', 'message', 'domain', 'values', 'attributes', 'trace_id', 'span_id', 'request_id', 'raw',
] as const;

export const FaroItemRow = z.object({
  received_at: z.string(),
  timestamp: z.string(),
  kind: z.string(),
  app: z.string(),
  app_namespace: z.string(),
  release: z.string(),
  app_version: z.string(),
  environment: z.string(),
  session_id: z.string(),
  user_id: z.string(),
  page_url: z.string(),
  level: z.string(),
  message: z.string(),
  domain: z.string(),
  values: z.record(z.string(), z.number()),
  attributes: z.record(z.string(), z.string()),
  trace_id: z.string(),
  span_id: z.string(),
  request_id: z.string(),
  raw: z.string(),
});
export type FaroItemRow = z.input<typeof FaroItemRow>;
export const faroItems = defineTable('faro_items', FaroItemRow);

/** Up to `limit` distinct request ids a session's items name: where the Faro receiver's cap per session starts. */
export const sessionRequestIds = namedQuery(
  'session_request_ids',
  `SELECT DISTINCT request_id FROM faro_items
   WHERE session_id = {session_id:String} AND request_id != ''
   LIMIT {limit:UInt32}`,
  z.object({ request_id: z.string() }),
);

const ItemOut = FaroItemRow.omit({ raw: true }).extend({ values: z.record(z.string(), z.number()), attributes: z.record(z.string(), z.string()) });

/** A session's items in time order. */
export const sessionItems = namedQuery(
  'session_items',
  `SELECT ${FARO_ITEM_COLUMNS.filter((c) => c !== 'raw').map((c) => (c === 'timestamp' || c === 'received_at' ? `toString(${c}) AS ${c}` : c)).join(', ')}
   FROM faro_items
   WHERE session_id = {session_id:String}
   ORDER BY timestamp, kind, message
   LIMIT {limit:UInt32}`,
  ItemOut,
);

/** The requests a session mentions: status, duration, billable units and serverless cost at the unit price in effect. */
export const requestsByIds = namedQuery(
  'requests_by_ids',
  `SELECT r.request_id AS request_id, r.endpoint_id AS endpoint_id, toString(r.ended_at) AS ended_at, r.status_code AS status_code,
          r.duration AS duration, toString(r.billable_units) AS billable_units, toString(r.billable_units * p.unit_price) AS cost,
          p.currency AS currency
   ${pricedRequestsFrom(['request_id', 'status_code', 'duration', 'billable_units'], 'AND has({ids:Array(String)}, request_id)')}
   ORDER BY ended_at ${PRICED_SETTINGS}`,
  z.object({
    request_id: z.string(),
    endpoint_id: z.string(),
    ended_at: z.string(),
    status_code: chNumber,
    duration: chNumber,
    billable_units: z.string().nullable(),
    cost: z.string().nullable(),
    currency: z.string().nullable(),
  }),
);

/**
 * Sessions of an app (all apps: '') in a time range: their items, exceptions, the requests they mention, how many
 * of those failed (5xx), and those requests' cost (serverless at the unit price in effect, model APIs as billed)
 * per currency. Ranked by cost (the amounts of all currencies, for the order only), then by errors.
 */
export const sessionRanking = namedQuery(
  'session_ranking',
  `WITH s AS (
     SELECT session_id, any(app) AS session_app, min(timestamp) AS first_seen, max(timestamp) AS last_seen, count() AS items,
            countIf(kind = 'exception') AS exceptions, groupUniqArrayIf(request_id, request_id != '') AS request_ids
     FROM faro_items
     WHERE timestamp >= {from:DateTime64(3, 'UTC')} AND timestamp < {to:DateTime64(3, 'UTC')}
       AND ({app:String} = '' OR app = {app:String}) AND session_id != ''
     GROUP BY session_id
   ),
   mentioned AS (SELECT session_id, arrayJoin(request_ids) AS rid FROM s),
   serverless AS (
     SELECT r.request_id AS request_id, r.status_code AS status_code, r.billable_units * p.unit_price AS cost, p.currency AS currency
     ${pricedRequestsFrom(['request_id', 'status_code', 'billable_units'], 'AND request_id IN (SELECT rid FROM mentioned)')}
   ),
   model AS (
     SELECT e.request_id AS request_id, e.cost_total AS cost, c.currency AS currency
     FROM (SELECT request_id, endpoint_id, cost_total FROM model_billing_events FINAL WHERE request_id IN (SELECT rid FROM mentioned)) AS e
     LEFT JOIN (SELECT endpoint_id, argMax(currency, observed_at) AS currency FROM model_prices GROUP BY endpoint_id) AS c
     ON c.endpoint_id = e.endpoint_id
   ),
   costs AS (
     SELECT m.session_id AS session_id, x.currency AS currency, sum(x.cost) AS cost, countIf(x.status_code >= 500) AS errors
     FROM mentioned AS m
     INNER JOIN (
       SELECT request_id, status_code, cost, currency FROM serverless WHERE cost IS NOT NULL
       UNION ALL SELECT request_id, CAST(NULL, 'Nullable(UInt16)'), cost, currency FROM model
     ) AS x ON x.request_id = m.rid
     GROUP BY session_id, currency
   ),
   per AS (
     SELECT session_id, sum(errors) AS request_errors, sum(toFloat64(cost)) AS order_cost,
            toJSONString(mapFromArrays(groupArray(ifNull(currency, '')), groupArray(toString(cost)))) AS cost_by_currency
     FROM costs GROUP BY session_id
   )
   SELECT s.session_id AS session_id, s.session_app AS app, toString(s.first_seen) AS first_seen, toString(s.last_seen) AS last_seen,
          s.items AS items, s.exceptions AS exceptions, length(s.request_ids) AS requests,
          ifNull(per.request_errors, 0) AS request_errors, ifNull(per.cost_by_currency, '{}') AS cost_by_currency
   FROM s LEFT JOIN per ON per.session_id = s.session_id
   ORDER BY ifNull(per.order_cost, 0) DESC, s.exceptions + ifNull(per.request_errors, 0) DESC, s.session_id
   LIMIT {limit:UInt32} ${PRICED_SETTINGS}`,
  z.object({
    session_id: z.string(),
    app: z.string(),
    first_seen: z.string(),
    last_seen: z.string(),
    items: chNumber,
    exceptions: chNumber,
    requests: chNumber,
    request_errors: chNumber,
    cost_by_currency: z.string().transform((t) => JSON.parse(t) as Record<string, string>),
  }),
);

/** Model-API cost of requests by id (a session's calls to model endpoints). */
export const modelRequestCosts = namedQuery(
  'model_request_costs',
  `SELECT e.request_id AS request_id, e.endpoint_id AS endpoint_id, toString(e.output_units) AS output_units,
          toString(e.cost_total) AS cost, c.currency AS currency
   FROM (SELECT request_id, endpoint_id, output_units, cost_total FROM model_billing_events FINAL WHERE has({ids:Array(String)}, request_id)) AS e
   LEFT JOIN (SELECT endpoint_id, argMax(currency, observed_at) AS currency FROM model_prices GROUP BY endpoint_id) AS c
   ON c.endpoint_id = e.endpoint_id
   SETTINGS join_use_nulls = 1`,
  z.object({ request_id: z.string(), endpoint_id: z.string(), output_units: z.string().nullable(), cost: z.string().nullable(), currency: z.string().nullable() }),
);

/**
 * The log lines of a session's requests in one query (never one per request): at most `per_request` lines of each
 * (one more is read to tell that there were more), oldest first, each message cut at `max_chars` characters.
 * Aliases differ from the column names so that WHERE and length(message) read the columns. FINAL: one row per
 * record (sql/023; the bloom filter may skip granules first, the copies of a record share its request_id).
 */
export const sessionRequestLogs = namedQuery(
  'session_request_logs',
  `SELECT request_id, toString(timestamp) AS line_time, level, substringUTF8(message, 1, {max_chars:UInt32}) AS line_message,
          lengthUTF8(message) > {max_chars:UInt32} AS message_truncated
   FROM logs FINAL
   WHERE request_id IN {ids:Array(String)}
   ORDER BY request_id, timestamp, batch_id, line
   LIMIT {per_request:UInt32} BY request_id
   SETTINGS use_skip_indexes_if_final = 1`,
  z.object({ request_id: z.string(), line_time: z.string(), level: z.string(), line_message: z.string(), message_truncated: z.union([z.boolean(), chNumber]).transform(Boolean) }),
);
