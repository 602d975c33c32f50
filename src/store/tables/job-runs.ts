import { z } from 'zod';
import { defineTable, namedQuery, chNumber } from './table.js';

export const JobRunRow = z.object({
  job: z.string(),
  run_id: z.uuid(),
  trigger: z.enum(['schedule', 'startup', 'manual']),
  started_at: z.string(), // DateTime64(3) text
  finished_at: z.string(),
  status: z.enum(['ok', 'failed', 'skipped']),
  rows: z.number().int().nonnegative(),
  retries: z.number().int().nonnegative(),
  error: z.string(),
  /** What an ok run wants known (an optional endpoint not served, say); empty otherwise. */
  note: z.string().default(''),
});
export type JobRunRow = z.input<typeof JobRunRow>;

export const jobRuns = defineTable('job_runs', JobRunRow);

export const lastSuccessByJob = namedQuery(
  'last_success_by_job',
  `SELECT job, toUnixTimestamp64Milli(max(finished_at)) AS finished_ms
   FROM job_runs WHERE status = 'ok' GROUP BY job`,
  z.object({ job: z.string(), finished_ms: chNumber }),
);

export const recentRuns = namedQuery(
  'recent_job_runs',
  `SELECT job, toString(run_id) AS run_id, trigger, toString(started_at) AS started_at, toString(finished_at) AS finished_at,
          status, rows, retries, error, note
   FROM job_runs WHERE job = {job:String} ORDER BY started_at DESC LIMIT {limit:UInt32}`,
  z.object({
    job: z.string(),
    run_id: z.string(),
    trigger: z.string(),
    started_at: z.string(),
    finished_at: z.string(),
    status: z.string(),
    rows: chNumber,
    retries: chNumber,
    error: z.string(),
    note: z.string(),
  }),
);
