import type { z } from 'zod';
import type { Logger } from '../log.js';
import type { Runtime } from '../runtime.js';
import type { CallContext, KeyScope, PlatformClient } from '../platform/index.js';
import type { Checkpoints } from '../store/tables/checkpoints.js';
import type { Progress } from '../progress.js';
import type { TimeRange } from './time-args.js';

/** Options as typed (`--name value` without the dashes), before they are checked. */
export type RawJobArgs = Record<string, string | undefined>;

/** A job's options once checked (`parseJobArgs` in options.ts): the common ones and the job's own. */
export interface JobArgs<Options = Record<string, unknown>> {
  /** --from/--to: both given, well formed, --to after --from. Absent for a scheduled run. */
  range?: TimeRange;
  /** --timezone, a valid IANA zone; absent: every zone in TIMEZONES (or UTC, as the job says). */
  timezone?: string;
  /** The job's own options, parsed by its zod object (its defaults fill what was not given). */
  options: Options;
}

export interface JobContext {
  runtime: Runtime;
  platform: PlatformClient;
  checkpoints: Checkpoints;
  log: Logger;
  /**
   * The level of a run's routine summary ("apps collected", "N runners scraped"): debug for a scheduled run, so an
   * idle service logs next to nothing (/metrics and job_runs tell the rest), info for a run a person started.
   * Absent (a context built elsewhere): info.
   */
  summaryLevel?: 'debug' | 'info';
  /** Pass to every platform call: counts retries for job_runs and stops the run on shutdown. */
  call: CallContext;
  signal: AbortSignal;
  /** The current time: the real clock, or the simulator's in demo mode. */
  now(): Date;
  /** Counts rows written, for job_runs. */
  addRows(n: number): void;
  /**
   * Something a run that succeeds wants known, kept in its job_runs row (`note`): an optional platform endpoint
   * not served, say. The same text twice in a run is kept once.
   */
  note(text: string): void;
  progress: Progress;
  /** --from/--to and --timezone, checked (the job's own options are run()'s second argument). */
  range?: TimeRange;
  timezone?: string;
}

/** A job's own options: a zod object whose keys are the `--name`s (every option takes a value). */
export type JobOptionsSchema = z.ZodObject;

/** One file per job in jobs/: its name, default schedule, the key it needs, its options and what it runs. */
export interface JobDefinition<O extends JobOptionsSchema = JobOptionsSchema> {
  name: string;
  description: string;
  /** Default cron expression; JOB_<NAME>_CRON overrides it. */
  defaultCron: string;
  /** The key scope the job needs, for the message when the platform refuses the key. */
  scope: KeyScope;
  /**
   * Per-app work that several instances divide by COLLECTOR_SHARD (each collects its apps; its checkpoints carry
   * the shard). A job without it is one piece of work: with COLLECTOR_SHARD only shard 0 schedules it.
   */
  sharded?: boolean;
  /** "the usage collector": how messages name the job. */
  label: string;
  /**
   * What --from/--to may be: `dates` (YYYY-MM-DD), or `times` (a date or an ISO 8601 datetime). Omitted: the job
   * has no time window (they are accepted, and the job says it ignores them).
   */
  range?: 'dates' | 'times';
  /**
   * Options besides --from/--to/--timezone (`.describe()` each: it is the help line). Parsed once: by the
   * scheduler for scheduled runs (defaults), by `tallyhouse collect` before anything is opened.
   */
  options?: O;
  // Method syntax on purpose: a list of jobs with different options is then a JobDefinition[].
  run(ctx: JobContext, options: z.output<O>): Promise<void>;
}

/** Declares a job, inferring the type of its parsed options from its zod object. */
export function defineJob<O extends JobOptionsSchema>(job: JobDefinition<O>): JobDefinition<O> {
  return job;
}
