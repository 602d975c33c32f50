import { z } from 'zod';
import { chNumber, defineTable, namedQuery } from './table.js';

export const RunnerHistoryRow = z.object({
  owner: z.string(),
  name: z.string(),
  endpoint_id: z.string(),
  timezone: z.string(),
  timeframe: z.string(),
  aggregation: z.string(),
  timestamp: z.string(), // DateTime64(3) UTC text
  timestamp_offset_minutes: z.number().int(),
  running: z.number().nullable(),
  idle: z.number().nullable(),
  pending: z.number().nullable(),
  draining: z.number().nullable(),
  raw: z.string(),
  version: z.number().int().nonnegative(),
  collected_at: z.string(),
});
export type RunnerHistoryRow = z.input<typeof RunnerHistoryRow>;

export const runnerHistory = defineTable('runner_history', RunnerHistoryRow);

/** Parameters of the runner-history reads: app endpoint ids (`owner/name`; empty: all), [from, to) on the bucket start. */
export interface RunnerHistoryParams extends Record<string, unknown> {
  timezone: string;
  timeframe: string;
  aggregation: string;
  from: string;
  to: string;
  endpoint_ids: string[];
}

/** Runner counts by state per app and bucket (GET /runners, the on-call runner panels). */
export const runnerHistoryByBucket = namedQuery(
  'runner_history_by_bucket',
  `SELECT endpoint_id, owner, name, toString(timestamp) AS timestamp_utc, timestamp_offset_minutes, running, idle, pending, draining
   FROM runner_history FINAL
   WHERE timezone = {timezone:String} AND timeframe = {timeframe:String} AND aggregation = {aggregation:String}
     AND timestamp >= parseDateTime64BestEffort({from:String}, 3, 'UTC') AND timestamp < parseDateTime64BestEffort({to:String}, 3, 'UTC')
     AND (length({endpoint_ids:Array(String)}) = 0 OR has({endpoint_ids:Array(String)}, endpoint_id))
   ORDER BY endpoint_id, timestamp`,
  z.object({
    endpoint_id: z.string(),
    owner: z.string(),
    name: z.string(),
    timestamp_utc: z.string(), // 'YYYY-MM-DD hh:mm:ss.sss' UTC
    timestamp_offset_minutes: chNumber,
    running: chNumber.nullable(),
    idle: chNumber.nullable(),
    pending: chNumber.nullable(),
    draining: chNumber.nullable(),
  }),
);

/** The peak of each state over a range per app, from `max` buckets (a max of maxima is still a maximum). */
export const runnerPeaks = namedQuery(
  'runner_peaks',
  `SELECT endpoint_id, max(running) AS running, max(idle) AS idle, max(pending) AS pending, max(draining) AS draining, count() AS buckets
   FROM runner_history FINAL
   WHERE timezone = {timezone:String} AND timeframe = {timeframe:String} AND aggregation = 'max'
     AND timestamp >= parseDateTime64BestEffort({from:String}, 3, 'UTC') AND timestamp < parseDateTime64BestEffort({to:String}, 3, 'UTC')
     AND (length({endpoint_ids:Array(String)}) = 0 OR has({endpoint_ids:Array(String)}, endpoint_id))
   GROUP BY endpoint_id
   ORDER BY endpoint_id`,
  z.object({
    endpoint_id: z.string(),
    running: chNumber.nullable(),
    idle: chNumber.nullable(),
    pending: chNumber.nullable(),
    draining: chNumber.nullable(),
    buckets: chNumber,
  }),
);

/** Hourly `avg` runner counts per app with the bucket's local date and hour, for local days in [from, to) (efficiency). */
export const runnerHoursByLocalDay = namedQuery(
  'runner_hours_by_local_day',
  `SELECT name AS app, toString(toDate(timestamp + toIntervalMinute(timestamp_offset_minutes))) AS date,
          toHour(timestamp + toIntervalMinute(timestamp_offset_minutes)) AS hour, running, idle, draining
   FROM runner_history FINAL
   WHERE timezone = {timezone:String} AND timeframe = 'hour' AND aggregation = 'avg'
     AND toDate(timestamp + toIntervalMinute(timestamp_offset_minutes)) >= {from:Date}
     AND toDate(timestamp + toIntervalMinute(timestamp_offset_minutes)) < {to:Date}
   ORDER BY app, timestamp`,
  z.object({ app: z.string(), date: z.string(), hour: chNumber, running: chNumber.nullable(), idle: chNumber.nullable(), draining: chNumber.nullable() }),
);
