import { z } from 'zod';
import { chNumber, defineTable, namedQuery } from './table.js';

/** One runner's metrics at one scrape, for one GPU (sql/025_create_runner_metrics.sql). */
export const RunnerMetricRow = z.object({
  runner_id: z.string(),
  owner: z.string(),
  name: z.string(),
  endpoint_id: z.string(),
  machine_type: z.string(),
  ts: z.string(), // DateTime64(3) UTC text
  gpu: z.number().int(),
  cpu_seconds_total: z.number().nullable(),
  memory_bytes: z.number().nullable(),
  gpu_utilization: z.number().nullable(),
  vram_used_bytes: z.number().nullable(),
  vram_total_bytes: z.number().nullable(),
  // Samples of families without a column, as delivered (sql/033): JSON [{name, labels, value}], on the first row.
  other: z.string().optional(),
  collected_at: z.string(),
});
export type RunnerMetricRow = z.input<typeof RunnerMetricRow>;

export const runnerMetrics = defineTable('runner_metrics', RunnerMetricRow);

/**
 * Runners to scrape: ids from `runner_started` events and from requests since `since`, less those with a
 * `runner_finished` or `runner_failed` event (gone: the platform would answer 404). Apps limited to `endpoint_ids`
 * (empty: all).
 */
export const runnerIdsToScrape = namedQuery(
  'runner_ids_to_scrape',
  `SELECT runner_id, any(endpoint_id) AS endpoint_id FROM (
     SELECT runner_id, endpoint_id FROM app_events
     WHERE category = 'runner_started' AND runner_id IS NOT NULL AND created_at >= parseDateTime64BestEffort({since:String}, 3, 'UTC')
       AND (length({endpoint_ids:Array(String)}) = 0 OR has({endpoint_ids:Array(String)}, endpoint_id))
     UNION ALL
     SELECT runner_id, concat(splitByChar('/', endpoint_id)[1], '/', splitByChar('/', endpoint_id)[2]) AS endpoint_id FROM requests
     WHERE runner_id IS NOT NULL AND runner_id != '' AND ended_at >= parseDateTime64BestEffort({since:String}, 3, 'UTC')
       AND (length({endpoint_ids:Array(String)}) = 0
            OR has({endpoint_ids:Array(String)}, concat(splitByChar('/', endpoint_id)[1], '/', splitByChar('/', endpoint_id)[2])))
   )
   WHERE runner_id NOT IN (
     SELECT runner_id FROM app_events
     WHERE category IN ('runner_finished', 'runner_failed') AND runner_id IS NOT NULL
       AND created_at >= parseDateTime64BestEffort({since:String}, 3, 'UTC')
   )
   GROUP BY runner_id
   ORDER BY runner_id`,
  z.object({ runner_id: z.string(), endpoint_id: z.string() }),
);

/** Per app name, machine type and local day: GPU samples and utilisation, and the largest VRAM one runner used. */
export const runnerMetricsByDay = namedQuery(
  'runner_metrics_by_day',
  `SELECT name AS app, machine_type, toString(toDate(ts, {timezone:String})) AS date,
          sum(gpus) AS gpu_samples, sum(util) AS gpu_utilization_sum,
          max(used) AS vram_peak_used_bytes, argMax(total, used) AS vram_total_bytes,
          count() AS samples, uniqExact(runner_id) AS runners
   FROM (
     SELECT name, machine_type, runner_id, ts, countIf(gpu >= 0) AS gpus, sum(ifNull(gpu_utilization, 0)) AS util,
            sum(ifNull(vram_used_bytes, 0)) AS used, sum(ifNull(vram_total_bytes, 0)) AS total
     FROM runner_metrics FINAL
     WHERE ts >= parseDateTime64BestEffort({from:String}, 3, 'UTC') AND ts < parseDateTime64BestEffort({to:String}, 3, 'UTC')
     GROUP BY name, machine_type, runner_id, ts
   )
   GROUP BY app, machine_type, date
   ORDER BY date, app, machine_type`,
  z.object({
    app: z.string(),
    machine_type: z.string(),
    date: z.string(),
    gpu_samples: chNumber,
    gpu_utilization_sum: chNumber,
    vram_peak_used_bytes: chNumber,
    vram_total_bytes: chNumber,
    samples: chNumber,
    runners: chNumber,
  }),
);

/** Per app over [from, to): the largest VRAM one runner used (summed over its GPUs), with the evidence behind it. */
export const runnerVramPeaks = namedQuery(
  'runner_vram_peaks',
  `SELECT name AS app, max(used) AS peak_used_bytes, count() AS samples, uniqExact(runner_id) AS runners,
          toString(min(ts)) AS first_sample, toString(max(ts)) AS last_sample
   FROM (
     SELECT name, runner_id, ts, sum(ifNull(vram_used_bytes, 0)) AS used
     FROM runner_metrics FINAL
     WHERE gpu >= 0 AND ts >= parseDateTime64BestEffort({from:String}, 3, 'UTC') AND ts < parseDateTime64BestEffort({to:String}, 3, 'UTC')
     GROUP BY name, runner_id, ts
   )
   GROUP BY app
   ORDER BY app`,
  z.object({ app: z.string(), peak_used_bytes: chNumber, samples: chNumber, runners: chNumber, first_sample: z.string(), last_sample: z.string() }),
);

/** VRAM of one machine of each type (summed over its GPUs), as its runners reported it (every sample kept). */
export const machineVram = namedQuery(
  'machine_vram',
  `SELECT machine_type, max(total) AS vram_total_bytes FROM (
     SELECT machine_type, runner_id, ts, sum(ifNull(vram_total_bytes, 0)) AS total
     FROM runner_metrics FINAL
     WHERE gpu >= 0
     GROUP BY machine_type, runner_id, ts
   )
   GROUP BY machine_type
   ORDER BY machine_type`,
  z.object({ machine_type: z.string(), vram_total_bytes: chNumber }),
);
