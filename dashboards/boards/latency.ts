// The dashboard "Tallyhouse / Latency" (dashboards/latency.json).
import type { DashboardSpec, PanelSpec } from '../lib/spec.js';
import { timeFilter, timeInterval } from '../lib/sql.js';
import { ANALYTICS_WHERE, analyticsVariables, DEPLOYMENTS, ENDPOINT_FILTER } from './shared.js';

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

export const latency: DashboardSpec = {
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
