// README: the finance report reconciles each app with the platform's own monthly summary and flags a difference,
// "a row missing on one side" included: an app whose summary is missing (all its cost unconfirmed), and a
// summary of an app with no collected usage (all its cost missing from the report). Oracle: the simulator's
// truth for the month, and literals for the row this test adds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { decimalToScaled } from '../../src/values.js';
import { runJob } from '../support/jobs.js';
import { queryRows, testConfig } from '../support/store.js';

let sim: Sim;
let service: Service;

beforeAll(async () => {
  sim = await startSim({ seed: 23, now: '2026-11-21T12:00:00Z', days: 60, apps: 20 });
  service = await startService(testConfig({ PORT: '0' }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension()],
  });
  const run = await runJob(service, sim, 'usage', { from: '2026-10-01', to: '2026-11-01', timezone: 'UTC' });
  expect(run.status, run.error).toBe('ok');
});
afterAll(async () => {
  await service?.close();
  await sim?.close();
});

interface Reconciled {
  app: string;
  machine_type: string;
  currency: string;
  daily_total: string;
  summary_total: string | null;
  difference: string | null;
  flagged: boolean;
}

async function reconciliation(): Promise<{ flagged: number; rows: Reconciled[] }> {
  const res = await fetch(`${service.url}/api/v1/reports/finance?month=2026-10&timezone=UTC`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { reconciliation: { flagged: number; rows: Reconciled[] } }).reconciliation;
}

const nanos = (v: string | null) => (v === null ? 0n : decimalToScaled(v, 9));

describe('reconciliation with a row missing on one side', () => {
  it('flags an app whose summary is missing and a summary without usage, each by its whole amount', async () => {
    const before = await reconciliation();
    expect(before.rows.length).toBeGreaterThan(5);
    expect(before.flagged).toBe(0);

    // The platform summary of one app is gone (tombstoned); a summary appears for an app with no usage.
    const victim = before.rows.find((r) => nanos(r.daily_total) > 0n)!;
    await service.store.client.command({
      query: `INSERT INTO usage_summaries SELECT * REPLACE (1 AS is_deleted, version + 1 AS version)
              FROM usage_summaries FINAL WHERE timezone = 'UTC' AND range_start = '2026-10-01' AND app = {app:String}`,
      query_params: { app: victim.app },
    });
    await service.store.client.command({
      query: `INSERT INTO usage_summaries (timezone, range_start, range_end, app, environment, machine_type, is_surge, unit, quantity, unit_price, cost_total, currency, raw, version, collected_at)
              VALUES ('UTC', '2026-10-01', '2026-11-01', 'ghost-app', 'production', 'GPU-H100', false, 'machine-seconds', 100, 0.125, 12.5, 'USD', '{}', 1, now64(3))`,
    });
    const after = await reconciliation();
    const flagged = after.rows.filter((r) => r.flagged).sort((a, b) => (a.app < b.app ? -1 : 1));
    expect([...new Set(flagged.map((r) => r.app))].sort()).toEqual(['ghost-app', victim.app].sort());
    const missingSummary = flagged.find((r) => r.app === victim.app)!;
    // (one row per app and machine type: the victim's rows are all flagged; compare their sum)
    const victimRows = flagged.filter((r) => r.app === victim.app);
    expect(missingSummary.summary_total).toBeNull();
    // The whole collected amount is unconfirmed: the truth's October cost of that app.
    const truthTotal = sim.truth
      .usage({ from: '2026-10-01', to: '2026-11-01', timezone: 'UTC', timeframe: 'day' })
      .filter((r) => r.app === victim.app)
      .reduce((n, r) => n + BigInt(r.cost_total_nanos), 0n);
    expect(truthTotal).toBeGreaterThan(0n);
    expect(victimRows.reduce((n, r) => n + nanos(r.daily_total), 0n)).toBe(truthTotal);
    expect(victimRows.every((r) => r.summary_total === null)).toBe(true);
    const ghost = flagged.find((r) => r.app === 'ghost-app')!;
    expect(nanos(ghost.daily_total)).toBe(0n);
    expect(nanos(ghost.summary_total)).toBe(12_500_000_000n);
    expect(nanos(ghost.difference)).toBe(-12_500_000_000n);
    const rows = await queryRows<{ n: string }>(service, "SELECT count() AS n FROM usage_summaries FINAL WHERE app = 'ghost-app'");
    expect(Number(rows[0].n)).toBe(1);
  });
});
