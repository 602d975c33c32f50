// The dashboard "Tallyhouse / Efficiency" (dashboards/efficiency.json): where serverless spend goes by runner state,
// how hard the GPUs work and how much of their VRAM the models use. The panels split each daily usage row's cost
// by the app-day's hourly avg runner history in floating point; /api/v1/efficiency has the exact figures (the same
// rule, in exact decimals).
import type { DashboardSpec } from '../lib/spec.js';
import { sq, timeFilter, timeInterval, unlessAll } from '../lib/sql.js';

/** Each daily usage row of the selected zone, currency and apps with the app-day's state weights (runner-hours). */
const SPLIT = `WITH h AS (
  SELECT name AS app, toDate(timestamp + toIntervalMinute(timestamp_offset_minutes)) AS date,
    sum(running) AS r, sum(idle) AS i, sum(draining) AS d
  FROM runner_history FINAL
  WHERE timezone = ${sq('timezone')} AND timeframe = 'hour' AND aggregation = 'avg'
  GROUP BY app, date
)`;
const SPLIT_FROM = `usage_buckets AS u FINAL
LEFT JOIN h ON h.app = u.app AND h.date = u.bucket_date
WHERE u.timezone = ${sq('timezone')} AND u.timeframe = 'day' AND u.currency = ${sq('currency')}
  AND ${unlessAll(`u.app IN (${sq('app')})`, 'app')} AND ${timeFilter('u.bucket')}`;
/** Shares of a usage row; a day with no billed runner in the history counts as idle (the API's rule). */
const BUSY = 'if(h.r + h.i + h.d > 0, h.r / (h.r + h.i + h.d), 0)';
const IDLE = 'if(h.r + h.i + h.d > 0, h.i / (h.r + h.i + h.d), 1)';
const DRAINING = 'if(h.r + h.i + h.d > 0, h.d / (h.r + h.i + h.d), 0)';

/** Per-runner samples summed over each runner's GPUs per scrape, for the selected apps in the range. */
const PER_RUNNER = `(
  SELECT name AS app, machine_type, runner_id, ts, avg(gpu_utilization) AS util,
    sum(ifNull(vram_used_bytes, 0)) AS used, sum(ifNull(vram_total_bytes, 0)) AS total
  FROM runner_metrics FINAL
  WHERE gpu >= 0 AND ${timeFilter('ts')} AND ${unlessAll(`name IN (${sq('app')})`, 'app')}
  GROUP BY app, machine_type, runner_id, ts
)`;

export const efficiency: DashboardSpec = {
  file: 'efficiency.json',
  uid: 'tallyhouse-efficiency',
  title: 'Tallyhouse / Efficiency',
  description: 'Serverless spend split into busy, idle and draining (billed runner states), the apps with the most idle spend, GPU utilisation and VRAM headroom from the per-runner metrics. Exact figures and right-sizing hints: /api/v1/efficiency and /api/v1/recommendations.',
  time: { from: 'now-30d', to: 'now' },
  variables: [
    {
      name: 'timezone',
      label: 'Timezone',
      description: 'Timezones the usage was collected in: days are local days of this zone.',
      kind: 'query',
      query: "SELECT DISTINCT timezone FROM usage_buckets WHERE timeframe = 'day' ORDER BY timezone",
    },
    {
      name: 'currency',
      label: 'Currency',
      description: 'Currency of the amounts.',
      kind: 'query',
      query: "SELECT currency FROM usage_buckets FINAL WHERE timeframe = 'day' AND currency != '' GROUP BY currency ORDER BY sum(cost_total) DESC, currency",
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
        type: 'timeseries',
        title: 'Spend by runner state (${currency})',
        description: 'Daily usage cost split by the share of running, idle and draining runner-hours of each app-day (hourly avg runner history). Idle is billed time kept warm by keep_alive or min_concurrency.',
        w: 16,
        h: 9,
        unit: 'none',
        decimals: 2,
        stacked: true,
        bars: true,
        interval: '1d',
        queries: [
          {
            format: 'timeseries',
            sql: `${SPLIT}
SELECT u.bucket AS time, sum(toFloat64(u.cost_total) * ${BUSY}) AS busy, sum(toFloat64(u.cost_total) * ${IDLE}) AS idle,
  sum(toFloat64(u.cost_total) * ${DRAINING}) AS draining
FROM ${SPLIT_FROM}
GROUP BY time
ORDER BY time`,
          },
        ],
      },
      {
        type: 'stat',
        title: 'Idle share of spend',
        description: 'Idle cost / total cost over the range, selected apps. The alert TallyhouseIdleSpendHigh watches the same share per app (tallyhouse_idle_cost_ratio).',
        w: 8,
        h: 9,
        unit: 'percentunit',
        decimals: 1,
        queries: [
          {
            format: 'table',
            sql: `${SPLIT}
SELECT sum(toFloat64(u.cost_total) * ${IDLE}) / nullIf(sum(toFloat64(u.cost_total)), 0) AS idle_share
FROM ${SPLIT_FROM}`,
          },
        ],
        thresholds: [
          { color: 'green', value: null },
          { color: 'orange', value: 0.3 },
          { color: 'red', value: 0.5 },
        ],
      },
    ],
    [
      {
        type: 'bargauge',
        title: 'Worst apps: idle spend in range (${currency})',
        description: 'The ten apps with the most idle cost in the range.',
        w: 12,
        h: 9,
        unit: 'none',
        decimals: 2,
        queries: [
          {
            format: 'table',
            sql: `${SPLIT}
SELECT u.app AS app, sum(toFloat64(u.cost_total) * ${IDLE}) AS idle_cost
FROM ${SPLIT_FROM}
GROUP BY app
ORDER BY idle_cost DESC
LIMIT 10`,
          },
        ],
      },
      {
        type: 'table',
        title: 'VRAM headroom by app and machine',
        description: 'Per app and machine type: the largest VRAM one runner used (summed over its GPUs) against its VRAM, and the mean GPU utilisation of the samples. A low peak share on a large machine is what /api/v1/recommendations turns into a cheaper machine type.',
        w: 12,
        h: 9,
        unit: 'none',
        queries: [
          {
            format: 'table',
            sql: `SELECT app, machine_type, max(used) AS vram_peak_bytes, argMax(total, used) AS vram_total_bytes,
  vram_peak_bytes / nullIf(vram_total_bytes, 0) AS vram_peak_share, avg(util) AS gpu_utilization, count() AS samples
FROM ${PER_RUNNER}
GROUP BY app, machine_type
ORDER BY vram_peak_share, app`,
          },
        ],
        overrides: [
          { field: 'app', unit: 'string' },
          { field: 'machine_type', unit: 'string' },
          { field: 'vram_peak_bytes', unit: 'bytes' },
          { field: 'vram_total_bytes', unit: 'bytes' },
          { field: 'vram_peak_share', unit: 'percentunit', decimals: 1 },
          { field: 'gpu_utilization', unit: 'percentunit', decimals: 1 },
        ],
      },
    ],
    [
      {
        type: 'bargauge',
        title: 'Idle runner-hours by local hour of day',
        description: 'When keep-warm time is spent: idle runner-hours (hourly avg runner history) per hour of the local day over the range, selected apps. The keep_warm hints of /api/v1/recommendations list the same hours per app.',
        w: 8,
        h: 8,
        unit: 'h',
        decimals: 1,
        queries: [
          {
            format: 'table',
            sql: `SELECT leftPad(toString(toHour(timestamp + toIntervalMinute(timestamp_offset_minutes))), 2, '0') AS hour, sum(idle) AS idle_runner_hours
FROM runner_history FINAL
WHERE timezone = ${sq('timezone')} AND timeframe = 'hour' AND aggregation = 'avg' AND ${timeFilter('timestamp')}
  AND ${unlessAll(`name IN (${sq('app')})`, 'app')}
GROUP BY hour
ORDER BY hour`,
          },
        ],
      },
      {
        type: 'timeseries',
        title: 'GPU utilisation by app',
        description: 'Mean GPU utilisation of each app\u2019s runners per interval (per-runner metrics; idle and draining runners count with their low utilisation).',
        w: 16,
        h: 8,
        unit: 'percentunit',
        displayName: '${__field.labels.app}',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('ts')} AS time, app, avg(util) AS gpu_utilization
FROM ${PER_RUNNER}
GROUP BY time, app
ORDER BY time, app`,
          },
        ],
      },
    ],
  ],
};
