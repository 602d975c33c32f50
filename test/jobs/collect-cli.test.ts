import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { allJobs } from '../../jobs/index.js';
import { parseCollectArgs } from '../../src/cli/collect.js';
import { startSim, type Sim } from '../../src/sim/index.js';
import { runCli } from '../support/process.js';
import { closeRuntime, openTestRuntime, queryRows } from '../support/store.js';

// This file's own process opens the embedded store only after the CLI children have exited (one data directory
// per process, CONTRIBUTING.md rule 12).
const dataDir = join(mkdtempSync(join(tmpdir(), 'th-collect-cli-')), 'data');
const sims: Sim[] = [];
afterAll(async () => {
  for (const s of sims) await s.close();
});

/** The first line a usage error prints (the job's own help follows it). */
function usageLine(argv: string[]): string {
  const parsed = parseCollectArgs(allJobs, argv);
  if (!('error' in parsed)) throw new Error(`accepted ${argv.join(' ')}`);
  return parsed.error.split('\n')[0];
}

describe('tallyhouse collect: usage errors', () => {
  it('name the option in one line', () => {
    expect(usageLine(['analytics', '--recollect-hours=-1'])).toBe(
      'tallyhouse collect analytics: --recollect-hours: Too small: expected number to be >=0 (got "-1")',
    );
    expect(usageLine(['analytics', '--timeframe', 'week'])).toBe(
      'tallyhouse collect analytics: --timeframe: Invalid option: expected one of "minute"|"hour"|"day" (got "week")',
    );
    expect(usageLine(['events', '--page-limit', '0'])).toMatch(/^tallyhouse collect events: --page-limit: .* \(got "0"\)$/);
    expect(usageLine(['usage', '--bogus', 'x'])).toBe("tallyhouse collect usage: unknown option --bogus");
    expect(usageLine(['usage', '--kinds', 'models'])).toBe("tallyhouse collect usage: unknown option --kinds");
    expect(usageLine(['usage', '--from', '2026-11-01'])).toBe('tallyhouse collect usage: a backfill needs both --from and --to (--to is exclusive)');
    expect(usageLine(['usage', '--from', '2026-11-01T00:00', '--to', '2026-11-02'])).toBe(
      'tallyhouse collect usage: --from: expected a date YYYY-MM-DD (got "2026-11-01T00:00")',
    );
    expect(usageLine(['requests', '--from', '2026-11-02', '--to', '2026-11-01'])).toBe(
      'tallyhouse collect requests: --to: must be after --from (--to is exclusive) (got "2026-11-01")',
    );
    expect(usageLine(['runners', '--timezone', 'Mars/Olympus'])).toBe(
      'tallyhouse collect runners: --timezone: expected an IANA time zone (e.g. Europe/Berlin) (got "Mars/Olympus")',
    );
    expect(usageLine(['nope'])).toBe('tallyhouse collect: unknown job "nope"');
  });

  it('exit 2 before the store opens: no data directory, no job_runs row', async () => {
    const sim = await startSim({ seed: 3, now: '2026-11-21T12:00:00Z', days: 2, apps: 2 });
    sims.push(sim);
    const env = { DATA_DIR: dataDir, SVC_BASE_URL: sim.url, SVC_API_KEY: sim.keys.api, SVC_ADMIN_KEY: sim.keys.admin, LOG_LEVEL: 'warn' };
    const bad = [
      ['collect', 'analytics', '--recollect-hours=-1'],
      ['collect', 'usage', '--from', '2026-11-01'],
    ].map((argv) => runCli(argv, env));
    for (const p of bad) expect((await p.exited).code, p.stderr()).toBe(2);
    expect(bad[0].stderr().split('\n')[0]).toBe('tallyhouse collect analytics: --recollect-hours: Too small: expected number to be >=0 (got "-1")');
    expect(bad[1].stderr().split('\n')[0]).toBe('tallyhouse collect usage: a backfill needs both --from and --to (--to is exclusive)');
    expect(existsSync(dataDir)).toBe(false);

    // The control: a good command does open the store and records its run.
    const ok = runCli(['collect', 'apps'], env);
    expect((await ok.exited).code, ok.stderr()).toBe(0);
    expect(existsSync(dataDir)).toBe(true);
    // A usage error against the existing store adds no row.
    const again = runCli(['collect', 'apps', '--timezone', 'Nowhere/Else'], env);
    expect((await again.exited).code, again.stderr()).toBe(2);

    const rt = await openTestRuntime({ DATA_DIR: dataDir });
    try {
      const runs = await queryRows<{ job: string; status: string }>(rt, 'SELECT job, status FROM job_runs');
      expect(runs).toEqual([{ job: 'apps', status: 'ok' }]);
    } finally {
      await closeRuntime(rt);
    }
  });
});
