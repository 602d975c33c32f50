// The dashboard "Tallyhouse / Logs" (dashboards/logs.json).
import type { DashboardSpec } from '../lib/spec.js';
import { INTERVAL_S, sq, timeFilter, timeInterval, unlessAll } from '../lib/sql.js';

// Panels read `logs FINAL`: a record stored twice (the drain and history, two history fills) is two rows until a
// background merge collapses them (sql/023), and a panel counts or lists records.

const LOG_FILTER = `${timeFilter('timestamp')} AND ${unlessAll(`app IN (${sq('app')})`, 'app')}
  AND ${unlessAll(`level IN (${sq('level')})`, 'level')}`;
const LOG_SEARCH = `${unlessAll(`request_id = ${sq('request_id')}`, 'request_id')}
  AND ${unlessAll(`positionCaseInsensitive(message, ${sq('search')}) > 0`, 'search')}`;

export const logs: DashboardSpec = {
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
FROM logs FINAL
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
FROM logs FINAL
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
FROM logs FINAL
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
FROM logs FINAL
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
FROM logs FINAL
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
FROM logs FINAL
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
