// The dashboard "Tallyhouse / Pipeline health" (dashboards/pipeline.json).
import type { DashboardSpec } from '../lib/spec.js';
import { FROM_TIME, INTERVAL_S, sq, timeFilter, timeInterval, TO_TIME, unlessAll } from '../lib/sql.js';

const JOB_FILTER = unlessAll(`job IN (${sq('job')})`, 'job');

export const pipeline: DashboardSpec = {
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
        // `logs FINAL`: a record stored twice (a retried delivery, the drain and history, sql/023's copy) is two rows
        // until a merge; the panel counts records.
        description: 'Lines per second the drain accepted (stored in logs) and rejected (kept in ingest_rejects).',
        w: 12,
        h: 8,
        unit: 'short',
        queries: [
          {
            format: 'timeseries',
            sql: `SELECT ${timeInterval('received_at')} AS time, count() / ${INTERVAL_S} AS accepted
FROM logs FINAL
WHERE ${timeFilter('received_at')} AND origin = 'drain'
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
CROSS JOIN (SELECT count() AS accepted FROM logs FINAL WHERE ${timeFilter('received_at')} AND origin = 'drain') AS a`,
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
