import type { Logger } from '../log.js';
import type { Runtime } from '../runtime.js';
import type { CallContext, KeyScope, PlatformClient } from '../platform/index.js';
import type { Checkpoints } from '../store/tables/checkpoints.js';
import type { Progress } from './progress.js';

/** Options a job accepts when run on demand (`tallyhouse collect <job> --from --to ...`). */
export interface JobArgs {
  from?: string;
  to?: string;
  timezone?: string;
  /** Job-specific extras. */
  [key: string]: string | undefined;
}

export interface JobContext {
  runtime: Runtime;
  platform: PlatformClient;
  checkpoints: Checkpoints;
  log: Logger;
  /** Pass to every platform call: counts retries for job_runs and stops the run on shutdown. */
  call: CallContext;
  signal: AbortSignal;
  /** The current time: the real clock, or the simulator's in demo mode. */
  now(): Date;
  /** Counts rows written, for job_runs. */
  addRows(n: number): void;
  progress: Progress;
  args: JobArgs;
}

/** One file per job in jobs/: its name, default schedule, the key it needs and what it runs. */
export interface JobDefinition {
  name: string;
  description: string;
  /** Default cron expression; JOB_<NAME>_CRON overrides it. */
  defaultCron: string;
  /** The key scope the job needs, for the message when the platform refuses the key. */
  scope: KeyScope;
  /** "the usage collector": how messages name the job. */
  label: string;
  /** Options `tallyhouse collect <name>` accepts besides --from/--to/--timezone. */
  options?: Record<string, { type: 'string' | 'boolean'; description: string }>;
  run(ctx: JobContext): Promise<void>;
}
