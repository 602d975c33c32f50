import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DateTime } from 'luxon';
import { startSim, type Sim } from '../../src/sim/index.js';
import { decimalToScaled } from '../../src/values.js';
import { runCli } from '../support/process.js';
import { closeRuntime, openTestRuntime, queryRows } from '../support/store.js';

// This file's own process opens the embedded store only after the CLI children have exited: chDB allows
// one data directory per process, and the children are the ones writing it.
const dataDir = mkdtempSync(join(tmpdir(), 'th-usage-cli-'));
const sims: Sim[] = [];
afterAll(async () => {
  for (const s of sims) await s.close();
});

describe('usage backfill from the command line', () => {
  it('killed with SIGKILL and started again, it finishes with totals equal to the truth', async () => {
    const sim = await startSim({ seed: 11, now: '2026-11-21T12:00:00Z', days: 200, apps: 55, slowMs: 250 });
    sims.push(sim);
    const env = {
      DATA_DIR: dataDir,
      SVC_BASE_URL: sim.url,
      SVC_API_KEY: sim.keys.api,
      SVC_ADMIN_KEY: sim.keys.admin,
      LOG_LEVEL: 'warn',
    };
    const args = ['collect', 'usage', '--from', '2026-05-01', '--to', '2026-11-01', '--timezone', 'UTC'];
    // Slow answers, so the kill lands in the middle of the backfill.
    sim.setFaults(1, ['slow']);
    const first = runCli(args, env);
    await new Promise<void>((resolve, reject) => {
      const t = setInterval(() => {
        if (/: [1-5]\/6 /.test(first.stderr())) {
          clearInterval(t);
          resolve();
        }
      }, 20);
      void first.exited.then(() => {
        clearInterval(t);
        reject(new Error(`backfill exited before it could be killed:\n${first.stderr()}`));
      });
    });
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    expect(first.stderr()).toContain('usage UTC 2026-05-01..2026-11-01: 0/6');

    sim.setFaults(0);
    const second = runCli(args, env);
    const { code } = await second.exited;
    expect(code, second.stderr()).toBe(0);
    // It resumed after the chunks the first run committed instead of starting over.
    expect(second.stderr()).not.toMatch(/: 0\/6/);
    expect(second.stderr()).toMatch(/: [1-5]\/6 \(resumed\)/);
    expect(second.stderr()).toMatch(/: 6\/6 \(100%\)/);

    const rt = await openTestRuntime({ DATA_DIR: dataDir });
    try {
      const stored = await queryRows<{ month: string; app: string; cost: string }>(
        rt,
        `SELECT toString(toStartOfMonth(bucket_date)) AS month, app, toString(sum(cost_total)) AS cost FROM usage_buckets FINAL
         WHERE timezone = 'UTC' AND timeframe = 'day' GROUP BY month, app`,
      );
      const truth = new Map<string, bigint>();
      for (const r of sim.truth.usage({ from: '2026-05-01', to: '2026-11-01', timezone: 'UTC', timeframe: 'day' })) {
        const key = `${DateTime.fromISO(r.bucket!, { setZone: true }).startOf('month').toISODate()}|${r.app}`;
        truth.set(key, (truth.get(key) ?? 0n) + BigInt(r.cost_total_nanos));
      }
      const storedMap = new Map(stored.map((r) => [`${r.month}|${r.app}`, decimalToScaled(r.cost, 9)]));
      const nonZero = (m: Map<string, bigint>) => [...m].filter(([, v]) => v !== 0n).sort(([a], [b]) => a.localeCompare(b));
      expect(nonZero(truth).length).toBeGreaterThan(6 * 50);
      expect(nonZero(storedMap)).toEqual(nonZero(truth));
      const runs = await queryRows<{ status: string }>(rt, "SELECT status FROM job_runs WHERE job = 'usage' ORDER BY started_at");
      expect(runs.map((r) => r.status)).toEqual(['ok']); // the killed run never finished, so it has no row
    } finally {
      await closeRuntime(rt);
    }
  });
});
