import { z } from 'zod';
import { decimalText, defineTable, namedQuery } from './table.js';
import type { Store } from '../client.js';

/** Decimals the value columns keep (sql/004, sql/005): values are rounded to these before they are written. */
export const USAGE_SCALES = { quantity: 9, unit_price: 12, percent_discount: 4, cost: 12 } as const;

/** The columns of one usage row as the platform delivered it, shared by the time series and the summaries. */
export const usageValueColumns = {
  app: z.string(),
  environment: z.string(),
  machine_type: z.string(),
  is_surge: z.boolean(),
  unit: z.string(),
  quantity: decimalText, // machine-seconds
  unit_price: decimalText,
  percent_discount: decimalText.nullable(),
  cost_subtotal: decimalText.nullable(),
  cost_discount: decimalText.nullable(),
  cost_total: decimalText,
  currency: z.string(),
  raw: z.string(),
  version: z.number().int().nonnegative(),
  is_deleted: z.union([z.literal(0), z.literal(1)]),
  collected_at: z.string(),
};

export const UsageBucketRow = z.object({
  timezone: z.string(),
  timeframe: z.string(),
  bucket: z.string(), // DateTime64(3) UTC text
  bucket_offset_minutes: z.number().int(),
  bucket_date: z.string(), // YYYY-MM-DD, local to `timezone`
  ...usageValueColumns,
});
export type UsageBucketRow = z.input<typeof UsageBucketRow>;

export const usageBuckets = defineTable('usage_buckets', UsageBucketRow);

/** The identity of a usage row: what a re-collection replaces. */
export const USAGE_BUCKET_KEY = ['timezone', 'timeframe', 'bucket', 'app', 'environment', 'machine_type', 'is_surge'] as const;

/** Live rows of a collected range, to find those a re-collection no longer returns. */
export const liveUsageBucketKeys = namedQuery(
  'live_usage_bucket_keys',
  `SELECT toString(bucket) AS bucket_text, app, environment, machine_type, is_surge
   FROM usage_buckets FINAL
   WHERE timezone = {timezone:String} AND timeframe = {timeframe:String}
     AND bucket >= {from:DateTime64(3, 'UTC')} AND bucket < {to:DateTime64(3, 'UTC')}
     AND (length({apps:Array(String)}) = 0 OR has({apps:Array(String)}, app))`,
  z.object({
    bucket_text: z.string(),
    app: z.string(),
    environment: z.string(),
    machine_type: z.string(),
    is_surge: z.boolean(),
  }),
);

/** Group-by keys of cost queries, each mapped to an expression: identifiers come only from this allow-list. */
export const COST_GROUPS = {
  app: 'app',
  environment: 'environment',
  machine_type: 'machine_type',
  surge: 'is_surge',
  day: 'bucket_date',
  week: 'toMonday(bucket_date)',
  month: 'toStartOfMonth(bucket_date)',
} as const;
export type CostGroup = keyof typeof COST_GROUPS;

const CostRow = z.looseObject({
  currency: z.string(),
  machine_seconds: z.string(),
  surge_machine_seconds: z.string(),
  subtotal: z.string(),
  discount: z.string(),
  cost: z.string(),
  surge_cost: z.string(),
  rows: z.union([z.string(), z.number()]).transform(Number),
});

export interface CostQuery {
  timezone: string;
  /** Local dates in `timezone`; `to` exclusive. */
  from: string;
  to: string;
  groupBy: CostGroup[];
  apps: string[];
  search: string;
}

/**
 * Daily usage summed by the chosen groups, per currency (never one number across currencies). Surge and
 * non-surge rows both count toward every total; `surge_cost` says how much of it was surge.
 */
export async function costByGroups(store: Pick<Store, 'client'>, q: CostQuery) {
  const groups = q.groupBy.map((g) => {
    const expr = COST_GROUPS[g];
    if (!expr) throw new Error(`unknown cost group ${JSON.stringify(g)}`);
    return { name: g, expr };
  });
  const select = groups.map((g) => `${g.name === 'surge' ? 'is_surge' : `toString(${g.expr})`} AS ${g.name}`);
  const keys = [...groups.map((g) => g.name), 'currency'];
  const sql = `
    SELECT ${[...select, 'currency'].join(', ')},
           toString(sum(quantity)) AS machine_seconds,
           toString(sumIf(quantity, is_surge)) AS surge_machine_seconds,
           toString(sum(ifNull(cost_subtotal, cost_total))) AS subtotal,
           toString(sum(ifNull(cost_discount, 0))) AS discount,
           toString(sum(cost_total)) AS cost,
           toString(sumIf(cost_total, is_surge)) AS surge_cost,
           count() AS rows
    FROM usage_buckets FINAL
    WHERE timezone = {timezone:String} AND timeframe = 'day'
      AND bucket_date >= {from:Date} AND bucket_date < {to:Date}
      AND (length({apps:Array(String)}) = 0 OR has({apps:Array(String)}, app))
      AND ({search:String} = '' OR positionCaseInsensitive(app, {search:String}) > 0)
    GROUP BY ${keys.join(', ')}
    ORDER BY ${keys.join(', ')}`;
  const rs = await store.client.query({
    query: sql,
    query_params: { timezone: q.timezone, from: q.from, to: q.to, apps: q.apps, search: q.search },
    format: 'JSONEachRow',
  });
  return z.array(CostRow).parse(await rs.json());
}

/** Timezones with collected daily usage. */
/** The months (first local day) of [from, to) holding daily usage in a zone, oldest first. */
export const usageMonths = namedQuery(
  'usage_months',
  `SELECT DISTINCT toString(toStartOfMonth(bucket_date)) AS month
   FROM usage_buckets
   WHERE timeframe = 'day' AND timezone = {timezone:String} AND bucket_date >= {from:Date} AND bucket_date < {to:Date}
   ORDER BY month`,
  z.object({ month: z.string() }),
);

export const collectedTimezones = namedQuery(
  'collected_timezones',
  `SELECT DISTINCT timezone FROM usage_buckets WHERE timeframe = 'day' ORDER BY timezone`,
  z.object({ timezone: z.string() }),
);

/**
 * The anomalies job's cost lines: per app, day bucket (UTC instant), machine type and surge, and currency, the
 * quantity, subtotal, discount and net cost of the day (FINAL, live rows). The change attribution explains a
 * cost finding from them.
 */
export const dailyAppCostLines = namedQuery(
  'daily_app_cost_lines',
  `SELECT app, toString(bucket) AS bucket_utc, machine_type, is_surge, currency,
          toString(sum(quantity)) AS quantity, toString(sum(ifNull(cost_subtotal, cost_total))) AS subtotal,
          toString(sum(ifNull(cost_discount, 0))) AS discount, toString(sum(cost_total)) AS cost
   FROM usage_buckets FINAL
   WHERE timezone = {timezone:String} AND timeframe = 'day' AND is_deleted = 0
     AND bucket >= parseDateTime64BestEffort({from:String}, 3, 'UTC') AND bucket < parseDateTime64BestEffort({to:String}, 3, 'UTC')
   GROUP BY app, bucket, machine_type, is_surge, currency
   ORDER BY app, bucket`,
  z.object({ app: z.string(), bucket_utc: z.string(), machine_type: z.string(), is_surge: z.union([z.boolean(), z.number()]).transform(Boolean), currency: z.string(), quantity: z.string(), subtotal: z.string(), discount: z.string(), cost: z.string() }),
);

/** The finance report's daily sums: per app, machine type and currency over a range of local days. */
export const monthlyCostByAppMachine = namedQuery(
  'monthly_cost_by_app_machine',
  `SELECT app, machine_type, currency,
          toString(sum(quantity)) AS machine_seconds,
          toString(sumIf(quantity, is_surge)) AS surge_machine_seconds,
          toString(sum(ifNull(cost_subtotal, cost_total))) AS subtotal,
          toString(sum(ifNull(cost_discount, 0))) AS discount,
          toString(sum(cost_total)) AS total
   FROM usage_buckets FINAL
   WHERE timezone = {timezone:String} AND timeframe = 'day' AND bucket_date >= {from:Date} AND bucket_date < {to:Date}
   GROUP BY app, machine_type, currency
   ORDER BY currency, app, machine_type`,
  z.object({
    app: z.string(),
    machine_type: z.string(),
    currency: z.string(),
    machine_seconds: z.string(),
    surge_machine_seconds: z.string(),
    subtotal: z.string(),
    discount: z.string(),
    total: z.string(),
  }),
);

/** Cost per app and currency from a local day on (the month-to-date gauge), most expensive first. */
export const costSinceByApp = namedQuery(
  'cost_since_by_app',
  `SELECT app, currency, toString(sum(cost_total)) AS cost FROM usage_buckets FINAL
   WHERE timezone = {timezone:String} AND timeframe = 'day' AND bucket_date >= {from:Date}
   GROUP BY app, currency ORDER BY sum(cost_total) DESC, app`,
  z.object({ app: z.string(), currency: z.string(), cost: z.string() }),
);

/** Daily serverless charges of a UTC month for the FOCUS export: one row per day, app, machine type, surge and price. */
export const focusServerlessCharges = namedQuery(
  'focus_serverless_charges',
  `SELECT toString(bucket_date) AS day, app, machine_type, is_surge, currency,
          toString(unit_price) AS unit_price, toString(percent_discount) AS percent_discount,
          toString(sum(quantity)) AS quantity, toString(sum(cost_total)) AS cost
   FROM usage_buckets FINAL
   WHERE timezone = 'UTC' AND timeframe = 'day' AND bucket_date >= {from:Date} AND bucket_date < {to:Date}
   GROUP BY day, app, machine_type, is_surge, currency, unit_price, percent_discount
   ORDER BY day, app, machine_type, is_surge, currency, unit_price`,
  z.object({
    day: z.string(),
    app: z.string(),
    machine_type: z.string(),
    is_surge: z.boolean(),
    currency: z.string(),
    unit_price: z.string(),
    percent_discount: z.string().nullable(),
    quantity: z.string(),
    cost: z.string(),
  }),
);

/** Daily usage rows with their prices, per local day in [from, to) (the efficiency split and right-sizing read them). */
export const usageDaysWithPrices = namedQuery(
  'usage_days_with_prices',
  `SELECT toString(bucket_date) AS date, app, machine_type, is_surge, toString(quantity) AS quantity, toString(cost_total) AS cost_total,
          currency, toString(unit_price) AS unit_price, if(isNull(percent_discount), NULL, toString(percent_discount)) AS percent_discount
   FROM usage_buckets FINAL
   WHERE timezone = {timezone:String} AND timeframe = 'day' AND bucket_date >= {from:Date} AND bucket_date < {to:Date}
   ORDER BY date, app, machine_type, is_surge`,
  z.object({
    date: z.string(),
    app: z.string(),
    machine_type: z.string(),
    is_surge: z.boolean(),
    quantity: z.string(),
    cost_total: z.string(),
    currency: z.string(),
    unit_price: z.string(),
    percent_discount: z.string().nullable(),
  }),
);

/** Group-by keys of change attribution (serverless): the non-time keys of COST_GROUPS. */
export const CHANGE_GROUPS = { app: 'app', environment: 'environment', machine_type: 'machine_type', surge: 'is_surge' } as const;
export type ChangeGroup = keyof typeof CHANGE_GROUPS;

const ChangeLineRow = z.looseObject({
  app: z.string(),
  machine_type: z.string(),
  is_surge: z.boolean(),
  currency: z.string(),
  quantity: z.string(),
  subtotal: z.string(),
  discount: z.string(),
});

/**
 * Daily usage of a range of local days summed per priced item (app, machine type, surge: one unit price each)
 * within the chosen groups, per currency: the lines change attribution (src/insights/cost-changes.ts) compares.
 * discount is subtotal - cost_total, so subtotal - discount is always the billed total.
 */
export async function costChangeLines(
  store: Pick<Store, 'client'>,
  q: { timezone: string; from: string; to: string; groupBy: ChangeGroup[]; apps: string[] },
) {
  const groups = q.groupBy.map((g) => {
    if (!(g in CHANGE_GROUPS)) throw new Error(`unknown change group ${JSON.stringify(g)}`);
    return g === 'surge' ? 'toString(is_surge) AS g_surge' : `toString(${CHANGE_GROUPS[g]}) AS g_${g}`;
  });
  const sql = `
    SELECT ${[...groups, 'app', 'machine_type', 'is_surge', 'currency'].join(', ')},
           toString(sum(quantity)) AS quantity,
           toString(sum(ifNull(cost_subtotal, cost_total))) AS subtotal,
           toString(sum(ifNull(cost_subtotal, cost_total) - cost_total)) AS discount
    FROM usage_buckets FINAL
    WHERE timezone = {timezone:String} AND timeframe = 'day'
      AND bucket_date >= {from:Date} AND bucket_date < {to:Date}
      AND (length({apps:Array(String)}) = 0 OR has({apps:Array(String)}, app))
    GROUP BY ALL
    ORDER BY app, machine_type, is_surge, currency`;
  const rs = await store.client.query({
    query: sql,
    query_params: { timezone: q.timezone, from: q.from, to: q.to, apps: q.apps },
    format: 'JSONEachRow',
  });
  return z.array(ChangeLineRow).parse(await rs.json());
}

/** The currencies collected usage is billed in (the MCP server's currencies resource). */
export const collectedCurrencies = namedQuery(
  'collected_currencies',
  `SELECT DISTINCT currency FROM usage_buckets WHERE currency != '' ORDER BY currency LIMIT 100`,
  z.object({ currency: z.string() }),
);
