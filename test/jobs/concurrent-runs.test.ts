// Issue 28.8/28.9: a run that is refused names its reason and exit code (a second `collect` of a running job printed
// "tallyhouse collect analytics: " and nothing else); a --from/--to backfill of a job does not make the job's
// scheduled runs skip while it lasts (a long backfill stalled the schedule for hours).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runHosted, type CommandHost } from '../../src/http/command-host.js';
import { collectCommand, EXIT_NOT_STARTED } from '../../src/cli/collect.js';
import { defineJob } from '../../src/collectors/job.js';
import { parseJobArgs } from '../../src/jobs/options.js';
import { Scheduler } from '../../src/jobs/scheduler.js';
import type { PlatformClient } from '../../src/platform/index.js';
import type { Runtime } from '../../src/runtime.js';
import { closeRuntime, openTestRuntime, queryRows } from '../support/store.js';

let rt: Runtime;
beforeAll(async () => {
  rt = await openTestRuntime();
}, 120_000);
afterAll(async () => {
  await closeRuntime(rt);
});

/** A job whose runs each wait until the test lets them go; counts the runs of each kind that started. */
function gatedJob() {
  const gates: Array<() => void> = [];
  const started = { backfill: 0, scheduled: 0 };
  const waiters: Array<() => void> = [];
  const job = defineJob({
    name: 'slow',
    description: 'waits for the test',
    defaultCron: '0 0 1 1 *',
    scope: 'api',
    label: 'the slow job',
    range: 'dates',
    async run(ctx) {
      started[ctx.range ? 'backfill' : 'scheduled']++;
      for (const w of waiters.splice(0)) w();
      await new Promise<void>((resolve) => gates.push(resolve));
    },
  });
  return {
    job,
    started,
    /** Resolves once `n` runs in all have started. */
    untilStarted: (n: number) =>
      new Promise<void>((resolve) => {
        const check = () => (started.backfill + started.scheduled >= n ? resolve() : waiters.push(check));
        check();
      }),
    releaseAll: () => {
      for (const g of gates.splice(0)) g();
    },
  };
}

function hostFor(scheduler: Scheduler) {
  const err: string[] = [];
  const host: CommandHost = {
    runtime: rt,
    jobs: { run: (job, args, progress) => scheduler.run(job, 'manual', args, progress) },
    io: { out: () => undefined, err: (t) => void err.push(t), writeFile: async () => undefined, isTTY: false },
  };
  return { host, err };
}

describe('runs of one job that meet', () => {
  it('a second collect of a running job is refused naming the reason and exit code 75; the job_runs row keeps the reason', async () => {
    const gated = gatedJob();
    const scheduler = new Scheduler({ runtime: rt, platform: {} as PlatformClient, jobs: [gated.job] });
    const first = hostFor(scheduler);
    const running = runHosted(first.host, () => collectCommand([gated.job], ['slow', '--from', '2026-11-01', '--to', '2026-11-02']));
    await gated.untilStarted(1);

    const second = hostFor(scheduler);
    const code = await runHosted(second.host, () => collectCommand([gated.job], ['slow', '--from', '2026-11-01', '--to', '2026-11-02']));
    expect(code).toBe(EXIT_NOT_STARTED);
    expect(second.err.join('')).toMatch(
      /^tallyhouse collect slow: not started: a backfill of slow is already going \(manual, started \d{4}-\d\d-\d\dT[\d:.]+Z\); try again when it has finished \(exit 75\)\n$/,
    );
    gated.releaseAll();
    expect(await running).toBe(0);
    const rows = await queryRows<{ status: string; error: string }>(rt, "SELECT status, error FROM job_runs WHERE job = 'slow' AND status = 'skipped'");
    expect(rows).toEqual([{ status: 'skipped', error: expect.stringMatching(/^a backfill of slow is already going/) }]);
  });

  it('a scheduled run goes ahead while a --from/--to backfill of the same job runs; a second scheduled run still skips', async () => {
    const gated = gatedJob();
    const scheduler = new Scheduler({ runtime: rt, platform: {} as PlatformClient, jobs: [gated.job] });
    const backfill = scheduler.run('slow', 'manual', parseJobArgs(gated.job, { from: '2026-10-01', to: '2026-11-01' }));
    await gated.untilStarted(1);
    const scheduled = scheduler.run('slow', 'schedule');
    // Either it starts (and waits at the gate) or it comes back at once, skipped.
    expect(await Promise.race([scheduled.then((r) => r.status), gated.untilStarted(2).then(() => 'started')])).toBe('started');
    expect(gated.started).toEqual({ backfill: 1, scheduled: 1 });
    const overlapping = await scheduler.run('slow', 'schedule');
    expect(overlapping).toMatchObject({ status: 'skipped', error: expect.stringMatching(/^a run of slow is already going \(schedule, started /) });
    gated.releaseAll();
    expect((await scheduled).status).toBe('ok');
    expect((await backfill).status).toBe('ok');
  });
});
