// The dashboard "Tallyhouse / Cost" (dashboards/cost.json).
import type { DashboardSpec } from '../lib/spec.js';
import { FROM_TIME, sq, timeFilter, TO_TIME, unlessAll } from '../lib/sql.js';
import { COST_ANOMALIES } from './anomaly-annotations.js';

// Money panels name the selected currency in their titles (Grafana interpolates variables there, not in units):
// amounts are plain numbers with 2 decimals, never labelled with a currency they may not be in.

/** Daily usage rows of the selected timezone, currency and apps. */
const USAGE_WHERE = `timezone = ${sq('timezone')} AND timeframe = 'day' AND currency = ${sq('currency')}
  AND ${unlessAll(`app IN (${sq('app')})`, 'app')}`;
/** Daily model-API rows of the selected timezone and currency. */
const MODEL_WHERE = `timezone = ${sq('timezone')} AND timeframe = 'day' AND currency = ${sq('currency')}`;
/** The local date of the end of the time range, in the selected timezone. */
const TODAY = `WITH ${TO_TIME} AS range_end, toDate(range_end, ${sq('timezone')}) AS today`;

export const cost: DashboardSpec = {
  file: 'cost.json',
  uid: 'tallyhouse-cost',
  title: 'Tallyhouse / Cost',
  description:
    'Cost of both product lines, net of discounts: serverless usage (usage collector, surge included) and model APIs (models collector), per local day of the selected timezone. Amounts are in the selected currency; the app filter applies to serverless panels.',
  time: { from: 'now-30d', to: 'now' },
  annotations: [COST_ANOMALIES],
  variables: [
    {
      name: 'timezone',
      label: 'Timezone',
      description: 'Timezones the usage was collected in (TIMEZONES): days are local days of this zone.',
      kind: 'query',
      query: "SELECT DISTINCT timezone FROM usage_buckets WHERE timeframe = 'day' ORDER BY timezone",
    },
    {
      name: 'currency',
      label: 'Currency',
      description: 'Currency of the amounts (rows in other currencies are not shown).',
      kind: 'query',
      // FINAL: a tombstone (a row the platform stopped returning, currency '') is not an option. Both product lines;
      // the currency with the most spend first (the one selected by default).
      query:
        "SELECT currency FROM (SELECT currency, cost_total FROM usage_buckets FINAL WHERE timeframe = 'day' UNION ALL SELECT currency, cost_total FROM model_usage_buckets FINAL WHERE timeframe = 'day') WHERE currency != '' GROUP BY currency ORDER BY sum(cost_total) DESC, currency",
    },
    {
      name: 'app',
      label: 'App',
      description: 'Apps with usage in the selected timezone.',
      kind: 'query',
      query: `SELECT DISTINCT app FROM usage_buckets FINAL WHERE timeframe = 'day' AND timezone = ${sq('timezone')} ORDER BY app`,
      multi: true,
    },
  ],
  rows: [
    [
      {
        type: 'stat',
        title: 'Month to date and forecast (${currency})',
        description:
          'Cost of the month of the range end so far; the run rate is the mean daily cost of the 7 whole days before it; the forecast adds the run rate for the rest of the month.',
        w: 12,
        h: 5,
        unit: 'none',
        decimals: 2,
        queries: [
          {
            format: 'table',
            sql: `${TODAY}
SELECT
  toFloat64(sumIf(cost_total, bucket_date >= toStartOfMonth(today))) AS month_to_date,
  toFloat64(sumIf(cost_total, bucket_date >= today - 7 AND bucket_date < today)) / 7 AS daily_run_rate,
  month_to_date + daily_run_rate * dateDiff('second', range_end, toDateTime(toLastDayOfMonth(today) + 1, ${sq('timezone')})) / 86400 AS forecast_month_end
FROM usage_buckets FINAL
WHERE ${USAGE_WHERE}
  AND bucket_date >= least(toStartOfMonth(today), today - 7) AND bucket_date <= today`,
          },
        ],
        overrides: [
          { field: 'month_to_date', displayName: 'Month to date' },
          { field: 'daily_run_rate', displayName: 'Run rate per day' },
          { field: 'forecast_month_end', displayName: 'Forecast to month end' },
        ],
      },
      {
        type: 'stat',
        title: 'Cost in range (${currency})',
        description: 'Total cost of the local days that start in the time range, and the mean per day of the range.',
        w: 6,
        h: 5,
        unit: 'none',
        decimals: 2,
        queries: [
          {
            format: 'table',
            sql: `SELECT
  toFloat64(sum(cost_total)) AS cost,
  cost / greatest(dateDiff('second', ${FROM_TIME}, ${TO_TIME}) / 86400, 1) AS per_day
FROM usage_buckets FINAL
WHERE ${USAGE_WHERE} AND ${timeFilter('bucket')}`,
          },
        ],
        overrides: [
          { field: 'cost', displayName: 'Total' },
          { field: 'per_day', displayName: 'Per day' },
        ],
      },
      {
        type: 'stat',
        title: 'Surge share',
        description: 'Share of the cost in the range billed at surge prices.',
        w: 6,
        h: 5,
        unit: 'percentunit',
        decimals: 1,
        thresholds: [
          { color: 'green', value: null },
          { color: 'orange', value: 0.1 },
          { color: 'red', value: 0.25 },
        ],
        queries: [
          {
            format: 'table',
            sql: `SELECT toFloat64(sumIf(cost_total, is_surge)) / nullIf(toFloat64(sum(cost_total)), 0) AS surge_share
FROM usage_buckets FINAL
WHERE ${USAGE_WHERE} AND ${timeFilter('bucket')}`,
          },
        ],
      },
    ],
    [
      {
        type: 'timeseries',
        title: 'Daily cost by app (${currency})',
        description: 'Cost per local day and app (bars start at local midnight).',
        w: 12,
        h: 9,
        unit: 'none',
        decimals: 2,
        bars: true,
        stacked: true,
        displayName: '${__field.labels.app}',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT bucket AS time, app, toFloat64(sum(cost_total)) AS cost
FROM usage_buckets FINAL
WHERE ${USAGE_WHERE} AND ${timeFilter('bucket')}
GROUP BY time, app
ORDER BY time, app`,
          },
        ],
      },
      {
        type: 'timeseries',
        title: 'Daily cost by machine type (${currency})',
        description: 'Cost per local day and machine type.',
        w: 12,
        h: 9,
        unit: 'none',
        decimals: 2,
        bars: true,
        stacked: true,
        displayName: '${__field.labels.machine_type}',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT bucket AS time, machine_type, toFloat64(sum(cost_total)) AS cost
FROM usage_buckets FINAL
WHERE ${USAGE_WHERE} AND ${timeFilter('bucket')}
GROUP BY time, machine_type
ORDER BY time, machine_type`,
          },
        ],
      },
    ],
    [
      {
        type: 'timeseries',
        title: 'Surge share per day',
        description: 'Share of each day\u2019s cost billed at surge prices.',
        w: 12,
        h: 8,
        unit: 'percentunit',
        min: 0,
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT bucket AS time, toFloat64(sumIf(cost_total, is_surge)) / nullIf(toFloat64(sum(cost_total)), 0) AS surge_share
FROM usage_buckets FINAL
WHERE ${USAGE_WHERE} AND ${timeFilter('bucket')}
GROUP BY time
ORDER BY time`,
          },
        ],
      },
      {
        type: 'bargauge',
        title: 'Month to date by app (${currency})',
        description: 'Cost of the month of the range end so far, per app.',
        w: 12,
        h: 8,
        unit: 'none',
        decimals: 2,
        queries: [
          {
            format: 'table',
            sql: `${TODAY}
SELECT app, toFloat64(sum(cost_total)) AS month_to_date
FROM usage_buckets FINAL
WHERE ${USAGE_WHERE} AND bucket_date >= toStartOfMonth(today) AND bucket_date <= today
GROUP BY app
ORDER BY month_to_date DESC`,
          },
        ],
      },
    ],
    [
      {
        type: 'table',
        title: 'Cost by app in range (${currency})',
        description: 'Per app: cost, the part at surge prices, machine-hours billed and the share of the total.',
        w: 24,
        h: 9,
        unit: 'none',
        decimals: 2,
        queries: [
          {
            format: 'table',
            sql: `SELECT app, toFloat64(sum(cost_total)) AS cost, toFloat64(sumIf(cost_total, is_surge)) AS surge_cost,
  toFloat64(sum(quantity)) / 3600 AS machine_hours, cost / nullIf(sum(cost) OVER (), 0) AS share
FROM usage_buckets FINAL
WHERE ${USAGE_WHERE} AND ${timeFilter('bucket')}
GROUP BY app
ORDER BY cost DESC`,
          },
        ],
        overrides: [
          { field: 'app', unit: 'string' },
          { field: 'machine_hours', unit: 'h', decimals: 1 },
          { field: 'share', unit: 'percentunit', decimals: 1 },
        ],
      },
    ],
    [
      {
        type: 'timeseries',
        title: 'Daily cost by product line (${currency})',
        description: 'Serverless (machine time of your apps) and model APIs (calls to model endpoints), per local day.',
        w: 12,
        h: 8,
        unit: 'none',
        decimals: 2,
        bars: true,
        stacked: true,
        interval: '1d',
        displayName: '${__field.labels.product}',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT toDateTime(bucket_date, ${sq('timezone')}) AS time, product, toFloat64(sum(cost)) AS cost
FROM (
  SELECT bucket_date, 'serverless' AS product, cost_total AS cost FROM usage_buckets FINAL
  WHERE timezone = ${sq('timezone')} AND timeframe = 'day' AND currency = ${sq('currency')} AND ${timeFilter('bucket')}
  UNION ALL
  SELECT bucket_date, 'model APIs' AS product, cost_total AS cost FROM model_usage_buckets FINAL
  WHERE ${MODEL_WHERE} AND ${timeFilter('bucket')}
)
GROUP BY time, product
ORDER BY time, product`,
          },
        ],
      },
      {
        type: 'bargauge',
        title: 'Model API spend by endpoint in range (${currency})',
        description: 'Cost of the calls to each model endpoint, all keys together.',
        w: 6,
        h: 8,
        unit: 'none',
        decimals: 2,
        queries: [
          {
            format: 'table',
            sql: `SELECT endpoint_id, toFloat64(sum(cost_total)) AS cost
FROM model_usage_buckets FINAL
WHERE ${MODEL_WHERE} AND ${timeFilter('bucket')}
GROUP BY endpoint_id
ORDER BY cost DESC
LIMIT 20`,
          },
        ],
      },
      {
        type: 'bargauge',
        title: 'Model API spend by API key in range (${currency})',
        description: 'Cost of model calls per API key (its label) or dashboard login.',
        w: 6,
        h: 8,
        unit: 'none',
        decimals: 2,
        queries: [
          {
            format: 'table',
            sql: `SELECT if(api_key_label != '', api_key_label, if(api_key_id != '', api_key_id, login_username)) AS api_key, toFloat64(sum(cost_total)) AS cost
FROM model_usage_buckets FINAL
WHERE ${MODEL_WHERE} AND ${timeFilter('bucket')}
GROUP BY api_key
ORDER BY cost DESC`,
          },
        ],
      },
    ],
    [
      {
        type: 'table',
        title: 'Top front-end sessions by cost (${currency})',
        description:
          'Sessions reported by your web front ends (Faro): the platform requests they mention and those requests\' cost (serverless at the unit price in effect, model calls as billed).',
        w: 24,
        h: 8,
        unit: 'none',
        decimals: 4,
        queries: [
          {
            format: 'table',
            sql: `WITH mentioned AS (SELECT DISTINCT session_id, app, request_id FROM faro_items WHERE request_id != '' AND ${timeFilter('timestamp')})
SELECT m.session_id AS session, any(m.app) AS app, count() AS requests, toFloat64(sum(x.cost)) AS cost
FROM mentioned AS m
INNER JOIN (
  SELECT r.request_id AS request_id, r.billable_units * p.unit_price AS cost, p.currency AS currency
  FROM (SELECT endpoint_id, ended_at, request_id, billable_units FROM requests FINAL
        WHERE billable_units IS NOT NULL AND request_id IN (SELECT request_id FROM mentioned)) AS r
  ASOF INNER JOIN (SELECT endpoint_id, effective_from, unit_price, currency FROM unit_prices FINAL) AS p
  ON r.endpoint_id = p.endpoint_id AND r.ended_at >= p.effective_from
  UNION ALL
  SELECT e.request_id AS request_id, e.cost_total AS cost, c.currency AS currency
  FROM (SELECT request_id, endpoint_id, cost_total FROM model_billing_events FINAL WHERE request_id IN (SELECT request_id FROM mentioned) AND cost_total IS NOT NULL) AS e
  INNER JOIN (SELECT endpoint_id, argMax(currency, observed_at) AS currency FROM model_prices GROUP BY endpoint_id) AS c ON c.endpoint_id = e.endpoint_id
) AS x ON x.request_id = m.request_id
WHERE x.currency = ${sq('currency')}
GROUP BY session
ORDER BY cost DESC
LIMIT 20`,
          },
        ],
        overrides: [
          { field: 'session', unit: 'string' },
          { field: 'app', unit: 'string' },
        ],
      },
    ],
  ],
};
