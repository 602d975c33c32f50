// The dashboard "Tallyhouse / Errors" (dashboards/errors.json).
import type { DashboardSpec } from '../lib/spec.js';
import { appOf, sq, timeFilter, timeInterval } from '../lib/sql.js';
import { ANALYTICS_WHERE, analyticsVariables, APP_SCOPE_FILTER, DEPLOYMENTS, ENDPOINT_FILTER } from './shared.js';
import { ERROR_ANOMALIES } from './anomaly-annotations.js';

export const errors: DashboardSpec = {
  file: 'errors.json',
  uid: 'tallyhouse-errors',
  title: 'Tallyhouse / Errors',
  description: 'Error-type trends from the analytics collector, status codes from the requests collector, and failed queue webhooks.',
  time: { from: 'now-24h', to: 'now' },
  variables: analyticsVariables(),
  annotations: [DEPLOYMENTS, ERROR_ANOMALIES],
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
    [
      {
        type: 'table',
        title: 'Model endpoints you call: requests, errors and latency',
        description:
          'Your own calls to model endpoints (models analytics) in the range: request count, 4xx and 5xx, the 5xx share and the worst bucket p95 and p99 latency in seconds.',
        w: 24,
        h: 8,
        unit: 'short',
        queries: [
          {
            format: 'table',
            sql: `SELECT endpoint_id, sum(request_count) AS requests, sum(user_error_count) AS status_4xx, sum(error_count) AS status_5xx,
  sum(error_count) / nullIf(sum(request_count), 0) AS error_rate, max(p95_duration) AS worst_p95, max(p99_duration) AS worst_p99
FROM analytics_buckets FINAL
WHERE kind = 'models' AND timezone = ${sq('timezone')} AND timeframe = ${sq('timeframe')} AND ${timeFilter('bucket')}
GROUP BY endpoint_id
ORDER BY requests DESC`,
          },
        ],
        overrides: [
          { field: 'endpoint_id', unit: 'string' },
          { field: 'error_rate', unit: 'percentunit', decimals: 1 },
          { field: 'worst_p95', unit: 's', decimals: 2 },
          { field: 'worst_p99', unit: 's', decimals: 2 },
        ],
      },
    ],
    [
      {
        type: 'timeseries',
        title: 'Front-end exceptions (Faro)',
        description: 'Exceptions your web front ends reported (Grafana Faro receiver), per front-end app: beside the platform error types above, what users saw.',
        w: 12,
        h: 8,
        unit: 'short',
        bars: true,
        stacked: true,
        interval: '1h',
        displayName: '${__field.labels.app}',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('timestamp')} AS time, app, count() AS exceptions
FROM faro_items
WHERE kind = 'exception' AND ${timeFilter('timestamp')}
GROUP BY time, app
ORDER BY time, app`,
          },
        ],
      },
      {
        type: 'table',
        title: 'Front-end sessions with failed platform requests',
        description: 'Sessions whose front end mentioned a platform request that failed (5xx), with the request count and exceptions.',
        w: 12,
        h: 8,
        unit: 'short',
        queries: [
          {
            format: 'table',
            sql: `SELECT f.session_id AS session, any(f.app) AS app, uniqExact(f.request_id) AS requests, countIf(r.status_code >= 500) AS failed_requests
FROM (SELECT DISTINCT session_id, app, request_id FROM faro_items WHERE request_id != '' AND ${timeFilter('timestamp')}) AS f
LEFT JOIN (SELECT request_id, status_code FROM requests FINAL WHERE request_id IN (SELECT request_id FROM faro_items WHERE request_id != '' AND ${timeFilter('timestamp')})) AS r
ON r.request_id = f.request_id
GROUP BY session
ORDER BY failed_requests DESC, requests DESC
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
