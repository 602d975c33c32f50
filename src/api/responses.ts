/**
 * The JSON answers of the query API, as zod schemas: the OpenAPI document's response schemas (a client generated
 * from it gets these types). Column lists come from the table modules and route constants, so the document
 * follows the code; units are in the descriptions.
 */
import { z } from 'zod';
import { isoDay, isoInstant } from './http.js';
import { ERROR_METRICS, LATENCY_METRICS } from '../store/tables/analytics-buckets.js';
import { FoundLogLine } from '../store/tables/logs.js';

const money = (what: string) => z.string().describe(`${what}: exact decimal text, in the row's currency`);
const count = (what: string) => z.number().int().describe(what);

const LATENCY_UNITS: Record<string, string> = { count: 'requests', duration: 'seconds' };
const metricColumn = (name: string) =>
  name.endsWith('_count')
    ? z.number().int().nullable().describe(`${name} (${LATENCY_UNITS.count})`)
    : z.number().nullable().describe(`${name}, in ${LATENCY_UNITS.duration}`);

const bucketKeys = {
  endpoint_id: z.string(),
  endpoint_scope: z.string().describe('app (all its routes) or route'),
  bucket: isoInstant().describe('bucket start, ISO 8601 with the offset it had in the timezone'),
};
const range = { from: z.string(), to: z.string().describe('exclusive'), timezone: z.string(), timeframe: z.string() };

export const CostResponse = z.object({
  timezone: z.string(),
  from: isoDay().describe('first local day, inclusive'),
  to: isoDay().describe('last local day, exclusive'),
  product: z.enum(['serverless', 'model_api']),
  group_by: z.array(z.string()),
  final: z.boolean().describe('every day of the range is final: its late-billing window has passed and a re-collection after it agreed'),
  provisional_days: z.array(isoDay()).describe('the days whose cost can still change'),
  rows: z.array(
    z
      .object({
        currency: z.string().describe('ISO 4217; rows of different currencies are never summed'),
        final: z.boolean().describe("the row's figures can no longer change (its day, or every day of the range)"),
        machine_seconds: z.string().optional().describe('serverless: machine-seconds, exact decimal text'),
        surge_machine_seconds: z.string().optional().describe('serverless: machine-seconds at surge prices, exact decimal text'),
        quantity: z.string().optional().describe('model_api: units of the row (image, megapixel, second, ...), exact decimal text'),
        subtotal: money('before discounts'),
        discount: money('discounts'),
        cost: money('net cost'),
        surge_cost: money('serverless: the surge part of cost').optional(),
      })
      .catchall(
        z.union([z.string(), z.boolean()]).describe('a group-by column (app, environment, machine_type, surge, endpoint, api_key, unit, day, week, month)'),
      ),
  ),
});

const FinanceRow = z.object({
  row_type: z.enum(['item', 'subtotal', 'total']).describe('item; subtotal: a product in a currency; total: a currency, both products'),
  app: z.string(),
  machine_type: z.string(),
  currency: z.string(),
  machine_seconds: z.string().describe('machine-seconds, exact decimal text'),
  surge_machine_seconds: z.string().describe('machine-seconds, exact decimal text'),
  subtotal: money('before discounts'),
  discount: money('discounts'),
  total: money('net total'),
  platform_summary_total: money("the platform's own summary").nullable(),
  difference: money('total minus the platform summary').nullable(),
  flagged: z.boolean().describe('|difference| > 0.01, or one side missing'),
  month_complete: z.boolean().describe('false while the month is not over in the timezone'),
  product: z.enum(['serverless', 'model_api', '']).describe("the product line; '' on a currency's total row"),
  endpoint_id: z.string().describe('model rows: the model endpoint'),
  unit: z.string().describe('second for serverless; the model unit (image, megapixel, ...)'),
  quantity: z.string().describe('in unit, exact decimal text'),
  api_key: z.string().describe("model rows: the API key's label or the login"),
  final: z.boolean().describe('the row can no longer change: the month is over and every day of it is final for its product (late-billing window passed, a re-collection after it agreed)'),
});

export const FinanceResponse = z.object({
  month: z.string(),
  timezone: z.string(),
  month_complete: z.boolean(),
  month_final: z.boolean().describe('every figure of the report is final'),
  provisional_days: z.array(isoDay()).describe('days of the month whose cost can still change'),
  range: z.object({ from: isoDay(), to: isoDay() }),
  rows: z.array(FinanceRow),
  product_totals: z.array(FinanceRow).describe('per product and currency'),
  totals: z.array(FinanceRow).describe('per currency, both products'),
  reconciliation: z.object({
    summary_range: z.object({ from: z.string(), to: z.string() }).nullable(),
    summary_ranges: z.object({
      serverless: z.object({ from: z.string(), to: z.string() }).nullable(),
      model_api: z.object({ from: z.string(), to: z.string() }).nullable(),
    }),
    complete_month: z.boolean(),
    tolerance: z.string(),
    flagged: z.number().int(),
    rows: z.array(
      z.object({
        product: z.enum(['serverless', 'model_api']),
        app: z.string(),
        machine_type: z.string(),
        endpoint_id: z.string(),
        unit: z.string(),
        api_key: z.string(),
        currency: z.string(),
        daily_total: money('sum of the daily buckets'),
        summary_total: money("the platform's summary").nullable(),
        difference: money('daily minus summary').nullable(),
        flagged: z.boolean(),
      }),
    ),
  }),
  warnings: z.array(z.string()),
});

export const FocusResponse = z.object({
  month: z.string(),
  columns: z.array(z.string()).describe('FOCUS 1.2 columns, then Tallyhouse columns prefixed x_'),
  rows: z.array(z.record(z.string(), z.string().nullable()).describe('one charge: a UTC day, product, resource, SKU price and currency')),
});

export const RequestCostResponse = z.object({
  timezone: z.string(),
  from: isoDay(),
  to: isoDay(),
  source: z.string().describe('requests_daily (the rollup) or requests'),
  rows: z.array(
    z.object({
      endpoint_id: z.string(),
      day: isoDay().optional().describe('with group_by=day'),
      request_count: count('requests'),
      billed_requests: count('requests with billable units recorded'),
      unbilled_requests: count('requests whose billing is not recorded yet'),
      billable_units: z.union([z.string(), z.number()]).describe('billable units (the endpoint’s unit), exact decimal'),
      unpriced_requests: count('billed requests with no price in effect'),
      cost: money('billable units × the unit price in effect when each request ended').nullable(),
      currency: z.string().nullable(),
    }),
  ),
});

export const LatencyResponse = z.object({
  ...range,
  kind: z.string(),
  rows: z.array(z.object({ ...bucketKeys, ...Object.fromEntries(LATENCY_METRICS.map((m) => [m, metricColumn(m)])) })),
});

export const ErrorsResponse = z.object({
  ...range,
  kind: z.string(),
  rows: z.array(z.object({ ...bucketKeys, ...Object.fromEntries(ERROR_METRICS.map((m) => [m, count(`${m} (requests)`).nullable()])) })),
  webhook_errors: z.array(z.object({ error_type: z.string(), deliveries: count('failed webhook deliveries') })),
});

export const RunnersResponse = z.object({
  ...range,
  aggregation: z.enum(['max', 'avg']),
  rows: z.array(
    z.object({
      endpoint_id: z.string(),
      bucket: bucketKeys.bucket,
      running: z.number().describe('runners'),
      idle: z.number().describe('runners'),
      pending: z.number().describe('runners'),
      draining: z.number().describe('runners'),
    }),
  ),
});

export const LogsResponse = z.object({
  from: isoInstant(),
  to: isoInstant(),
  lines: z.array(FoundLogLine),
  next_cursor: z.string().nullable().describe('pass as cursor for the next page (also in the X-Next-Cursor header)'),
  has_more: z.boolean(),
});

export const SessionResponse = z.object({
  session_id: z.string(),
  items: z.array(z.looseObject({ timestamp: z.string(), kind: z.string(), message: z.string(), request_id: z.string() })).describe('Faro items in time order'),
  requests: z.array(
    z.object({
      request_id: z.string(),
      found: z.boolean().describe('false until the requests or models collector has stored it'),
      endpoint_id: z.string().nullable(),
      product: z.enum(['serverless', 'model_api']).nullable(),
      ended_at: isoInstant().nullable(),
      status_code: z.number().nullable(),
      outcome: z.enum(['success', 'user_error', 'error']).nullable(),
      duration: z.number().nullable().describe('seconds'),
      billable_units: z.string().nullable(),
      cost: money('the request cost: billable units at the unit price in effect, or the model call as billed').nullable(),
      currency: z.string().nullable(),
      log_lines: z.array(
        z.object({
          timestamp: isoInstant(),
          level: z.string(),
          message: z.string(),
          message_truncated: z.boolean().describe('the message was cut at 16,384 characters'),
        }),
      ),
      log_lines_truncated: z.boolean().describe('the request has more lines than API_SESSION_MAX_LOG_LINES; GET /logs?request_id= has them all'),
      webhook: z
        .object({
          status: z.string().describe("the delivery body's status: OK or ERROR ('' when the body had none)"),
          attempts: z.number().describe('verified deliveries received for the request (the platform repeats and retries; deliveries stored before sql/035 count once)'),
          last_error: z.string().nullable().describe("the latest delivery's error (or payload_error); null when none"),
          error_types: z.array(z.string()).describe('the request-level error types of its payload (e.g. runner_scheduling_failure)'),
          first_received_at: z.string().describe('ISO 8601 UTC'),
          last_received_at: z.string().describe('ISO 8601 UTC'),
        })
        .nullable()
        .describe("the request's queue webhook delivery as the receiver stored it; null when none is stored (not queued with a webhook, or not delivered yet)"),
    }),
  ),
  request_ids_total: z.number().describe('distinct request ids the returned items mention'),
  truncated: z
    .object({
      items: z.boolean().describe('the session has more than API_SESSION_MAX_ITEMS items: the first ones are returned'),
      requests: z.boolean().describe('the items mention more than API_SESSION_MAX_REQUESTS requests: the first mentioned are looked up'),
    })
    .describe('what was left out to keep the answer bounded'),
});

export const SessionsResponse = z.object({
  from: z.string(),
  to: z.string(),
  sessions: z.array(
    z.object({
      session_id: z.string(),
      app: z.string(),
      first_seen: z.string(),
      last_seen: z.string(),
      items: z.number(),
      exceptions: z.number(),
      requests: z.number().describe('platform requests the session mentions'),
      request_errors: z.number().describe('of those, answered 5xx'),
      cost_by_currency: z.record(z.string(), z.string()).describe('their cost per currency (never summed across currencies)'),
    }),
  ),
});
