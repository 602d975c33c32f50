// Generates the Grafana dashboards in this folder: `npx tsx dashboards/generate.ts` writes dashboards/*.json.
// test/dashboards/dashboards.test.ts checks the committed JSON is exactly what this produces, then expands every
// panel's SQL as the ClickHouse plugin does and runs it against a store the collectors filled from the simulator.
//
// SQL conventions (the plugin's rules, see test/dashboards/grafana-sql.ts):
// - every query is raw SQL (editorType 'sql') on the data source variable `$datasource`;
// - the argument-free macros $__fromTime, $__toTime and $__interval_s are always written in parentheses, e.g.
//   `($__toTime)`: the plugin SDK's macro scanner otherwise reads the next parenthesised text as their arguments;
// - macro arguments are plain column names (no commas or parentheses);
// - multi-value variables filter through `$__conditionalAll(col IN (${var:singlequote}), $var)`, so "All" adds no
//   condition at all;
// - tables with re-collected rows (ReplacingMergeTree) are read with FINAL.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const PLUGIN_ID = 'grafana-clickhouse-datasource';
export const PLUGIN_VERSION = '4.11.2';
export const DATASOURCE_UID = 'tallyhouse-clickhouse';
export const DATASOURCE_NAME = 'ClickHouse (Tallyhouse)';
export const SCHEMA_VERSION = 41;
const DS = { type: PLUGIN_ID, uid: '${datasource}' };
const GRID_COLUMNS = 24;

// ---- SQL helpers -------------------------------------------------------------------------------------------

/** `${name:singlequote}`: every selected value as a quoted SQL string. */
const sq = (name: string) => '${' + name + ':singlequote}';
/** A condition that applies only when the variable is not "All" (or empty, for text boxes). */
const unlessAll = (condition: string, variable: string) => `$__conditionalAll(${condition}, $${variable})`;
const timeFilter = (column: string) => `$__timeFilter(${column})`;
const timeInterval = (column: string) => `$__timeInterval(${column})`;
const FROM_TIME = '($__fromTime)';
const TO_TIME = '($__toTime)';
const INTERVAL_S = '($__interval_s)';
/** The app name of an endpoint id `owner/app[/route]` (app names are unique across owners). */
const appOf = (endpointColumn: string) => `splitByChar('/', ${endpointColumn})[2]`;

// ---- model types -------------------------------------------------------------------------------------------

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** How the plugin shapes a query's result: 0 time series, 1 table, 2 logs (the plugin's Format enum). */
export const FORMATS = { timeseries: 0, table: 1, logs: 2 } as const;
export type QueryFormat = keyof typeof FORMATS;

interface QuerySpec {
  sql: string;
  format: QueryFormat;
}

interface Override {
  field: string;
  unit?: string;
  displayName?: string;
  decimals?: number;
  custom?: JsonObject;
}

interface PanelSpec {
  type: 'timeseries' | 'table' | 'stat' | 'bargauge' | 'logs' | 'state-timeline';
  title: string;
  description: string;
  w: number;
  h: number;
  unit: string;
  queries: QuerySpec[];
  /** Minimum interval ($__timeInterval never goes finer), e.g. '1h' for hourly buckets. */
  interval?: string;
  /** Series name from the long format's label column, e.g. '${__field.labels.app}'. */
  displayName?: string;
  decimals?: number;
  min?: number;
  bars?: boolean;
  stacked?: boolean;
  overrides?: Override[];
  mappings?: Json[];
  thresholds?: Array<{ color: string; value: number | null }>;
  options?: JsonObject;
}

interface VariableSpec {
  name: string;
  label: string;
  description: string;
  kind: 'query' | 'custom' | 'textbox';
  /** query: SQL returning one column of values; custom: comma-separated values. */
  query?: string;
  multi?: boolean;
  /** Re-run the query when the time range changes (it uses $__timeFilter). */
  onTimeRange?: boolean;
}

interface DashboardSpec {
  file: string;
  uid: string;
  title: string;
  description: string;
  time: { from: string; to: string };
  variables: VariableSpec[];
  /** Panels in rows; each row is laid out left to right and starts below the tallest panel of the row above. */
  rows: PanelSpec[][];
  /** Annotation queries (columns time, text, tags, title), shown on every time series panel. */
  annotations?: Array<{ name: string; iconColor: string; sql: string }>;
}

// ---- model builders ----------------------------------------------------------------------------------------

function variable(v: VariableSpec): JsonObject {
  const common = { name: v.name, label: v.label, description: v.description, hide: 0, skipUrlSync: false };
  if (v.kind === 'textbox') {
    return { ...common, type: 'textbox', query: '', current: { text: '', value: '' }, options: [{ selected: true, text: '', value: '' }] };
  }
  const multi = v.multi ?? false;
  const current: JsonObject = multi ? { selected: true, text: ['All'], value: ['$__all'] } : {};
  if (v.kind === 'custom') {
    const values = v.query!.split(',');
    return {
      ...common,
      type: 'custom',
      query: v.query!,
      multi,
      includeAll: multi,
      current: multi ? current : { selected: true, text: values[0], value: values[0] },
      options: values.map((value, i) => ({ selected: !multi && i === 0, text: value, value })),
    };
  }
  return {
    ...common,
    type: 'query',
    datasource: DS,
    definition: v.query!,
    query: { editorType: 'sql', rawSql: v.query! },
    refresh: v.onTimeRange ? 2 : 1,
    regex: '',
    sort: 0,
    multi,
    includeAll: multi,
    current,
    options: [],
  };
}

const DATASOURCE_VARIABLE: JsonObject = {
  name: 'datasource',
  label: 'Data source',
  description: 'The ClickHouse data source holding the Tallyhouse database.',
  type: 'datasource',
  query: PLUGIN_ID,
  regex: '',
  hide: 0,
  skipUrlSync: false,
  current: { selected: true, text: DATASOURCE_NAME, value: DATASOURCE_UID },
  options: [],
};

function fieldConfig(p: PanelSpec): JsonObject {
  const defaults: JsonObject = { unit: p.unit, color: { mode: p.type === 'stat' || p.type === 'bargauge' ? 'thresholds' : 'palette-classic' } };
  if (p.decimals !== undefined) defaults.decimals = p.decimals;
  if (p.min !== undefined) defaults.min = p.min;
  if (p.displayName) defaults.displayName = p.displayName;
  if (p.mappings) defaults.mappings = p.mappings;
  defaults.thresholds = { mode: 'absolute', steps: p.thresholds ?? [{ color: 'green', value: null }] };
  if (p.type === 'timeseries') {
    defaults.custom = {
      drawStyle: p.bars ? 'bars' : 'line',
      lineWidth: 1,
      fillOpacity: p.bars ? 80 : p.stacked ? 30 : 10,
      showPoints: 'never',
      spanNulls: false,
      stacking: { mode: p.stacked ? 'normal' : 'none', group: 'A' },
      axisSoftMin: 0,
    };
  } else if (p.type === 'table') {
    defaults.custom = { align: 'auto', filterable: true };
  } else if (p.type === 'state-timeline') {
    defaults.custom = { fillOpacity: 80, lineWidth: 0 };
  }
  const overrides: Json[] = (p.overrides ?? []).map((o) => {
    const properties: Json[] = [];
    if (o.unit) properties.push({ id: 'unit', value: o.unit });
    if (o.displayName) properties.push({ id: 'displayName', value: o.displayName });
    if (o.decimals !== undefined) properties.push({ id: 'decimals', value: o.decimals });
    for (const [k, v] of Object.entries(o.custom ?? {})) properties.push({ id: `custom.${k}`, value: v });
    return { matcher: { id: 'byName', options: o.field }, properties };
  });
  return { defaults, overrides };
}

function panelOptions(p: PanelSpec): JsonObject {
  switch (p.type) {
    case 'timeseries':
      return {
        legend: { showLegend: true, displayMode: 'table', placement: 'right', calcs: ['mean', 'max', 'lastNotNull'] },
        tooltip: { mode: 'multi', sort: 'desc' },
        ...p.options,
      };
    case 'stat':
      return {
        reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
        colorMode: 'value',
        graphMode: 'none',
        justifyMode: 'auto',
        orientation: 'auto',
        textMode: 'value_and_name',
        ...p.options,
      };
    case 'bargauge':
      return {
        reduceOptions: { calcs: ['lastNotNull'], fields: '', values: true },
        orientation: 'horizontal',
        displayMode: 'gradient',
        showUnfilled: true,
        ...p.options,
      };
    case 'table':
      return { showHeader: true, cellHeight: 'sm', ...p.options };
    case 'logs':
      return {
        showTime: true,
        wrapLogMessage: true,
        enableLogDetails: true,
        sortOrder: 'Descending',
        dedupStrategy: 'none',
        prettifyLogMessage: false,
        showCommonLabels: false,
        showLabels: false,
        ...p.options,
      };
    case 'state-timeline':
      return {
        showValue: 'never',
        mergeValues: true,
        rowHeight: 0.8,
        alignValue: 'left',
        legend: { showLegend: true, displayMode: 'list', placement: 'bottom' },
        tooltip: { mode: 'single', sort: 'none' },
        ...p.options,
      };
  }
}

function target(q: QuerySpec, i: number): JsonObject {
  return {
    refId: String.fromCharCode(65 + i),
    datasource: DS,
    editorType: 'sql',
    format: FORMATS[q.format],
    queryType: q.format,
    pluginVersion: PLUGIN_VERSION,
    rawSql: q.sql,
  };
}

function dashboard(d: DashboardSpec): JsonObject {
  const panels: Json[] = [];
  let id = 1;
  let y = 0;
  for (const row of d.rows) {
    let x = 0;
    let height = 0;
    for (const p of row) {
      if (x + p.w > GRID_COLUMNS) throw new Error(`${d.title}: row with "${p.title}" is wider than ${GRID_COLUMNS} columns`);
      const panel: JsonObject = {
        id: id++,
        type: p.type,
        title: p.title,
        description: p.description,
        gridPos: { x, y, w: p.w, h: p.h },
        datasource: DS,
        fieldConfig: fieldConfig(p),
        options: panelOptions(p),
        targets: p.queries.map(target),
      };
      if (p.interval) panel.interval = p.interval;
      panels.push(panel);
      x += p.w;
      height = Math.max(height, p.h);
    }
    y += height;
  }
  return {
    uid: d.uid,
    title: d.title,
    description: d.description,
    tags: ['tallyhouse'],
    editable: true,
    graphTooltip: 1,
    timezone: 'browser',
    fiscalYearStartMonth: 0,
    liveNow: false,
    refresh: '5m',
    schemaVersion: SCHEMA_VERSION,
    version: 1,
    time: d.time,
    timepicker: {},
    annotations: {
      list: [
        {
          builtIn: 1,
          datasource: { type: 'grafana', uid: '-- Grafana --' },
          enable: true,
          hide: true,
          iconColor: 'rgba(0, 211, 255, 1)',
          name: 'Annotations & Alerts',
          type: 'dashboard',
        },
        ...(d.annotations ?? []).map((a) => ({
          name: a.name,
          datasource: DS,
          enable: true,
          hide: false,
          iconColor: a.iconColor,
          target: { refId: 'annotation', datasource: DS, editorType: 'sql', format: FORMATS.table, pluginVersion: PLUGIN_VERSION, rawSql: a.sql },
        })),
      ],
    },
    links: [{ title: 'Tallyhouse', type: 'dashboards', tags: ['tallyhouse'], asDropdown: true, includeVars: false, keepTime: true, icon: 'external link', targetBlank: false, tooltip: '', url: '' }],
    templating: { list: [DATASOURCE_VARIABLE, ...d.variables.map(variable)] },
    panels,
  };
}

// ---- shared variables and filters --------------------------------------------------------------------------

const APP_FROM_APPS: VariableSpec = {
  name: 'app',
  label: 'App',
  description: 'Apps as last listed by the apps collector.',
  kind: 'query',
  query: 'SELECT name FROM apps FINAL WHERE is_deleted = 0 ORDER BY name',
  multi: true,
};

function analyticsVariables(): VariableSpec[] {
  return [
    {
      name: 'timezone',
      label: 'Timezone',
      description: 'Timezones the analytics were collected in (TIMEZONES); hourly buckets are the same in each.',
      kind: 'query',
      query: "SELECT DISTINCT timezone FROM analytics_buckets WHERE kind = 'serverless' ORDER BY timezone",
    },
    {
      name: 'timeframe',
      label: 'Bucket',
      description: 'Bucket size the analytics were collected at (ANALYTICS_TIMEFRAME); the most common first.',
      kind: 'query',
      query: "SELECT timeframe FROM analytics_buckets WHERE kind = 'serverless' GROUP BY timeframe ORDER BY count() DESC, timeframe",
    },
    APP_FROM_APPS,
    {
      name: 'endpoint',
      label: 'Endpoint',
      description: 'Endpoint ids of the selected apps: `owner/app` (the app with all its routes) and `owner/app/route`.',
      kind: 'query',
      query: `SELECT DISTINCT endpoint_id FROM analytics_buckets WHERE kind = 'serverless' AND ${unlessAll(`${appOf('endpoint_id')} IN (${sq('app')})`, 'app')} ORDER BY endpoint_id`,
      multi: true,
    },
  ];
}

/** Analytics rows of the selected timezone and bucket size in the time range. */
const ANALYTICS_WHERE = `kind = 'serverless' AND timezone = ${sq('timezone')} AND timeframe = ${sq('timeframe')}
  AND ${timeFilter('bucket')}`;
/** Per endpoint: the selected endpoints of the selected apps. */
const ENDPOINT_FILTER = `${unlessAll(`endpoint_id IN (${sq('endpoint')})`, 'endpoint')}
  AND ${unlessAll(`${appOf('endpoint_id')} IN (${sq('app')})`, 'app')}`;
/** Per app: the app-level rows (a bare `owner/app` covers all its routes), so nothing is counted twice. */
const APP_SCOPE_FILTER = `endpoint_scope = 'app' AND ${unlessAll(`${appOf('endpoint_id')} IN (${sq('app')})`, 'app')}`;

/** Deployments (revisions created) of the selected apps, as annotations. */
const DEPLOYMENTS = {
  name: 'Deployments',
  iconColor: 'purple',
  sql: `SELECT created_at AS time, name AS tags, 'Deployment' AS title,
  concat(name, ': revision ', revision_id, if(status IS NULL, '', concat(' (', status, ')')), if(deployed_by IS NULL, '', concat(' by ', deployed_by))) AS text
FROM app_revisions FINAL
WHERE ${timeFilter('created_at')} AND ${unlessAll(`name IN (${sq('app')})`, 'app')}
ORDER BY time`,
};

// ---- Cost --------------------------------------------------------------------------------------------------

const USAGE_WHERE = `timezone = ${sq('timezone')} AND timeframe = 'day' AND currency = ${sq('currency')}
  AND ${unlessAll(`app IN (${sq('app')})`, 'app')}`;
/** The local date of the end of the time range, in the selected timezone. */
const TODAY = `WITH ${TO_TIME} AS range_end, toDate(range_end, ${sq('timezone')}) AS today`;

const cost: DashboardSpec = {
  file: 'cost.json',
  uid: 'tallyhouse-cost',
  title: 'Tallyhouse / Cost',
  description:
    'Serverless usage cost from the usage collector (net of discounts, surge included), per local day of the selected timezone. Amounts are in the selected currency.',
  time: { from: 'now-30d', to: 'now' },
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
      // FINAL: a tombstone (a row the platform stopped returning, currency '') is not an option.
      query: "SELECT DISTINCT currency FROM usage_buckets FINAL WHERE timeframe = 'day' ORDER BY currency",
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
        title: 'Month to date and forecast',
        description:
          'Cost of the month of the range end so far; the run rate is the mean daily cost of the 7 whole days before it; the forecast adds the run rate for the rest of the month.',
        w: 12,
        h: 5,
        unit: 'currencyUSD',
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
        title: 'Cost in range',
        description: 'Total cost of the local days that start in the time range, and the mean per day of the range.',
        w: 6,
        h: 5,
        unit: 'currencyUSD',
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
        title: 'Daily cost by app',
        description: 'Cost per local day and app (bars start at local midnight).',
        w: 12,
        h: 9,
        unit: 'currencyUSD',
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
        title: 'Daily cost by machine type',
        description: 'Cost per local day and machine type.',
        w: 12,
        h: 9,
        unit: 'currencyUSD',
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
        title: 'Month to date by app',
        description: 'Cost of the month of the range end so far, per app.',
        w: 12,
        h: 8,
        unit: 'currencyUSD',
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
        title: 'Cost by app in range',
        description: 'Per app: cost, the part at surge prices, machine-hours billed and the share of the total.',
        w: 24,
        h: 9,
        unit: 'currencyUSD',
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
  ],
};

// ---- Latency -----------------------------------------------------------------------------------------------

function percentilePanel(metric: 'duration' | 'prepare_duration', p: 50 | 90 | 99): PanelSpec {
  const what = metric === 'duration' ? 'Duration' : 'Prepare time';
  return {
    type: 'timeseries',
    title: `${what} p${p} by endpoint`,
    description:
      metric === 'duration'
        ? `p${p} of request execution time (ended_at \u2212 sent_at) per bucket, as the platform computed it (percentiles are never averaged).`
        : `p${p} of the time a request waited before a runner took it (sent_at \u2212 started_at), per bucket.`,
    w: 8,
    h: 8,
    unit: 's',
    displayName: '${__field.labels.endpoint_id}',
    options: { legend: { showLegend: true, displayMode: 'list', placement: 'bottom', calcs: [] } },
    queries: [
      {
        format: 'timeseries',
        sql: `SELECT bucket AS time, endpoint_id, p${p}_${metric} AS p${p}
FROM analytics_buckets FINAL
WHERE ${ANALYTICS_WHERE} AND ${ENDPOINT_FILTER}
ORDER BY time, endpoint_id`,
      },
    ],
  };
}

const latency: DashboardSpec = {
  file: 'latency.json',
  uid: 'tallyhouse-latency',
  title: 'Tallyhouse / Latency',
  description: 'Request latency per endpoint from the analytics collector (platform percentiles per bucket) and the requests collector (exact percentiles over the range).',
  time: { from: 'now-24h', to: 'now' },
  variables: analyticsVariables(),
  annotations: [DEPLOYMENTS],
  rows: [
    [percentilePanel('duration', 50), percentilePanel('duration', 90), percentilePanel('duration', 99)],
    [percentilePanel('prepare_duration', 50), percentilePanel('prepare_duration', 90), percentilePanel('prepare_duration', 99)],
    [
      {
        type: 'timeseries',
        title: 'Cold boots by endpoint',
        description: 'Requests that arrived while their runner was booting.',
        w: 12,
        h: 8,
        unit: 'short',
        bars: true,
        stacked: true,
        interval: '1h',
        displayName: '${__field.labels.endpoint_id}',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('bucket')} AS time, endpoint_id, sum(cold_boot_count) AS cold_boots
FROM analytics_buckets FINAL
WHERE ${ANALYTICS_WHERE} AND ${ENDPOINT_FILTER}
GROUP BY time, endpoint_id
ORDER BY time, endpoint_id`,
          },
        ],
      },
      {
        type: 'timeseries',
        title: 'Cold boot wait p90 by endpoint',
        description: 'p90 of how long a cold-boot request waited for its runner, per bucket with cold boots.',
        w: 12,
        h: 8,
        unit: 's',
        displayName: '${__field.labels.endpoint_id}',
        options: { legend: { showLegend: true, displayMode: 'list', placement: 'bottom', calcs: [] } },
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT bucket AS time, endpoint_id, p90_cold_boot_duration AS p90
FROM analytics_buckets FINAL
WHERE ${ANALYTICS_WHERE} AND ${ENDPOINT_FILTER} AND cold_boot_count > 0
ORDER BY time, endpoint_id`,
          },
        ],
      },
    ],
    [
      {
        type: 'table',
        title: 'Request latency in range (from requests)',
        description:
          'Exact percentiles over every collected request of the range, per concrete endpoint: execution time and prepare time. Requests without a runner have no prepare time.',
        w: 24,
        h: 9,
        unit: 's',
        decimals: 3,
        queries: [
          {
            format: 'table',
            sql: `SELECT endpoint_id, count() AS requests,
  quantileExact(0.5)(duration) AS p50, quantileExact(0.9)(duration) AS p90, quantileExact(0.99)(duration) AS p99, max(duration) AS slowest,
  quantileExact(0.9)(dateDiff('millisecond', started_at, sent_at) / 1000) AS prepare_p90
FROM requests FINAL
WHERE ${timeFilter('ended_at')} AND ${ENDPOINT_FILTER}
GROUP BY endpoint_id
ORDER BY p99 DESC`,
          },
        ],
        overrides: [
          { field: 'endpoint_id', unit: 'string' },
          { field: 'requests', unit: 'short', decimals: 0 },
        ],
      },
    ],
  ],
};

// ---- Errors ------------------------------------------------------------------------------------------------

const errors: DashboardSpec = {
  file: 'errors.json',
  uid: 'tallyhouse-errors',
  title: 'Tallyhouse / Errors',
  description: 'Error-type trends from the analytics collector, status codes from the requests collector, and failed queue webhooks.',
  time: { from: 'now-24h', to: 'now' },
  variables: analyticsVariables(),
  annotations: [DEPLOYMENTS],
  rows: [
    [
      {
        type: 'timeseries',
        title: 'Request-level error types',
        description:
          'startup: startup timeouts and scheduling failures; connection: runner connection errors and disconnects; timeout: request timeouts; runtime: runner server errors, incomplete responses and internal errors. Summed over the selected apps.',
        w: 12,
        h: 9,
        unit: 'short',
        bars: true,
        stacked: true,
        interval: '1h',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('bucket')} AS time,
  sum(startup_error_count) AS startup, sum(connection_error_count) AS connection,
  sum(timeout_error_count) AS timeout, sum(runtime_error_count) AS runtime
FROM analytics_buckets FINAL
WHERE ${ANALYTICS_WHERE} AND ${APP_SCOPE_FILTER}
GROUP BY time
ORDER BY time`,
          },
        ],
      },
      {
        type: 'timeseries',
        title: '4xx and 5xx responses',
        description: 'Responses with a 4xx status (the caller\u2019s error) and a 5xx status, summed over the selected apps.',
        w: 12,
        h: 9,
        unit: 'short',
        bars: true,
        stacked: true,
        interval: '1h',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('bucket')} AS time, sum(user_error_count) AS status_4xx, sum(error_count) AS status_5xx
FROM analytics_buckets FINAL
WHERE ${ANALYTICS_WHERE} AND ${APP_SCOPE_FILTER}
GROUP BY time
ORDER BY time`,
          },
        ],
        overrides: [
          { field: 'status_4xx', displayName: '4xx' },
          { field: 'status_5xx', displayName: '5xx' },
        ],
      },
    ],
    [
      {
        type: 'timeseries',
        title: '5xx rate by app',
        description: 'Share of requests answered with a 5xx status, per app.',
        w: 12,
        h: 8,
        unit: 'percentunit',
        min: 0,
        interval: '1h',
        displayName: '${__field.labels.app}',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('bucket')} AS time, ${appOf('endpoint_id')} AS app, sum(error_count) / nullIf(sum(request_count), 0) AS error_rate
FROM analytics_buckets FINAL
WHERE ${ANALYTICS_WHERE} AND ${APP_SCOPE_FILTER}
GROUP BY time, app
ORDER BY time, app`,
          },
        ],
      },
      {
        type: 'timeseries',
        title: 'Error statuses (from requests)',
        description: 'Collected requests with a 4xx or 5xx status, by status code, for the selected endpoints.',
        w: 12,
        h: 8,
        unit: 'short',
        bars: true,
        stacked: true,
        interval: '1h',
        displayName: '${__field.labels.status}',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('ended_at')} AS time, toString(status_code) AS status, count() AS requests
FROM requests FINAL
WHERE ${timeFilter('ended_at')} AND status_code >= 400 AND ${ENDPOINT_FILTER}
GROUP BY time, status
ORDER BY time, status`,
          },
        ],
      },
    ],
    [
      {
        type: 'timeseries',
        title: 'Webhook error types',
        description: 'Queue webhooks received with status ERROR, by the error types in their payload ("(none)" when it names none).',
        w: 12,
        h: 8,
        unit: 'short',
        bars: true,
        stacked: true,
        displayName: '${__field.labels.error_type}',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('received_at')} AS time, arrayJoin(if(empty(error_types), ['(none)'], CAST(error_types, 'Array(String)'))) AS error_type, count() AS deliveries
FROM webhook_deliveries FINAL
WHERE ${timeFilter('received_at')} AND status = 'ERROR'
GROUP BY time, error_type
ORDER BY time, error_type`,
          },
        ],
      },
      {
        type: 'table',
        title: 'Errors by endpoint in range',
        description: 'Totals of the range per endpoint (an app\u2019s own id covers all of its routes).',
        w: 12,
        h: 8,
        unit: 'short',
        decimals: 0,
        queries: [
          {
            format: 'table',
            sql: `SELECT endpoint_id, sum(request_count) AS requests, sum(user_error_count) AS status_4xx, sum(error_count) AS status_5xx,
  sum(startup_error_count) AS startup, sum(connection_error_count) AS connection, sum(timeout_error_count) AS timeout,
  sum(runtime_error_count) AS runtime, status_5xx / nullIf(requests, 0) AS rate_5xx
FROM analytics_buckets FINAL
WHERE ${ANALYTICS_WHERE} AND ${ENDPOINT_FILTER}
GROUP BY endpoint_id
ORDER BY status_5xx DESC, endpoint_id`,
          },
        ],
        overrides: [
          { field: 'endpoint_id', unit: 'string' },
          { field: 'status_4xx', displayName: '4xx' },
          { field: 'status_5xx', displayName: '5xx' },
          { field: 'rate_5xx', unit: 'percentunit', decimals: 2, displayName: '5xx rate' },
        ],
      },
    ],
  ],
};

// ---- Runners -----------------------------------------------------------------------------------------------

/** Scraped samples of one platform metric with its labels, in the time range, for the selected apps. */
/** The highest scraped sample per interval and app of a per-application platform gauge. */
function scrapedPerAppPanel(metric: string, column: string, title: string, what: string): PanelSpec {
  return {
    type: 'timeseries',
    title,
    description: `${what}, from ${metric} (the highest sample per interval).`,
    w: 8,
    h: 8,
    unit: 'short',
    displayName: '${__field.labels.app}',
    queries: [
      {
        format: 'timeseries',
        sql: `SELECT ${timeInterval('s.ts')} AS time, ${appOf("m.labels['application']")} AS app, max(s.value) AS ${column}
FROM ${scraped(metric)}
GROUP BY time, app
ORDER BY time, app`,
      },
    ],
  };
}

function scraped(metric: string): string {
  return `metric_samples AS s
INNER JOIN (SELECT fingerprint, labels FROM metric_series FINAL WHERE metric = '${metric}') AS m ON s.fingerprint = m.fingerprint
WHERE s.metric = '${metric}' AND ${timeFilter('s.ts')}
  AND ${unlessAll(`${appOf("m.labels['application']")} IN (${sq('app')})`, 'app')}`;
}

const RUNNER_WHERE = `timezone = ${sq('timezone')} AND timeframe = ${sq('timeframe')} AND aggregation = ${sq('aggregation')}
  AND ${timeFilter('timestamp')} AND ${unlessAll(`name IN (${sq('app')})`, 'app')}`;

const runners: DashboardSpec = {
  file: 'runners.json',
  uid: 'tallyhouse-runners',
  title: 'Tallyhouse / Runners',
  description: 'Runner history from the runners collector, queue size and concurrency from the scraped platform metrics, runner lifecycle events, and the apps as last listed.',
  time: { from: 'now-24h', to: 'now' },
  variables: [
    {
      name: 'timezone',
      label: 'Timezone',
      description: 'Timezones the runner history was collected in.',
      kind: 'query',
      query: 'SELECT DISTINCT timezone FROM runner_history ORDER BY timezone',
    },
    {
      name: 'timeframe',
      label: 'Bucket',
      description: 'Bucket size of the runner history; the most common first.',
      kind: 'query',
      query: 'SELECT timeframe FROM runner_history GROUP BY timeframe ORDER BY count() DESC, timeframe',
    },
    {
      name: 'aggregation',
      label: 'Aggregation',
      description: 'max: most runners at any moment of the bucket; avg: time-weighted mean.',
      kind: 'custom',
      query: 'max,avg',
    },
    APP_FROM_APPS,
  ],
  annotations: [DEPLOYMENTS],
  rows: [
    [
      {
        type: 'timeseries',
        title: 'Runners by state',
        description: 'Runners per state, summed over the selected apps (with max, the sum of each app\u2019s peak). pending covers PENDING, DOCKER_PULL, SETUP and CRASH_BACKOFF.',
        w: 12,
        h: 9,
        unit: 'short',
        stacked: true,
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT timestamp AS time, sum(running) AS running, sum(idle) AS idle, sum(pending) AS pending, sum(draining) AS draining
FROM runner_history FINAL
WHERE ${RUNNER_WHERE}
GROUP BY time
ORDER BY time`,
          },
        ],
      },
      {
        type: 'timeseries',
        title: 'Running runners by app',
        description: 'Runners in the running state per app.',
        w: 12,
        h: 9,
        unit: 'short',
        displayName: '${__field.labels.app}',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT timestamp AS time, name AS app, running
FROM runner_history FINAL
WHERE ${RUNNER_WHERE}
ORDER BY time, app`,
          },
        ],
      },
    ],
    [
      scrapedPerAppPanel('svc_app_queue_size', 'queue_size', 'Queue size by app (scraped)', 'Requests waiting in the queue'),
      scrapedPerAppPanel('svc_app_concurrent_requests', 'concurrent_requests', 'Concurrent requests by app (scraped)', 'Requests being processed'),
      {
        type: 'timeseries',
        title: 'Runners by state (scraped)',
        description: 'Runners allocated per state, from svc_app_runners, summed over the selected apps per scrape.',
        w: 8,
        h: 8,
        unit: 'short',
        stacked: true,
        displayName: '${__field.labels.state}',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT time, state, max(runners) AS runners
FROM (
  SELECT ${timeInterval('s.ts')} AS time, s.ts AS scraped_at, m.labels['state'] AS state, sum(s.value) AS runners
  FROM ${scraped('svc_app_runners')}
  GROUP BY time, scraped_at, state
)
GROUP BY time, state
ORDER BY time, state`,
          },
        ],
      },
    ],
    [
      {
        type: 'timeseries',
        title: 'Runner lifecycle events',
        description: 'App events per category (runner_pending, docker_pull, setup, runner_started, draining, runner_finished, deployments, config changes).',
        w: 12,
        h: 8,
        unit: 'short',
        bars: true,
        stacked: true,
        displayName: '${__field.labels.category}',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('created_at')} AS time, category, count() AS events
FROM app_events FINAL
WHERE ${timeFilter('created_at')} AND ${unlessAll(`name IN (${sq('app')})`, 'app')}
GROUP BY time, category
ORDER BY time, category`,
          },
        ],
      },
      {
        type: 'table',
        title: 'Runner terminations in range',
        description: 'Runners that finished, per app and termination reason.',
        w: 12,
        h: 8,
        unit: 'short',
        decimals: 0,
        queries: [
          {
            format: 'table',
            sql: `SELECT name AS app, ifNull(termination_reason, '(none)') AS reason, count() AS runners, max(created_at) AS last_at
FROM app_events FINAL
WHERE ${timeFilter('created_at')} AND state = 'TERMINATED' AND ${unlessAll(`name IN (${sq('app')})`, 'app')}
GROUP BY app, reason
ORDER BY runners DESC, app, reason`,
          },
        ],
        overrides: [
          { field: 'app', unit: 'string' },
          { field: 'reason', unit: 'string' },
        ],
      },
    ],
    [
      {
        type: 'table',
        title: 'Apps (last listing)',
        description: 'Each app as the apps collector last listed it: machine type, runners, queue and scaling settings.',
        w: 14,
        h: 8,
        unit: 'short',
        queries: [
          {
            format: 'table',
            sql: `SELECT name AS app, environment, machine_type, active_runners, queue_size, min_concurrency, max_concurrency,
  keep_alive, request_timeout, observed_at
FROM apps FINAL
WHERE is_deleted = 0 AND ${unlessAll(`name IN (${sq('app')})`, 'app')}
ORDER BY app`,
          },
        ],
        overrides: [
          { field: 'app', unit: 'string' },
          { field: 'environment', unit: 'string' },
          { field: 'machine_type', unit: 'string' },
          { field: 'keep_alive', unit: 's' },
          { field: 'request_timeout', unit: 's' },
        ],
      },
      {
        type: 'table',
        title: 'Latest revisions',
        description: 'The 50 most recent revisions of the selected apps (whatever the time range): status, whether it serves now, who deployed it.',
        w: 10,
        h: 8,
        unit: 'string',
        queries: [
          {
            format: 'table',
            sql: `SELECT created_at, name AS app, revision_id, status, is_current, deployed_by, message
FROM app_revisions FINAL
WHERE ${unlessAll(`name IN (${sq('app')})`, 'app')}
ORDER BY created_at DESC
LIMIT 50`,
          },
        ],
      },
    ],
  ],
};

// ---- Logs --------------------------------------------------------------------------------------------------

const LOG_FILTER = `${timeFilter('timestamp')} AND ${unlessAll(`app IN (${sq('app')})`, 'app')}
  AND ${unlessAll(`level IN (${sq('level')})`, 'level')}`;
const LOG_SEARCH = `${unlessAll(`request_id = ${sq('request_id')}`, 'request_id')}
  AND ${unlessAll(`positionCaseInsensitive(message, ${sq('search')}) > 0`, 'search')}`;

const logs: DashboardSpec = {
  file: 'logs.json',
  uid: 'tallyhouse-logs',
  title: 'Tallyhouse / Logs',
  description: 'App log lines received by the log drain.',
  time: { from: 'now-6h', to: 'now' },
  variables: [
    {
      name: 'app',
      label: 'App',
      description: 'Apps with log lines in the time range.',
      kind: 'query',
      query: `SELECT DISTINCT app FROM logs WHERE ${timeFilter('timestamp')} ORDER BY app`,
      multi: true,
      onTimeRange: true,
    },
    {
      name: 'level',
      label: 'Level',
      description: 'Log levels as sent.',
      kind: 'query',
      query: `SELECT DISTINCT level FROM logs WHERE ${timeFilter('timestamp')} ORDER BY level`,
      multi: true,
      onTimeRange: true,
    },
    { name: 'request_id', label: 'Request id', description: 'Only the lines of this request (empty: all).', kind: 'textbox' },
    { name: 'search', label: 'Search', description: 'Only lines whose message contains this text, ignoring case (empty: all).', kind: 'textbox' },
  ],
  rows: [
    [
      {
        type: 'timeseries',
        title: 'Log volume by level',
        description: 'Lines per interval and level.',
        w: 12,
        h: 8,
        unit: 'short',
        bars: true,
        stacked: true,
        displayName: '${__field.labels.level}',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('timestamp')} AS time, level, count() AS lines
FROM logs
WHERE ${LOG_FILTER}
GROUP BY time, level
ORDER BY time, level`,
          },
        ],
      },
      {
        type: 'timeseries',
        title: 'Log rate by app',
        description: 'Lines per second, per app.',
        w: 6,
        h: 8,
        unit: 'short',
        displayName: '${__field.labels.app}',
        options: { legend: { showLegend: true, displayMode: 'list', placement: 'bottom', calcs: [] } },
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('timestamp')} AS time, app, count() / ${INTERVAL_S} AS lines_per_second
FROM logs
WHERE ${LOG_FILTER}
GROUP BY time, app
ORDER BY time, app`,
          },
        ],
      },
      {
        type: 'bargauge',
        title: 'Error lines by app',
        description: 'Lines at ERROR level or above in the range, per app.',
        w: 6,
        h: 8,
        unit: 'short',
        thresholds: [
          { color: 'orange', value: null },
          { color: 'red', value: 100 },
        ],
        queries: [
          {
            format: 'table',
            sql: `SELECT app, count() AS error_lines
FROM logs
WHERE ${timeFilter('timestamp')} AND ${unlessAll(`app IN (${sq('app')})`, 'app')}
  AND upper(level) IN ('ERROR', 'CRITICAL', 'FATAL')
GROUP BY app
ORDER BY error_lines DESC, app`,
          },
        ],
      },
    ],
    [
      {
        type: 'table',
        title: 'Latest errors',
        description: 'The 100 most recent lines at ERROR level or above of the selected apps.',
        w: 24,
        h: 8,
        unit: 'string',
        queries: [
          {
            format: 'table',
            sql: `SELECT timestamp, app, level, request_id, worker, message
FROM logs
WHERE ${timeFilter('timestamp')} AND ${unlessAll(`app IN (${sq('app')})`, 'app')}
  AND upper(level) IN ('ERROR', 'CRITICAL', 'FATAL')
ORDER BY timestamp DESC
LIMIT 100`,
          },
        ],
      },
    ],
    [
      {
        type: 'table',
        title: 'Log lines',
        description: 'Lines of the selected apps and levels, filtered by the request id and search boxes (newest first, at most 1,000).',
        w: 24,
        h: 12,
        unit: 'string',
        queries: [
          {
            format: 'table',
            sql: `SELECT timestamp, app, level, endpoint, request_id, worker, source, message
FROM logs
WHERE ${LOG_FILTER}
  AND ${LOG_SEARCH}
ORDER BY timestamp DESC
LIMIT 1000`,
          },
        ],
      },
    ],
    [
      {
        type: 'logs',
        title: 'Log stream',
        description: 'The same lines in Grafana\u2019s log view (expand a line for its request, endpoint and worker).',
        w: 24,
        h: 12,
        unit: 'string',
        queries: [
          {
            format: 'logs',
            sql: `SELECT timestamp, message AS body, level, app, request_id, endpoint, worker
FROM logs
WHERE ${LOG_FILTER}
  AND ${LOG_SEARCH}
ORDER BY timestamp DESC
LIMIT 1000`,
          },
        ],
      },
    ],
  ],
};

// ---- Pipeline health ---------------------------------------------------------------------------------------

const JOB_FILTER = unlessAll(`job IN (${sq('job')})`, 'job');

const pipeline: DashboardSpec = {
  file: 'pipeline.json',
  uid: 'tallyhouse-pipeline',
  title: 'Tallyhouse / Pipeline health',
  description:
    'Tallyhouse itself: collector job runs, the log drain, rows refused by the store, scrapes. The spool panel needs Tallyhouse\u2019s own /metrics among the scrape targets.',
  time: { from: 'now-24h', to: 'now' },
  variables: [
    {
      name: 'job',
      label: 'Job',
      description: 'Collector jobs that have run.',
      kind: 'query',
      query: 'SELECT DISTINCT job FROM job_runs ORDER BY job',
      multi: true,
    },
  ],
  rows: [
    [
      {
        type: 'bargauge',
        title: 'Seconds since last success',
        description: 'Per job, time since its last successful run finished (an alert fires at twice the job\u2019s interval).',
        w: 8,
        h: 8,
        unit: 's',
        thresholds: [
          { color: 'green', value: null },
          { color: 'orange', value: 3600 },
          { color: 'red', value: 7200 },
        ],
        queries: [
          {
            format: 'table',
            sql: `SELECT job, dateDiff('second', max(finished_at), now64(3)) AS seconds_since_success
FROM job_runs
WHERE status = 'ok' AND ${JOB_FILTER}
GROUP BY job
ORDER BY job`,
          },
        ],
      },
      {
        type: 'timeseries',
        title: 'Job runs by outcome',
        description: 'Runs per interval: ok, failed, skipped (the previous run was still going).',
        w: 8,
        h: 8,
        unit: 'short',
        bars: true,
        stacked: true,
        displayName: '${__field.labels.status}',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('started_at')} AS time, status, count() AS runs
FROM job_runs
WHERE ${timeFilter('started_at')} AND ${JOB_FILTER}
GROUP BY time, status
ORDER BY time, status`,
          },
        ],
      },
      {
        type: 'timeseries',
        title: 'Rows written by job',
        description: 'Rows each job wrote to the store per interval.',
        w: 8,
        h: 8,
        unit: 'short',
        bars: true,
        stacked: true,
        displayName: '${__field.labels.job}',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('started_at')} AS time, job, sum(rows) AS rows
FROM job_runs
WHERE ${timeFilter('started_at')} AND ${JOB_FILTER}
GROUP BY time, job
ORDER BY time, job`,
          },
        ],
      },
    ],
    [
      {
        type: 'table',
        title: 'Failed runs',
        description: 'The 50 most recent failed runs in the range, with the reason.',
        w: 16,
        h: 8,
        unit: 'string',
        queries: [
          {
            format: 'table',
            sql: `SELECT started_at, job, trigger, retries, dateDiff('millisecond', started_at, finished_at) / 1000 AS duration, error
FROM job_runs
WHERE status = 'failed' AND started_at >= ${FROM_TIME} AND started_at <= ${TO_TIME} AND ${JOB_FILTER}
ORDER BY started_at DESC
LIMIT 50`,
          },
        ],
        overrides: [
          { field: 'retries', unit: 'short' },
          { field: 'duration', unit: 's' },
        ],
      },
      {
        type: 'timeseries',
        title: 'Job duration',
        description: 'Longest run per interval and job.',
        w: 8,
        h: 8,
        unit: 's',
        displayName: '${__field.labels.job}',
        options: { legend: { showLegend: true, displayMode: 'list', placement: 'bottom', calcs: [] } },
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('started_at')} AS time, job, max(dateDiff('millisecond', started_at, finished_at)) / 1000 AS duration
FROM job_runs
WHERE ${timeFilter('started_at')} AND ${JOB_FILTER}
GROUP BY time, job
ORDER BY time, job`,
          },
        ],
      },
    ],
    [
      {
        type: 'timeseries',
        title: 'Log drain throughput',
        description: 'Lines per second the drain accepted (stored in logs) and rejected (kept in ingest_rejects).',
        w: 12,
        h: 8,
        unit: 'short',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('received_at')} AS time, count() / ${INTERVAL_S} AS accepted
FROM logs
WHERE ${timeFilter('received_at')}
GROUP BY time
ORDER BY time`,
          },
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('rejected_at')} AS time, count() / ${INTERVAL_S} AS rejected
FROM ingest_rejects
WHERE ${timeFilter('rejected_at')} AND source = 'log_drain'
GROUP BY time
ORDER BY time`,
          },
        ],
      },
      {
        type: 'stat',
        title: 'Drain reject ratio',
        description: 'Rejected lines as a share of all lines the drain answered in the range.',
        w: 4,
        h: 8,
        unit: 'percentunit',
        decimals: 2,
        thresholds: [
          { color: 'green', value: null },
          { color: 'orange', value: 0.01 },
          { color: 'red', value: 0.05 },
        ],
        queries: [
          {
            format: 'table',
            sql: `SELECT rejected / nullIf(rejected + accepted, 0) AS reject_ratio
FROM (SELECT count() AS rejected FROM ingest_rejects WHERE ${timeFilter('rejected_at')} AND source = 'log_drain') AS r
CROSS JOIN (SELECT count() AS accepted FROM logs WHERE ${timeFilter('received_at')}) AS a`,
          },
        ],
      },
      {
        type: 'timeseries',
        title: 'Drain spool (scraped)',
        description: 'Bytes in the drain spool not yet confirmed by the store, from tallyhouse_drain_spool_bytes; it should return to 0.',
        w: 8,
        h: 8,
        unit: 'bytes',
        displayName: '${__field.labels.instance}',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('s.ts')} AS time, m.labels['instance'] AS instance, max(s.value) AS spool_bytes
FROM metric_samples AS s
INNER JOIN (SELECT fingerprint, labels FROM metric_series FINAL WHERE metric = 'tallyhouse_drain_spool_bytes') AS m ON s.fingerprint = m.fingerprint
WHERE s.metric = 'tallyhouse_drain_spool_bytes' AND ${timeFilter('s.ts')}
GROUP BY time, instance
ORDER BY time, instance`,
          },
        ],
      },
    ],
    [
      {
        type: 'table',
        title: 'Rows refused by source and reason',
        description: 'Rows and drain lines kept in the dead-letter table (ingest_rejects) in the range.',
        w: 12,
        h: 8,
        unit: 'short',
        decimals: 0,
        queries: [
          {
            format: 'table',
            sql: `SELECT source, splitByChar(':', reason)[1] AS reason, count() AS rows, max(rejected_at) AS last_at
FROM ingest_rejects
WHERE ${timeFilter('rejected_at')}
GROUP BY source, reason
ORDER BY rows DESC, source, reason`,
          },
        ],
        overrides: [
          { field: 'source', unit: 'string' },
          { field: 'reason', unit: 'string' },
        ],
      },
      {
        type: 'table',
        title: 'Checkpoints',
        description: 'Where each job got to, per key (a timezone, an endpoint, a backfill).',
        w: 12,
        h: 8,
        unit: 'string',
        queries: [
          {
            format: 'table',
            sql: `SELECT job, key, value, updated_at
FROM checkpoints FINAL
WHERE ${JOB_FILTER}
ORDER BY job, key`,
          },
        ],
      },
    ],
    [
      {
        type: 'state-timeline',
        title: 'Scrape targets up',
        description: 'Per target, whether its scrapes in the interval all succeeded (UP) or any failed (DOWN).',
        w: 12,
        h: 8,
        unit: 'none',
        mappings: [
          {
            type: 'value',
            options: { '0': { text: 'DOWN', color: 'red', index: 0 }, '1': { text: 'UP', color: 'green', index: 1 } },
          },
        ],
        displayName: '${__field.labels.target}',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('scraped_at')} AS time, concat(job, ' ', instance) AS target, min(up) AS up
FROM scrapes
WHERE ${timeFilter('scraped_at')}
GROUP BY time, target
ORDER BY time, target`,
          },
        ],
      },
      {
        type: 'table',
        title: 'Scrape targets',
        description: 'Per target in the range: the last scrape\u2019s outcome, samples and error, and how many scrapes failed.',
        w: 12,
        h: 8,
        unit: 'short',
        queries: [
          {
            format: 'table',
            sql: `SELECT job, instance, argMax(up, scraped_at) AS last_up, max(scraped_at) AS last_scrape, argMax(samples, scraped_at) AS samples,
  countIf(up = 0) AS failed_scrapes, argMax(error, scraped_at) AS last_error
FROM scrapes
WHERE ${timeFilter('scraped_at')}
GROUP BY job, instance
ORDER BY job, instance`,
          },
        ],
        overrides: [
          { field: 'job', unit: 'string' },
          { field: 'instance', unit: 'string' },
          { field: 'last_up', unit: 'none', displayName: 'up' },
          { field: 'last_scrape', unit: 'dateTimeAsIso' },
          { field: 'last_error', unit: 'string' },
        ],
      },
    ],
  ],
};

export const DASHBOARD_SPECS: readonly DashboardSpec[] = [cost, latency, errors, runners, logs, pipeline];

/** Every dashboard model, keyed by its file name in dashboards/. */
export function buildDashboards(): Array<{ file: string; model: JsonObject }> {
  return DASHBOARD_SPECS.map((d) => ({ file: d.file, model: dashboard(d) }));
}

/** The committed text of a model: 2-space JSON with a trailing newline. */
export function dashboardText(model: JsonObject): string {
  return `${JSON.stringify(model, null, 2)}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const dir = fileURLToPath(new URL('.', import.meta.url));
  for (const { file, model } of buildDashboards()) {
    writeFileSync(`${dir}${file}`, dashboardText(model));
    process.stdout.write(`wrote dashboards/${file}\n`);
  }
}
