// `tallyhouse report changes`: bad input exits 2 naming it before anything opens; months with nothing collected
// exit 1 saying what would fill them, and write no file. (The figures: test/api/cost-changes-quarter.test.ts, the
// same costChangesReport behind the route.)
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseCsv } from 'csv-parse/sync';
import { startSim, type Sim } from '../../src/sim/index.js';
import { decimalToScaled } from '../../src/values.js';
import { runCli } from '../support/process.js';

let sim: Sim | undefined;
afterAll(async () => {
  await sim?.close();
});

describe('tallyhouse report changes', () => {
  it('exits 2 on a bad month or group, 1 when neither month has cost', async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'th-changes-')), 'data');
    const bad = runCli(['report', 'changes', '--month', '2026-10', '--group-by', 'day'], { DATA_DIR: dataDir });
    expect((await bad.exited).code).toBe(2);
    expect(bad.stderr()).toMatch(/^tallyhouse report changes: --group-by: day not one of app, environment, machine_type, surge, endpoint, api_key, unit/);
    expect(existsSync(dataDir)).toBe(false);

    const out = join(dataDir, '..', 'changes.csv');
    const empty = runCli(['report', 'changes', '--month', '2025-04', '--out', out], { DATA_DIR: dataDir });
    expect((await empty.exited).code).toBe(1);
    expect(empty.stderr()).toMatch(/^tallyhouse report changes: no cost collected in 2025-03 or 2025-04 \(UTC\)/);
    expect(existsSync(out)).toBe(false);
  });
});

describe('tallyhouse report changes over collected usage', () => {
  it('prints per currency the change from October to November equal to the truth, its parts summing to it', async () => {
    sim = await startSim({ seed: 6, now: '2026-11-21T12:00:00Z', days: 70, apps: 2, requestsPerHour: 1 });
    const env = {
      DATA_DIR: join(mkdtempSync(join(tmpdir(), 'th-changes-data-')), 'data'),
      SVC_BASE_URL: sim.url,
      SVC_API_KEY: sim.keys.api,
      SVC_ADMIN_KEY: sim.keys.admin,
      PLATFORM_CLOCK: 'simulator',
    };
    for (const job of ['usage', 'models']) {
      const run = runCli(['collect', job, '--from', '2026-10-01', '--to', '2026-11-22'], env);
      expect((await run.exited).code, run.stderr()).toBe(0);
    }
    const report = runCli(['report', 'changes', '--month', '2026-11'], env);
    expect((await report.exited).code, report.stderr()).toBe(0);
    const rows = parseCsv(report.stdout(), { columns: true }) as Array<Record<string, string>>;
    const total = (from: string, to: string) => {
      const sums = new Map<string, bigint>();
      for (const r of sim!.truth.usage({ from, to, timezone: 'UTC', timeframe: 'day' })) sums.set('USD', (sums.get('USD') ?? 0n) + BigInt(r.cost_total_nanos));
      for (const r of sim!.truth.modelUsage({ from, to, timezone: 'UTC', timeframe: 'day' })) sums.set(r.currency, (sums.get(r.currency) ?? 0n) + r.cost_total_nanos);
      return sums;
    };
    const oct = total('2026-10-01', '2026-11-01');
    const nov = total('2026-11-01', '2026-12-01');
    const totals = rows.filter((r) => r.row_type === 'total');
    expect(totals.map((t) => t.currency).sort()).toEqual([...new Set([...oct.keys(), ...nov.keys()])].sort());
    const n = (v: string) => decimalToScaled(v, 12);
    for (const t of totals) {
      expect(n(t.baseline_cost), `${t.currency} October`).toBe((oct.get(t.currency) ?? 0n) * 1000n);
      expect(n(t.current_cost), `${t.currency} November`).toBe((nov.get(t.currency) ?? 0n) * 1000n);
      expect(n(t.volume) + n(t.price) + n(t.discount) + n(t.new) + n(t.gone)).toBe(n(t.difference));
      expect(n(t.difference)).toBe(n(t.current_cost) - n(t.baseline_cost));
    }
    expect(rows.filter((r) => r.row_type === 'group').length).toBeGreaterThan(0);
  }, 240_000);
});
