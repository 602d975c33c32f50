// Regressions found in review, each reproduced against the simulator before it was fixed.
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim } from '../../src/sim/index.js';
import type { PlatformClient } from '../../src/platform/index.js';
import { Scheduler } from '../../src/jobs/scheduler.js';
import { financeReport } from '../../src/api/finance.js';
import { allJobs } from '../../jobs/index.js';
import type { Runtime } from '../../src/runtime.js';
import { decimalToScaled } from '../../src/values.js';
import { closeRuntime, openTestRuntime, queryRows } from '../support/store.js';
import { jobArgs, runJob, simClient } from '../support/jobs.js';

let rt: Runtime;
const prices = join(mkdtempSync(join(tmpdir(), 'th-reg-')), 'prices.json');
writeFileSync(prices, '[]');

beforeAll(async () => {
  rt = await openTestRuntime({ TIMEZONES: 'UTC', PRICES_FILE: prices });
});
afterAll(async () => {
  await closeRuntime(rt);
});

/** A platform client whose pages can be altered or failed on demand. */
function tamperable(real: PlatformClient, hooks: { page?: (page: Record<string, unknown>) => void; fail?: () => boolean }): PlatformClient {
  return new Proxy(real, {
    get(target, prop) {
      if (prop === 'paginate') {
        return async function* (path: string, opts: unknown) {
          if (hooks.fail?.()) throw new Error('platform outage');
          for await (const page of (target.paginate as (p: string, o: unknown) => AsyncIterable<Record<string, unknown>>)(path, opts)) {
            hooks.page?.(page);
            yield page;
          }
        };
      }
      const v = (target as unknown as Record<string | symbol, unknown>)[prop];
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

const nanos = (v: string) => decimalToScaled(v, 9);

describe('usage across a month end', () => {
  it("the finance report reconciles a finished month: its summary is collected again after the month's last day", async () => {
    // Scheduled runs late on Oct 31 and early on Nov 1 and 2 (UTC), as the cron would make them.
    for (const now of ['2026-10-31T23:30:00Z', '2026-11-01T06:00:00Z', '2026-11-02T06:00:00Z']) {
      const sim = await startSim({ seed: 3, now, days: 40, apps: 20 });
      const run = await runJob(rt, sim, 'usage', { timezone: 'UTC' });
      expect(run.status, run.error).toBe('ok');
      await sim.close();
    }
    const report = await financeReport(rt.store, '2026-10', 'UTC', new Date('2026-11-02T06:00:00Z'));
    expect(report.reconciliation.complete_month).toBe(true);
    expect(report.reconciliation.flagged).toBe(0);
    const sim = await startSim({ seed: 3, now: '2026-11-02T06:00:00Z', days: 40, apps: 20 });
    const truthTotal = sim.truth
      .usage({ from: '2026-10-01', to: '2026-11-01', timezone: 'UTC', timeframe: 'day' })
      .reduce((s, r) => s + BigInt(r.cost_total_nanos), 0n);
    const summaryTotal = sim.truth.usageSummary({ from: '2026-10-01', to: '2026-11-01', timezone: 'UTC' }).reduce((s, r) => s + BigInt(r.cost_total_nanos), 0n);
    await sim.close();
    expect(nanos(report.totals[0].total)).toBe(truthTotal);
    expect(nanos(report.totals[0].platform_summary_total!)).toBe(summaryTotal);
  });
});

describe('usage re-collection with a malformed row', () => {
  it('keeps the stored version of a row it could not read this time, and keeps the reject', async () => {
    const sim = await startSim({ seed: 4, now: '2026-11-10T12:00:00Z', days: 20, apps: 10 });
    const real = simClient(sim);
    let corrupt = false;
    const platform = tamperable(real, {
      page(page) {
        const series = page.time_series as Array<{ results: Array<Record<string, unknown>> }> | undefined;
        const row = series?.[1]?.results?.[0];
        if (corrupt && row) {
          row.quantity = String(row.quantity); // a field the collector refuses
          corrupt = false;
        }
      },
    });
    const scheduler = new Scheduler({ runtime: rt, platform, jobs: allJobs, now: () => sim.clock.now() });
    const args = { from: '2026-11-01', to: '2026-11-08', timezone: 'Europe/Lisbon' };
    const total = async () =>
      (
        await queryRows<{ n: string; cost: string }>(
          rt,
          "SELECT count() AS n, toString(sum(cost_total)) AS cost FROM usage_buckets FINAL WHERE timezone = 'Europe/Lisbon'",
        )
      )[0];
    expect((await scheduler.run('usage', 'manual', jobArgs('usage', args))).status).toBe('ok');
    const before = await total();
    const truth = sim.truth.usage({ ...args, timeframe: 'day' }).reduce((s, r) => s + BigInt(r.cost_total_nanos), 0n);
    expect(nanos(before.cost)).toBe(truth);
    corrupt = true;
    expect((await scheduler.run('usage', 'manual', jobArgs('usage', args))).status).toBe('ok');
    expect(await total()).toEqual(before);
    const [rejects] = await queryRows<{ n: string }>(rt, "SELECT count() AS n FROM ingest_rejects WHERE source = 'collector:usage' AND reason LIKE 'quantity:%'");
    expect(Number(rejects.n)).toBe(1);
    await real.close();
    await sim.close();
  });
});

describe('requests rollup after a price change', () => {
  it('a price change in a run that then fails still reaches requests_daily (the raw table answers meanwhile)', async () => {
    const sim = await startSim({ seed: 31, now: '2026-11-21T12:00:00Z', days: 5, apps: 3, requestsPerHour: 30 });
    const endpoints = sim.truth.apps().filter((a) => a.owned_by_caller).flatMap((a) => a.endpoints);
    const price = (unit_price: string) =>
      writeFileSync(prices, JSON.stringify(endpoints.map((endpoint_id) => ({ endpoint_id, unit_price, currency: 'USD', effective_from: '2026-11-01T00:00:00Z' }))));
    const real = simClient(sim);
    let fail = false;
    const platform = tamperable(real, { fail: () => fail });
    const scheduler = new Scheduler({ runtime: rt, platform, jobs: allJobs, now: () => sim.clock.now() });
    price('0.0005');
    expect((await scheduler.run('apps', 'manual')).status).toBe('ok');
    expect((await scheduler.run('requests', 'manual', jobArgs('requests', { 'lookback-hours': '72' }))).status).toBe('ok');
    // Oracle: the simulator's billed requests of that day times the price in the file, in integers (scale 18),
    // not a copy of the production ASOF JOIN.
    const truthCost = (unitPrice: string): bigint => {
      const byId = new Map<string, bigint>();
      for (const ep of endpoints) {
        for (const r of sim.truth.requestList({ endpointId: ep, from: '2026-11-18T00:00:00Z', to: '2026-11-21T00:00:00Z' })) {
          if (r.ended_at.startsWith('2026-11-19')) byId.set(r.request_id, decimalToScaled(String(r.billable_units), 9) * decimalToScaled(unitPrice, 9));
        }
      }
      return [...byId.values()].reduce((a, b) => a + b, 0n);
    };
    const rollup = async (): Promise<bigint> => {
      const [row] = await queryRows<{ cost: string }>(rt, "SELECT toString(sum(cost)) AS cost FROM requests_daily FINAL WHERE timezone = 'UTC' AND day = '2026-11-19'");
      return decimalToScaled(row.cost, 18);
    };
    const first = truthCost('0.0005');
    expect(first).toBeGreaterThan(0n);
    expect(await rollup()).toBe(first);
    price('0.0009');
    fail = true;
    expect((await scheduler.run('requests', 'manual')).status).toBe('failed');
    fail = false;
    expect((await scheduler.run('requests', 'manual')).status).toBe('ok');
    expect(await rollup()).toBe(truthCost('0.0009'));
    await real.close();
    await sim.close();
  });
});

describe('usage rows that vanish from the platform', () => {
  it('are tombstoned by the next collection of their range, so totals follow the platform', async () => {
    const sim = await startSim({ seed: 5, now: '2026-11-10T12:00:00Z', days: 20, apps: 10 });
    const real = simClient(sim);
    let drop: string | null = null;
    const platform = tamperable(real, {
      page(page) {
        if (!drop) return;
        for (const s of (page.time_series as Array<{ results: Array<{ app: string }> }> | undefined) ?? []) s.results = s.results.filter((r) => r.app !== drop);
        if (Array.isArray(page.summary)) page.summary = (page.summary as Array<{ app: string }>).filter((r) => r.app !== drop);
      },
    });
    const scheduler = new Scheduler({ runtime: rt, platform, jobs: allJobs, now: () => sim.clock.now() });
    const args = { from: '2026-11-01', to: '2026-11-08', timezone: 'Asia/Tokyo' };
    expect((await scheduler.run('usage', 'manual', jobArgs('usage', args))).status).toBe('ok');
    const apps = async () =>
      (await queryRows<{ app: string }>(rt, "SELECT DISTINCT app FROM usage_buckets FINAL WHERE timezone = 'Asia/Tokyo' ORDER BY app")).map((r) => r.app);
    const all = await apps();
    drop = all[0];
    expect((await scheduler.run('usage', 'manual', jobArgs('usage', args))).status).toBe('ok');
    expect(await apps()).toEqual(all.slice(1));
    const expected = sim.truth
      .usage({ ...args, timeframe: 'day' })
      .filter((r) => r.app !== drop)
      .reduce((s, r) => s + BigInt(r.cost_total_nanos), 0n);
    const [stored] = await queryRows<{ cost: string }>(rt, "SELECT toString(sum(cost_total)) AS cost FROM usage_buckets FINAL WHERE timezone = 'Asia/Tokyo'");
    expect(nanos(stored.cost)).toBe(expected);
    const [summary] = await queryRows<{ n: string }>(
      rt,
      "SELECT count() AS n FROM usage_summaries FINAL WHERE timezone = 'Asia/Tokyo' AND app = {app:String}",
      { app: drop },
    );
    expect(Number(summary.n)).toBe(0);
    await real.close();
    await sim.close();
  });
});
