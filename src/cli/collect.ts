import { parseArgs } from 'node:util';
import { getConfig, isDemoMode } from '../config.js';
import { createCommandLogger } from '../log.js';
import { commandHost, commandIO } from '../http/command-host.js';
import { closeRuntime, openRuntime } from '../service.js';
import type { JobArgs, JobDefinition } from '../collectors/job.js';
import { COMMON_OPTIONS, parseJobArgs, UsageError } from '../jobs/options.js';
import { openDemoPlatform } from './demo-platform.js';
import { openPlatformSource, runtimeFor } from '../jobs/platform-source.js';
import { claimStorePlatform, demoNotice } from '../jobs/store-platform.js';
import { describeArgsError, didYouMean } from '../suggest.js';
import { consoleProgress } from '../progress.js';
import { Scheduler } from '../jobs/scheduler.js';

/** One job's help lines: its name, what it collects, and its own options. */
function jobUsage(job: JobDefinition): string {
  const options = Object.entries(job.options?.shape ?? {}).map(([k, o]) => `\n      --${k}  ${o.description ?? ''}`).join('');
  return `  ${job.name.padEnd(10)} ${job.description}${options}`;
}

export function collectUsage(allJobs: JobDefinition[]): string {
  return `tallyhouse collect <job> [--from YYYY-MM-DD --to YYYY-MM-DD] [--timezone ZONE] [job options]\n\nRuns one job now. --to is exclusive. Jobs:\n${allJobs.map(jobUsage).join('\n')}\n`;
}

/**
 * Reads `tallyhouse collect <job> [...]`'s arguments into checked options. A usage error (unknown job or option, a
 * bad value) is a one-line message naming it: exit 2 before anything is opened (CONTRIBUTING.md rule 19).
 */
export function parseCollectArgs(allJobs: JobDefinition[], argv: string[]): { job: JobDefinition; args: JobArgs } | { error: string } {
  const [name, ...rest] = argv;
  const job = allJobs.find((j) => j.name === name);
  if (!job) {
    if (!name) return { error: `tallyhouse collect: which job?\n\n${collectUsage(allJobs)}` };
    const jobs = allJobs.map((j) => j.name);
    return { error: `tallyhouse collect: unknown job ${JSON.stringify(name)}${didYouMean(name, jobs)}\nJobs: ${jobs.join(', ')} ('tallyhouse collect --help' describes them)\n` };
  }
  const names = [...COMMON_OPTIONS, ...Object.keys(job.options?.shape ?? {})];
  try {
    const { values } = parseArgs({
      args: rest,
      options: Object.fromEntries(names.map((k) => [k, { type: 'string' as const }])),
      strict: true,
      allowPositionals: false,
    });
    return { job, args: parseJobArgs(job, values) };
  } catch (err) {
    const parseArgsError = (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS_');
    if (!(err instanceof UsageError) && !parseArgsError) throw err;
    const message = parseArgsError ? describeArgsError(err, names) : (err as Error).message;
    return { error: `tallyhouse collect ${job.name}: ${message}\nUsage: tallyhouse collect ${job.name} [options]\n${jobUsage(job)}\n` };
  }
}

/** `tallyhouse collect [<job>] --help`: every job, or the one named with its options; a misspelt job is exit 2. */
export function collectHelp(allJobs: JobDefinition[], name: string | undefined): number {
  const io = commandIO();
  if (name === undefined) {
    io.out(`Usage: ${collectUsage(allJobs)}`);
    return 0;
  }
  const job = allJobs.find((j) => j.name === name);
  if (!job) {
    io.err((parseCollectArgs(allJobs, [name]) as { error: string }).error);
    return 2;
  }
  io.out(
    `Usage: tallyhouse collect ${job.name} [--from YYYY-MM-DD --to YYYY-MM-DD] [--timezone ZONE] [job options]\n\n` +
      `${jobUsage(job)}\n\nWithout --from/--to it runs as a scheduled run would (from its checkpoint). --to is exclusive;\n` +
      '--timezone (optional): the zone whose days the range is read in (and usage is kept per); default each zone of\n' +
      'TIMEZONES (UTC unless set).\n',
  );
  return 0;
}

/** Exit code of a collect that did not start (the job is already running, or the service is stopping): try again later (EX_TEMPFAIL). */
export const EXIT_NOT_STARTED = 75;

/** `tallyhouse collect <job> [...]`: runs one job now, with progress on stderr; exit 1 when it fails. */
export async function collectCommand(allJobs: JobDefinition[], argv: string[]): Promise<number> {
  const io = commandIO();
  const parsed = parseCollectArgs(allJobs, argv);
  if ('error' in parsed) {
    io.err(parsed.error);
    return 2;
  }
  const { job, args } = parsed;
  // A range wholly after now has nothing to collect: it ran and said "0 rows", exit 0, as if there were none.
  // Checked on the wall clock, before anything is opened; a platform on a simulator's clock (PLATFORM_CLOCK) has its own now.
  if (args.range && getConfig().PLATFORM_CLOCK === 'wall') {
    const { fromMs } = args.range.instants(args.timezone ?? 'UTC');
    const nowMs = Date.now();
    if (fromMs > nowMs) {
      io.err(
        `tallyhouse collect ${job.name}: --from: ${new Date(fromMs).toISOString()} is in the future (now ${new Date(nowMs).toISOString()}): nothing to collect; give a range that has started\n`,
      );
      return 2;
    }
  }
  // Said first once the arguments hold, before anything is opened: a shell without the keys must not collect
  // invented data unnoticed.
  const host = commandHost();
  if (host ? host.jobs?.demo : isDemoMode(getConfig())) io.err(demoNotice(`collect ${job.name}`));
  const result = await runJobNow(allJobs, job, args);
  if (result.status === 'skipped') {
    io.err(`tallyhouse collect ${job.name}: not started: ${result.error || 'the job was not run'} (exit ${EXIT_NOT_STARTED})\n`);
    return EXIT_NOT_STARTED;
  }
  if (result.status !== 'ok') {
    io.err(`tallyhouse collect ${job.name}: ${result.error}\n`);
    return 1;
  }
  io.err(`${job.name}: ${result.rows} rows in ${(result.durationMs / 1000).toFixed(1)} s (${result.retries} retried calls)\n`);
  return 0;
}

/** On the service's scheduler when it hosts the command (its platform source, its clock), else on one of our own. */
async function runJobNow(allJobs: JobDefinition[], job: JobDefinition, args: JobArgs) {
  const host = commandHost();
  if (host?.jobs) return host.jobs.run(job.name, args, consoleProgress(host.io));
  const config = getConfig();
  const logger = createCommandLogger(config.CLI_LOG_LEVEL);
  const rt = await openRuntime(config, { logger });
  let source;
  try {
    // Before the simulator starts or anything is written: a store filled from another platform refuses.
    await claimStorePlatform(rt, `collect ${job.name}`);
    source = await openPlatformSource(config, logger, { demoNoticeLevel: 'info', openDemo: openDemoPlatform });
  } catch (err) {
    await closeRuntime(rt);
    throw err;
  }
  try {
    const scheduler = new Scheduler({ runtime: runtimeFor(rt, source), platform: source.platform, jobs: allJobs, now: source.now });
    return await scheduler.run(job.name, 'manual', args, consoleProgress());
  } finally {
    await source.close();
    await closeRuntime(rt);
  }
}
