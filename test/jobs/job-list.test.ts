import { describe, expect, it } from 'vitest';
import { JOB_NAMES, parseConfig } from '../../src/config.js';
import { allJobs } from '../../jobs/index.js';
import { parseJobArgs } from '../../src/jobs/options.js';

describe('the job list', () => {
  it('config validates JOB_<NAME>_CRON for exactly the jobs of jobs/index.ts, in the same (demo start-up) order', () => {
    expect(allJobs.length).toBeGreaterThan(0);
    expect([...JOB_NAMES]).toEqual(allJobs.map((j) => j.name));
    // apps first: it discovers the endpoints the later ones read.
    expect(allJobs[0].name).toBe('apps');
  });

  it('every job declares options whose defaults parse (a scheduled run passes none)', () => {
    for (const job of allJobs) expect(() => parseJobArgs(job, {}), job.name).not.toThrow();
  });

  it('each JOB_<NAME>_CRON is read and checked', () => {
    for (const name of JOB_NAMES) {
      const key = `JOB_${name.toUpperCase().replace(/-/g, '_')}_CRON`; // runner-metrics: JOB_RUNNER_METRICS_CRON
      expect((parseConfig({ [key]: '*/7 * * * *' }) as Record<string, unknown>)[key], key).toBe('*/7 * * * *');
    }
  });
});
