import { inReadLane } from '../store/read-lanes.js';
import { randomUUID } from 'node:crypto';
import cron, { type ScheduledTask } from 'node-cron';
import { jobCronVariable } from '../config.js';
import { counter, gauge, histogram, markStoreChanged } from '../metrics.js';
import type { Runtime } from '../runtime.js';
import { authFailureMessage, PlatformError, type PlatformClient } from '../platform/index.js';
import { Checkpoints } from '../store/tables/checkpoints.js';
import { jobRuns, type JobRunRow } from '../store/tables/job-runs.js';
import { toDateTime64 } from '../values.js';
import type { JobArgs, JobDefinition } from '../collectors/job.js';
import { parseJobArgs } from './options.js';
import { silentProgress, type Progress } from '../progress.js';

export type Trigger = 'schedule' | 'startup' | 'manual';

export interface JobRunResult {
  runId: string;
  job: string;
  status: 'ok' | 'failed' | 'skipped';
  rows: number;
  retries: number;
  error: string;
  durationMs: number;
  /** What the run noted (JobContext.note), joined with '; '; empty or absent when nothing. */
  note?: string;
}

export interface SchedulerOptions {
  runtime: Runtime;
  platform: PlatformClient;
  jobs: JobDefinition[];
  /** The clock jobs see (the simulator's in demo mode). */
  now?: () => Date;
}

/** Names the key a job needs when the platform refuses it: a message an operator can act on. */
export function describeJobError(job: JobDefinition, err: unknown): string {
  if (err instanceof PlatformError) return authFailureMessage(err, job.label);
  return `${job.label}: ${err instanceof Error ? err.message : String(err)}`;
}

/**
 * Runs jobs on their cron schedules and on demand. A job never overlaps itself (a tick that finds it
 * running is skipped, logged and counted, with the reason), except that a `--from/--to` backfill runs beside the
 * job's schedule (one backfill of a job at a time); every run is recorded in job_runs and in metrics; a failing
 * job does not stop the others.
 */
export class Scheduler {
  private readonly jobs = new Map<string, JobDefinition>();
  /**
   * Runs going, by lane: a job's scheduled (and plain manual) runs share the lane named after the job; its `--from/--to`
   * backfills have a lane of their own, so an hours-long backfill of past windows never makes the schedule skip.
   */
  private readonly running = new Map<string, { controller: AbortController; done: Promise<JobRunResult>; trigger: Trigger; startedAt: number }>();
  private readonly tasks: ScheduledTask[] = [];
  private readonly checkpoints: Checkpoints;
  /** The checkpoints of sharded jobs: keys scoped to this instance's shard (the same as `checkpoints` without one). */
  private readonly shardCheckpoints: Checkpoints;
  private readonly now: () => Date;
  /**
   * What an unsharded job sees: the runtime without COLLECTOR_SHARD. Such a job runs on shard 0 alone, so it must
   * cover every app (listEndpoints and listApps filter by the shard they find in the config).
   */
  private readonly unshardedRuntime: Runtime;
  private readonly metrics;
  private stopped = false;

  /** True once stop() was called: no new run starts. */
  get isStopped(): boolean {
    return this.stopped;
  }

  constructor(private readonly opts: SchedulerOptions) {
    for (const job of opts.jobs) this.jobs.set(job.name, job);
    this.checkpoints = new Checkpoints(opts.runtime.store, opts.runtime.writer);
    const shard = opts.runtime.config.COLLECTOR_SHARD;
    this.shardCheckpoints = shard && shard.count > 1 ? new Checkpoints(opts.runtime.store, opts.runtime.writer, `shard ${shard.index}/${shard.count}`) : this.checkpoints;
    this.now = opts.now ?? (() => new Date());
    this.unshardedRuntime = shard ? { ...opts.runtime, config: { ...opts.runtime.config, COLLECTOR_SHARD: undefined } } : opts.runtime;
    const registry = opts.runtime.registry;
    // The job's label is job_name: `job` (and `instance`) are the labels Prometheus gives every scraped series, and a
    // metric of ours that carried them would need honor_labels (Prometheus naming guide).
    this.metrics = {
      runs: counter(registry, {
        name: 'tallyhouse_job_runs_total',
        help: 'Job runs by outcome (ok, failed, skipped: the previous run was still going).',
        labelNames: ['job_name', 'status'],
      }),
      duration: histogram(registry, {
        name: 'tallyhouse_job_duration_seconds',
        help: 'Duration of job runs.',
        labelNames: ['job_name'],
        buckets: [0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 900, 1800],
      }),
      lastSuccess: gauge(registry, {
        name: 'tallyhouse_job_last_success_timestamp_seconds',
        help: 'Unix time the job last finished successfully.',
        labelNames: ['job_name'],
      }),
      interval: gauge(registry, {
        name: 'tallyhouse_job_interval_seconds',
        help: 'Seconds between two scheduled runs of the job (from its cron expression), for staleness alerts.',
        labelNames: ['job_name'],
      }),
      retries: counter(registry, {
        name: 'tallyhouse_job_platform_retries_total',
        help: 'Platform API calls retried by jobs.',
        labelNames: ['job_name'],
      }),
    };
  }

  /** The cron expression a job runs on: JOB_<NAME>_CRON or its default. */
  cronFor(job: JobDefinition): string {
    const key = jobCronVariable(job.name) as keyof Runtime['config'];
    const override = this.opts.runtime.config[key];
    return typeof override === 'string' ? override : job.defaultCron;
  }

  /**
   * The jobs this instance schedules: all of them, or with COLLECTOR_SHARD on a shard other than 0 only the sharded
   * ones (each collects this shard's apps); the others run on shard 0.
   */
  scheduledJobs(): JobDefinition[] {
    const shard = this.opts.runtime.config.COLLECTOR_SHARD;
    return [...this.jobs.values()].filter((j) => !shard || shard.index === 0 || j.sharded);
  }

  /**
   * The start-up pass: each job this instance schedules once, one after the other in the list's order (the apps
   * job, first, discovers the endpoints the later ones read), so a new account has data within a minute instead of
   * at the next tick of each schedule. A job with no checkpoint looks back its first-run window. On a shard other
   * than 0 only the sharded jobs run, as on the schedule: shard 0 runs the others. Stops early when the scheduler does.
   */
  async startupPass(): Promise<JobRunResult[]> {
    const runs: JobRunResult[] = [];
    for (const job of this.scheduledJobs()) {
      if (this.isStopped) break;
      runs.push(await this.run(job.name, 'startup'));
    }
    return runs;
  }

  start(): void {
    const schedules: Record<string, string> = {};
    const shard = this.opts.runtime.config.COLLECTOR_SHARD;
    const mine = this.scheduledJobs();
    const elsewhere = [...this.jobs.values()].filter((j) => !mine.includes(j)).map((j) => j.name);
    if (shard && shard.count > 1) {
      this.opts.runtime.logger.info(
        { shard, onShardZero: elsewhere },
        `collector shard ${shard.index}/${shard.count}: this instance collects its share of the apps${elsewhere.length > 0 ? `; ${elsewhere.join(', ')} run on shard 0` : ''}`,
      );
    }
    for (const job of mine) {
      const expression = this.cronFor(job);
      const task = cron.schedule(expression, () => void this.run(job.name, 'schedule'), { name: `tallyhouse-${job.name}` });
      this.tasks.push(task);
      const [next, after] = task.getNextRuns(2);
      if (next && after) this.metrics.interval.set({ job_name: job.name }, (after.getTime() - next.getTime()) / 1000);
      schedules[job.name] = expression;
    }
    // What runs when, in one line.
    const when = Object.entries(schedules).map(([name, expression]) => `${name} "${expression}"`).join(', ');
    // The message alone: with the schedules as a field too, they were printed twice (issue 30.13).
    this.opts.runtime.logger.info(`jobs scheduled: ${when}`);
  }

  /** Stops the schedules, asks running jobs to stop, and waits for them. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const task of this.tasks) await task.destroy();
    for (const r of this.running.values()) r.controller.abort(new Error('tallyhouse is shutting down'));
    await Promise.allSettled([...this.running.values()].map((r) => r.done));
  }

  get(name: string): JobDefinition | undefined {
    return this.jobs.get(name);
  }

  /**
   * Runs a job now unless it is already running. Never throws: the outcome is in the result. `args` are the
   * options `parseJobArgs` checked (the CLI's); without them, the job's defaults (a scheduled run).
   */
  async run(name: string, trigger: Trigger, args?: JobArgs, progress: Progress = silentProgress): Promise<JobRunResult> {
    const job = this.jobs.get(name);
    if (!job) throw new Error(`unknown job ${JSON.stringify(name)}; jobs: ${[...this.jobs.keys()].join(', ')}`);
    const runId = randomUUID();
    const startedAt = Date.now();
    const log = this.opts.runtime.logger.child({ job: name, run: runId });
    const backfill = Boolean(job.range && args?.range);
    const lane = backfill ? `${name} backfill` : name;
    const going = this.running.get(lane);
    if (going || this.stopped) {
      // The reason travels with the result: `tallyhouse collect` prints it (it printed an empty one).
      const error = going
        ? `${backfill ? 'a backfill' : 'a run'} of ${name} is already going (${going.trigger}, started ${new Date(going.startedAt).toISOString()}); try again when it has finished`
        : 'tallyhouse is shutting down';
      log.warn({ trigger, reason: error }, this.stopped ? 'job not started: shutting down' : 'previous run still going; tick skipped');
      this.metrics.runs.inc({ job_name: name, status: 'skipped' });
      const result: JobRunResult = { runId, job: name, status: 'skipped', rows: 0, retries: 0, error, durationMs: 0 };
      await this.record(result, trigger, startedAt).catch(() => undefined);
      return result;
    }
    const controller = new AbortController();
    const done = this.execute(job, runId, trigger, args, progress, controller, startedAt);
    this.running.set(lane, { controller, done, trigger, startedAt });
    try {
      return await done;
    } finally {
      this.running.delete(lane);
    }
  }

  private async execute(
    job: JobDefinition,
    runId: string,
    trigger: Trigger,
    args: JobArgs | undefined,
    progress: Progress,
    controller: AbortController,
    startedAt: number,
  ): Promise<JobRunResult> {
    const log = this.opts.runtime.logger.child({ job: job.name, run: runId });
    let rows = 0;
    let retries = 0;
    const endTimer = this.metrics.duration.startTimer({ job_name: job.name });
    // Routine scheduled runs are quiet (an idle service logs next to nothing); /metrics and job_runs tell the rest.
    const routine = trigger === 'schedule' ? 'debug' : 'info';
    log.debug({ trigger }, 'job started');
    let status: 'ok' | 'failed' = 'ok';
    let error = '';
    const notes: string[] = [];
    try {
      const { range, timezone, options } = args ?? parseJobArgs(job);
      // Every job reads in the heavy lane: a person's query goes first (src/store/read-lanes.ts).
      await inReadLane('heavy', () => job.run(
        {
          runtime: job.sharded ? this.opts.runtime : this.unshardedRuntime,
          platform: this.opts.platform,
          checkpoints: job.sharded ? this.shardCheckpoints : this.checkpoints,
          log,
          summaryLevel: routine,
          signal: controller.signal,
          call: {
            signal: controller.signal,
            onRetry: (info) => {
              retries++;
              this.metrics.retries.inc({ job_name: job.name });
              log.debug({ attempt: info.attempt, delayMs: info.delayMs, type: info.error.type, status: info.error.status }, 'platform call retried');
            },
          },
          now: this.now,
          addRows: (n) => {
            rows += n;
          },
          note: (text) => {
            if (!notes.includes(text)) notes.push(text);
          },
          progress,
          range,
          timezone,
        },
        options,
      ));
    } catch (err) {
      status = 'failed';
      error = describeJobError(job, err);
      log.error({ err: err instanceof PlatformError ? undefined : err, error }, 'job failed');
    } finally {
      progress.stop();
    }
    endTimer();
    const result: JobRunResult = { runId, job: job.name, status, rows, retries, error, durationMs: Date.now() - startedAt };
    if (notes.length > 0) result.note = notes.join('; ');
    this.metrics.runs.inc({ job_name: job.name, status });
    if (status === 'ok') {
      this.metrics.lastSuccess.set({ job_name: job.name }, Date.now() / 1000);
      log[routine]({ trigger, rows, retries, durationMs: result.durationMs }, 'job finished');
    }
    try {
      await this.record(result, trigger, startedAt);
    } catch (err) {
      log.error({ err }, 'could not record the job run');
    }
    if (status === 'ok') markStoreChanged();
    return result;
  }

  private async record(result: JobRunResult, trigger: Trigger, startedAt: number): Promise<void> {
    const row: JobRunRow = {
      job: result.job,
      run_id: result.runId,
      trigger,
      started_at: toDateTime64(startedAt),
      finished_at: toDateTime64(startedAt + result.durationMs),
      status: result.status,
      rows: result.rows,
      retries: result.retries,
      error: result.error,
      note: result.note ?? '',
    };
    const written = this.opts.runtime.writer.insert(jobRuns, [row]);
    await this.opts.runtime.writer.flush(jobRuns);
    await written;
  }
}
