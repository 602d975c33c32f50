// The dashboard "Tallyhouse / Runners" (dashboards/runners.json).
import type { DashboardSpec, PanelSpec } from '../lib/spec.js';
import { appOf, sq, timeFilter, timeInterval, unlessAll } from '../lib/sql.js';
import { APP_FROM_APPS, DEPLOYMENTS } from './shared.js';

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

/** Scraped samples of one platform metric with its labels, in the time range, for the selected apps. */
function scraped(metric: string): string {
  return `metric_samples AS s
INNER JOIN (SELECT fingerprint, labels FROM metric_series FINAL WHERE metric = '${metric}') AS m ON s.fingerprint = m.fingerprint
WHERE s.metric = '${metric}' AND ${timeFilter('s.ts')}
  AND ${unlessAll(`${appOf("m.labels['application']")} IN (${sq('app')})`, 'app')}`;
}

const RUNNER_WHERE = `timezone = ${sq('timezone')} AND timeframe = ${sq('timeframe')} AND aggregation = ${sq('aggregation')}
  AND ${timeFilter('timestamp')} AND ${unlessAll(`name IN (${sq('app')})`, 'app')}`;

export const runners: DashboardSpec = {
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
        w: 8,
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
        w: 8,
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
      {
        type: 'timeseries',
        title: 'Queue backlog by app',
        description: 'Requests waiting in each app\u2019s queue (GET .../queue, sampled every minute by the queue job into queue_samples), the highest sample per interval. The alert TallyhouseQueueBacklogGrowing fires when it grows for 15 minutes.',
        w: 8,
        h: 9,
        unit: 'short',
        displayName: '${__field.labels.app}',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('sampled_at')} AS time, ${appOf('endpoint_id')} AS app, max(queue_size) AS queue_size
FROM queue_samples
WHERE ${timeFilter('sampled_at')} AND ${unlessAll(`${appOf('endpoint_id')} IN (${sq('app')})`, 'app')}
GROUP BY time, app
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
