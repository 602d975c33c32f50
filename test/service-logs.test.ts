// The start-up screen is for people (the API URL and an example command early), and an idle service is quiet:
// a round of every scheduled job adds next to nothing to the log at the default level.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JOB_NAMES, jobCronVariable } from '../src/config.js';
import { runCli } from './support/process.js';

async function runsByJob(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^tallyhouse_job_runs_total\{([^}]*)\} (\d+)/gm)) {
    const job = /job_name="([^"]+)"/.exec(m[1])![1];
    out.set(job, (out.get(job) ?? 0) + Number(m[2]));
  }
  return out;
}

describe('npm start (demo) logs for people', () => {
  it('names the API and an example command in its first 25 lines, and a scheduled round of every job adds under 5 lines', { timeout: 400_000 }, async () => {
    // Every job every 30 seconds, so a whole round happens within the test (and a slow machine finishes a run
    // before its next tick: a skipped tick is a warning, rightly).
    const crons = Object.fromEntries(JOB_NAMES.map((n) => [jobCronVariable(n), '*/30 * * * * *']));
    const serve = runCli(['serve'], { PORT: '0', DATA_DIR: mkdtempSync(join(tmpdir(), 'th-quiet-')), ...crons });
    try {
      const [, url] = await serve.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)"/);
      await serve.waitFor(/"msg":"start-up pass done"/, 170_000);
      const first = serve.stdout().split('\n').slice(0, 25).join('\n');
      expect(first).toContain(`"api":"${url}/api/v1"`);
      expect(first).toMatch(/"example":"curl '[^']+\/api\/v1\/cost\?from=\d{4}-\d\d-01&to=\d{4}-\d\d-\d\d&group_by=app'"/);

      const before = await runsByJob(url);
      const linesBefore = serve.stdout().split('\n').length;
      // Wait (by state) until every job has run again on its schedule.
      for (;;) {
        const now = await runsByJob(url);
        if (JOB_NAMES.every((n) => (now.get(n) ?? 0) > (before.get(n) ?? 0))) break;
        await new Promise((r) => setTimeout(r, 500));
      }
      // What a busy machine makes the service say is not routine: a request slower than 2 s (this test's own
      // GET /metrics, on a machine running other test files beside it) and a tick skipped because the run before
      // it was still going are warnings, rightly, and are counted apart. Everything else a round adds counts.
      const added = serve.stdout().split('\n').slice(linesBefore - 1).filter((l) => l.trim());
      const machineBusy = /"level":40,.*"msg":"(slow request|previous run still going; tick skipped)"/;
      const routine = added.filter((l) => !machineBusy.test(l));
      expect(routine.length, added.join('\n')).toBeLessThan(5);
    } finally {
      serve.child.kill('SIGTERM');
    }
    expect((await serve.exited).code).toBe(0);
  });
});
