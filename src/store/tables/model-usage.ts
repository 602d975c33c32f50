// Model-API usage, catalogue, prices and billing events (sql/019, sql/020), and the queries the finance report,
// the cost API and the FOCUS export read them with.
import { z } from 'zod';
import { chDecimal, chNumber, decimalText, defineTable, namedQuery } from './table.js';
import type { Store } from '../client.js';

/** Decimals the value columns keep: values are rounded to these before they are written. */
export const MODEL_SCALES = { quantity: 9, unit_price: 12, percent_discount: 4, cost: 12 } as const;

const modelValueColumns = {
  endpoint_id: z.string(),
  unit: z.string(),
  currency: z.string(),
  api_key_id: z.string(),
  login_username: z.string(),
  api_key_label: z.string(),
  price_key: z.string(),
  unit_price: decimalText.nullable(),
  percent_discount: decimalText.nullable(),
  quantity: decimalText,
  cost_subtotal: decimalText.nullable(),
  cost_discount: decimalText.nullable(),
  cost_total: decimalText,
  platform_rows: z.number().int().nonnegative(),
  raw: z.string(),
  version: z.number().int().nonnegative(),
  is_deleted: z.union([z.literal(0), z.literal(1)]),
  collected_at: z.string(),
};

export const ModelUsageBucketRow = z.object({
  timezone: z.string(),
  timeframe: z.string(),
  bucket: z.string(),
  bucket_offset_minutes: z.number().int(),
  bucket_date: z.string(),
  ...modelValueColumns,
});
export type ModelUsageBucketRow = z.input<typeof ModelUsageBucketRow>;
export const modelUsageBuckets = defineTable('model_usage_buckets', ModelUsageBucketRow);

export const ModelUsageSummaryRow = z.object({
  timezone: z.string(),
  range_start: z.string(),
  range_end: z.string(),
  ...modelValueColumns,
});
export type ModelUsageSummaryRow = z.input<typeof ModelUsageSummaryRow>;
export const modelUsageSummaries = defineTable('model_usage_summaries', ModelUsageSummaryRow);

/** What identifies a model usage row within its bucket (or summary range): what a re-collection replaces. */
export const ModelRowKey = z.object({
  endpoint_id: z.string(),
  unit: z.string(),
  currency: z.string(),
  api_key_id: z.string(),
  login_username: z.string(),
  price_key: z.string(),
});
export type ModelRowKey = z.infer<typeof ModelRowKey>;

export const liveModelBucketKeys = namedQuery(
  'live_model_bucket_keys',
  `SELECT toString(bucket) AS bucket_text, endpoint_id, unit, currency, api_key_id, login_username, price_key
   FROM model_usage_buckets FINAL
   WHERE timezone = {timezone:String} AND timeframe = 'day'
     AND bucket >= {from:DateTime64(3, 'UTC')} AND bucket < {to:DateTime64(3, 'UTC')}`,
  ModelRowKey.extend({ bucket_text: z.string() }),
);

export const liveModelSummaryKeys = namedQuery(
  'live_model_summary_keys',
  `SELECT endpoint_id, unit, currency, api_key_id, login_username, price_key
   FROM model_usage_summaries FINAL
   WHERE timezone = {timezone:String} AND range_start = {start:Date} AND range_end = {end:Date}`,
  ModelRowKey,
);

/** Model endpoints with collected usage (the models job also collects their prices and billing events). */
export const modelEndpointsWithUsage = namedQuery(
  'model_endpoints_with_usage',
  `SELECT DISTINCT endpoint_id FROM model_usage_buckets FINAL ORDER BY endpoint_id`,
  z.object({ endpoint_id: z.string() }),
);

/**
 * The anomalies job's model cost lines: per endpoint, caller (API key id, else login, else ''), unit, day bucket
 * (UTC instant) and currency, the quantity, subtotal, discount and net cost (FINAL, live rows).
 */
export const dailyModelCostLines = namedQuery(
  'daily_model_cost_lines',
  `SELECT endpoint_id, if(api_key_id != '', api_key_id, login_username) AS caller, unit, toString(bucket) AS bucket_utc, currency,
          toString(sum(quantity)) AS quantity, toString(sum(ifNull(cost_subtotal, cost_total))) AS subtotal,
          toString(sum(ifNull(cost_discount, 0))) AS discount, toString(sum(cost_total)) AS cost
   FROM model_usage_buckets FINAL
   WHERE timezone = {timezone:String} AND timeframe = 'day' AND is_deleted = 0
     AND bucket >= parseDateTime64BestEffort({from:String}, 3, 'UTC') AND bucket < parseDateTime64BestEffort({to:String}, 3, 'UTC')
   GROUP BY endpoint_id, caller, unit, bucket, currency
   ORDER BY endpoint_id, bucket`,
  z.object({ endpoint_id: z.string(), caller: z.string(), unit: z.string(), bucket_utc: z.string(), currency: z.string(), quantity: z.string(), subtotal: z.string(), discount: z.string(), cost: z.string() }),
);

const MonthlyModelRow = z.object({
  endpoint_id: z.string(),
  unit: z.string(),
  currency: z.string(),
  api_key_label: z.string(),
  quantity: chDecimal,
  subtotal: chDecimal,
  discount: chDecimal,
  total: chDecimal,
});

/** The finance report's model rows: per endpoint, unit, currency and key over a range of local days. */
export const monthlyModelCost = namedQuery(
  'monthly_model_cost',
  `SELECT endpoint_id, unit, currency,
          if(api_key_label != '', api_key_label, if(api_key_id != '', api_key_id, login_username)) AS api_key_label,
          toString(sum(quantity)) AS quantity,
          toString(sum(ifNull(cost_subtotal, cost_total))) AS subtotal,
          toString(sum(ifNull(cost_discount, 0))) AS discount,
          toString(sum(cost_total)) AS total
   FROM model_usage_buckets FINAL
   WHERE timezone = {timezone:String} AND timeframe = 'day' AND bucket_date >= {from:Date} AND bucket_date < {to:Date}
   GROUP BY endpoint_id, unit, currency, api_key_label
   ORDER BY currency, endpoint_id, unit, api_key_label`,
  MonthlyModelRow,
);

/** The platform's own model totals for a month (up to `end`), per endpoint, unit, currency and key. */
export const modelSummaryTotals = namedQuery(
  'model_summary_totals',
  `SELECT endpoint_id, unit, currency,
          if(api_key_label != '', api_key_label, if(api_key_id != '', api_key_id, login_username)) AS api_key_label,
          toString(sum(cost_total)) AS total
   FROM model_usage_summaries FINAL
   WHERE timezone = {timezone:String} AND range_start = {from:Date} AND range_end = {end:Date}
   GROUP BY endpoint_id, unit, currency, api_key_label`,
  z.object({ endpoint_id: z.string(), unit: z.string(), currency: z.string(), api_key_label: z.string(), total: chDecimal }),
);

/** Model summaries of a month collected so far: the last range end. */
export const modelSummaryRangeOfMonth = namedQuery(
  'model_summary_range_of_month',
  `SELECT toString(max(range_end)) AS last_end, count() AS n
   FROM model_usage_summaries FINAL
   WHERE timezone = {timezone:String} AND range_start = {from:Date} AND range_end <= {to:Date}`,
  z.object({ last_end: z.string(), n: chNumber }),
);

/** Group-by keys of model cost queries, each mapped to an expression (identifiers only from this list). */
export const MODEL_COST_GROUPS = {
  endpoint: 'endpoint_id',
  api_key: "if(api_key_label != '', api_key_label, if(api_key_id != '', api_key_id, login_username))",
  unit: 'unit',
  day: 'bucket_date',
  week: 'toMonday(bucket_date)',
  month: 'toStartOfMonth(bucket_date)',
} as const;
export type ModelCostGroup = keyof typeof MODEL_COST_GROUPS;

const ModelCostRow = z.looseObject({
  currency: z.string(),
  quantity: z.string(),
  subtotal: z.string(),
  discount: z.string(),
  cost: z.string(),
  rows: chNumber,
});

/** Daily model usage summed by the chosen groups, per currency (never one number across currencies). */
export async function modelCostByGroups(
  store: Pick<Store, 'client'>,
  q: { timezone: string; from: string; to: string; groupBy: ModelCostGroup[]; endpoints: string[]; search: string },
) {
  const groups = q.groupBy.map((g) => {
    const expr = MODEL_COST_GROUPS[g];
    if (!expr) throw new Error(`unknown model cost group ${JSON.stringify(g)}`);
    return { name: g, expr };
  });
  const keys = [...groups.map((g) => g.name), 'currency'];
  const sql = `
    SELECT ${[...groups.map((g) => `toString(${g.expr}) AS ${g.name}`), 'currency'].join(', ')},
           toString(sum(quantity)) AS quantity,
           toString(sum(ifNull(cost_subtotal, cost_total))) AS subtotal,
           toString(sum(ifNull(cost_discount, 0))) AS discount,
           toString(sum(cost_total)) AS cost,
           count() AS rows
    FROM model_usage_buckets FINAL
    WHERE timezone = {timezone:String} AND timeframe = 'day'
      AND bucket_date >= {from:Date} AND bucket_date < {to:Date}
      AND (length({endpoints:Array(String)}) = 0 OR has({endpoints:Array(String)}, endpoint_id))
      AND ({search:String} = '' OR positionCaseInsensitive(endpoint_id, {search:String}) > 0)
    GROUP BY ${keys.join(', ')}
    ORDER BY ${keys.join(', ')}`;
  const rs = await store.client.query({
    query: sql,
    query_params: { timezone: q.timezone, from: q.from, to: q.to, endpoints: q.endpoints, search: q.search },
    format: 'JSONEachRow',
  });
  return z.array(ModelCostRow).parse(await rs.json());
}

// ---- catalogue, prices, billing events -----------------------------------------------------------------

export const ModelCatalogueRow = z.object({
  endpoint_id: z.string(),
  display_name: z.string(),
  category: z.string(),
  description: z.string(),
  status: z.string(),
  tags: z.array(z.string()),
  updated_at: z.string().nullable(),
  raw: z.string(),
  version: z.number().int().nonnegative(),
  collected_at: z.string(),
});
export type ModelCatalogueRow = z.input<typeof ModelCatalogueRow>;
export const modelCatalogue = defineTable('models', ModelCatalogueRow);

export const ModelPriceRow = z.object({
  endpoint_id: z.string(),
  unit_price: decimalText,
  unit: z.string(),
  currency: z.string(),
  observed_at: z.string(),
});
export type ModelPriceRow = z.input<typeof ModelPriceRow>;
export const modelPrices = defineTable('model_prices', ModelPriceRow);

/** Each price an endpoint was seen at, with its first and last observation, oldest first. */
export const modelPriceHistory = namedQuery(
  'model_price_history',
  `SELECT endpoint_id, toString(unit_price) AS unit_price, unit, currency,
          toString(min(observed_at)) AS first_seen, toString(max(observed_at)) AS last_seen
   FROM model_prices
   WHERE (length({endpoints:Array(String)}) = 0 OR has({endpoints:Array(String)}, endpoint_id))
   GROUP BY endpoint_id, unit_price, unit, currency
   ORDER BY endpoint_id, first_seen`,
  z.object({ endpoint_id: z.string(), unit_price: z.string(), unit: z.string(), currency: z.string(), first_seen: z.string(), last_seen: z.string() }),
);

export const ModelBillingEventRow = z.object({
  request_id: z.string(),
  endpoint_id: z.string(),
  timestamp: z.string(),
  output_units: decimalText.nullable(),
  unit_price: decimalText.nullable(),
  percent_discount: decimalText.nullable(),
  cost_subtotal: decimalText.nullable(),
  cost_discount: decimalText.nullable(),
  cost_total: decimalText.nullable(),
  cost_estimate_nano_usd: z.number().int().nullable(),
  raw: z.string(),
  version: z.number().int().nonnegative(),
  collected_at: z.string(),
});
export type ModelBillingEventRow = z.input<typeof ModelBillingEventRow>;
export const modelBillingEvents = defineTable('model_billing_events', ModelBillingEventRow);

/** A request's model cost, looked up by request id. */
export const modelCostOfRequests = namedQuery(
  'model_cost_of_requests',
  `SELECT request_id, endpoint_id, toString(output_units) AS output_units, toString(cost_total) AS cost_total
   FROM model_billing_events FINAL
   WHERE has({ids:Array(String)}, request_id)`,
  z.object({ request_id: z.string(), endpoint_id: z.string(), output_units: z.string(), cost_total: z.string() }),
);

/** Daily model charges of a UTC month for the FOCUS export: one row per day, endpoint, unit, key and price. */
export const focusModelCharges = namedQuery(
  'focus_model_charges',
  `SELECT toString(bucket_date) AS day, endpoint_id, unit, currency, api_key_id, login_username,
          any(api_key_label) AS api_key_label, price_key,
          toString(any(unit_price)) AS unit_price, toString(any(percent_discount)) AS percent_discount,
          toString(sum(quantity)) AS quantity, toString(sum(cost_total)) AS cost
   FROM model_usage_buckets FINAL
   WHERE timezone = 'UTC' AND timeframe = 'day' AND bucket_date >= {from:Date} AND bucket_date < {to:Date}
   GROUP BY day, endpoint_id, unit, currency, api_key_id, login_username, price_key
   ORDER BY day, endpoint_id, unit, currency, api_key_id, login_username, price_key`,
  z.object({
    day: z.string(),
    endpoint_id: z.string(),
    unit: z.string(),
    currency: z.string(),
    api_key_id: z.string(),
    login_username: z.string(),
    api_key_label: z.string(),
    price_key: z.string(),
    unit_price: z.string().nullable(),
    percent_discount: z.string().nullable(),
    quantity: z.string(),
    cost: z.string(),
  }),
);

/** Group-by keys of change attribution (model API): the non-time keys of MODEL_COST_GROUPS. */
export const MODEL_CHANGE_GROUPS = { endpoint: MODEL_COST_GROUPS.endpoint, api_key: MODEL_COST_GROUPS.api_key, unit: MODEL_COST_GROUPS.unit } as const;
export type ModelChangeGroup = keyof typeof MODEL_CHANGE_GROUPS;

const ModelChangeLineRow = z.looseObject({
  endpoint_id: z.string(),
  unit: z.string(),
  currency: z.string(),
  quantity: z.string(),
  subtotal: z.string(),
  discount: z.string(),
});

/**
 * Daily model usage of a range of local days summed per priced item (endpoint and unit) within the chosen
 * groups, per currency: the lines change attribution compares. discount is subtotal - cost_total.
 */
export async function modelCostChangeLines(
  store: Pick<Store, 'client'>,
  q: { timezone: string; from: string; to: string; groupBy: ModelChangeGroup[]; endpoints: string[] },
) {
  const groups = q.groupBy.map((g) => {
    if (!(g in MODEL_CHANGE_GROUPS)) throw new Error(`unknown model change group ${JSON.stringify(g)}`);
    return `toString(${MODEL_CHANGE_GROUPS[g]}) AS g_${g}`;
  });
  const sql = `
    SELECT ${[...groups, 'endpoint_id', 'unit', 'currency'].join(', ')},
           toString(sum(quantity)) AS quantity,
           toString(sum(ifNull(cost_subtotal, cost_total))) AS subtotal,
           toString(sum(ifNull(cost_subtotal, cost_total) - cost_total)) AS discount
    FROM model_usage_buckets FINAL
    WHERE timezone = {timezone:String} AND timeframe = 'day'
      AND bucket_date >= {from:Date} AND bucket_date < {to:Date}
      AND (length({endpoints:Array(String)}) = 0 OR has({endpoints:Array(String)}, endpoint_id))
    GROUP BY ALL
    ORDER BY endpoint_id, unit, currency`;
  const rs = await store.client.query({
    query: sql,
    query_params: { timezone: q.timezone, from: q.from, to: q.to, endpoints: q.endpoints },
    format: 'JSONEachRow',
  });
  return z.array(ModelChangeLineRow).parse(await rs.json());
}
