import { PlatformClient } from '../../src/platform/index.js';
import { Scheduler, type JobRunResult } from '../../src/jobs/scheduler.js';
import type { JobArgs, JobDefinition, RawJobArgs } from '../../src/collectors/job.js';
import { parseJobArgs } from '../../src/jobs/options.js';
import type { Runtime } from '../../src/runtime.js';
import { allJobs } from '../../jobs/index.js';
import type { Sim } from '../../src/sim/index.js';

/** A platform client on the simulator, quick to retry (faults in tests are frequent and cheap). */
export function simClient(sim: Sim, keys: { api?: string; admin?: string } = sim.keys): PlatformClient {
  return new PlatformClient({
    baseUrl: sim.url,
    apiKey: keys.api,
    adminKey: keys.admin,
    backoffBaseMs: 5,
    maxBackoffMs: 50,
    headersTimeoutMs: 2_000,
    bodyTimeoutMs: 2_000,
    maxAttempts: 8,
  });
}

/** Options as `tallyhouse collect <name>` would pass them (checked by the job's schema). */
export function jobArgs(name: string, raw: RawJobArgs, jobs: JobDefinition[] = allJobs): JobArgs {
  const job = jobs.find((j) => j.name === name);
  if (!job) throw new Error(`no job ${JSON.stringify(name)}`);
  return parseJobArgs(job, raw);
}

/** Runs one job now against the simulator, with the simulator's clock. */
export async function runJob(
  rt: Runtime,
  sim: Sim,
  name: string,
  args: RawJobArgs = {},
  opts: { platform?: PlatformClient; jobs?: JobDefinition[] } = {},
): Promise<JobRunResult> {
  const jobs = opts.jobs ?? allJobs;
  const parsed = jobArgs(name, args, jobs);
  const platform = opts.platform ?? simClient(sim);
  const scheduler = new Scheduler({ runtime: rt, platform, jobs, now: () => sim.clock.now() });
  try {
    return await scheduler.run(name, 'manual', parsed);
  } finally {
    if (!opts.platform) await platform.close();
  }
}
