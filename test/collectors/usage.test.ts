import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DateTime } from 'luxon';
import { startSim, type Sim } from '../../src/sim/index.js';
import type { Runtime } from '../../src/runtime.js';
import { decimalToScaled } from '../../src/values.js';
import { openTestRuntime, closeRuntime, queryRows } from '../support/store.js';
import { runJob, simClient } from '../support/jobs.js';
import type { JobDefinition } from '../../src/collectors/job.js';
import { usageJob } from '../../jobs/usage.js';

const NOW = '2026-11-21T12:00:00Z';
const FROM = '2026-10-17'; // 35 days before now, across the America/New_York DST change of 2026-11-01
const TO = '2026-11-22'; // exclusive: through today

let rt: Runtime;
let sim: Sim;

beforeAll(async () => {
  rt = await openTestRuntime();
  sim = await startSim({ seed: 7, now: NOW, days: 40 });
});
afterAll(async () => {
  await sim.close();
  await closeRuntime(rt);
});

type Totals = Map<string, bigint>;

/** The truth: cost (nanos) per app and local day, summing surge and non-surge rows. */
function truthDaily(timezone: string, from = FROM, to = TO): Totals {
  const out: Totals = new Map();
  for (const r of sim.truth.usage({ from, to, timezone, timeframe: 'day' })) {
    const day = DateTime.fromISO(r.bucket!, { setZone: true }).toISODate();
    const key = `${day}|${r.app}`;
    out.set(key, (out.get(key) ?? 0n) + BigInt(r.cost_total_nanos));
  }
  return out;
}

async function storedDaily(timezone: string): Promise<Totals> {
  const rows = await queryRows<{ day: string; app: string; cost: string }>(
    rt,
    `SELECT toString(bucket_date) AS day, app, toString(sum(cost_total)) AS cost
     FROM usage_buckets FINAL
     WHERE timezone = {tz:String} AND timeframe = 'day' AND bucket_date >= {from:Date} AND bucket_date < {to:Date}
     GROUP BY day, app`,
    { tz: timezone, from: FROM, to: TO },
  );
  return new Map(rows.map((r) => [`${r.day}|${r.app}`, decimalToScaled(r.cost, 9)]));
}

function sortedEntries(m: Totals) {
  return [...m.entries()].filter(([, v]) => v !== 0n).sort(([a], [b]) => a.localeCompare(b));
}

describe('usage collector against the simulator', () => {
  it.each(['UTC', 'America/New_York', 'Asia/Kolkata'])(
    'cost per app per day equals the truth to the nano in %s, and re-collecting changes nothing',
    async (timezone) => {
      const first = await runJob(rt, sim, 'usage', { from: FROM, to: TO, timezone });
      expect(first.status, first.error).toBe('ok');
      const truth = truthDaily(timezone);
      expect(truth.size).toBeGreaterThan(35 * 50);
      const stored = await storedDaily(timezone);
      expect(sortedEntries(stored)).toEqual(sortedEntries(truth));

      const again = await runJob(rt, sim, 'usage', { from: FROM, to: TO, timezone });
      expect(again.status).toBe('ok');
      expect(sortedEntries(await storedDaily(timezone))).toEqual(sortedEntries(truth));
    },
  );

  it('keeps surge and non-surge rows apart, and per-app totals include both', async () => {
    const rows = await queryRows<{ app: string; machine_type: string; surge: string; plain: string; n_surge: string }>(
      rt,
      `SELECT app, machine_type,
              toString(sumIf(cost_total, is_surge)) AS surge, toString(sumIf(cost_total, NOT is_surge)) AS plain,
              countIf(is_surge) AS n_surge
       FROM usage_buckets FINAL WHERE timezone = 'UTC' AND timeframe = 'day' AND bucket_date >= {from:Date} AND bucket_date < {to:Date}
       GROUP BY app, machine_type HAVING n_surge > 0 AND plain != '0'`,
      { from: FROM, to: TO },
    );
    expect(rows.length).toBeGreaterThan(0);
    const truth = sim.truth.usage({ from: FROM, to: TO, timezone: 'UTC', timeframe: 'day' });
    for (const r of rows.slice(0, 10)) {
      const mine = truth.filter((t) => t.app === r.app && t.machine_type === r.machine_type);
      const surge = mine.filter((t) => t.is_surge).reduce((s, t) => s + BigInt(t.cost_total_nanos), 0n);
      const plain = mine.filter((t) => !t.is_surge).reduce((s, t) => s + BigInt(t.cost_total_nanos), 0n);
      expect(decimalToScaled(r.surge, 9)).toBe(surge);
      expect(decimalToScaled(r.plain, 9)).toBe(plain);
    }
  });

  it('stores the platform summary per month chunk, equal to the sum of the daily buckets to the cent', async () => {
    const rows = await queryRows<{ range_start: string; range_end: string; app: string; summary: string; daily: string }>(
      rt,
      `SELECT toString(s.range_start) AS range_start, toString(s.range_end) AS range_end, s.app AS app, toString(s.cost) AS summary, toString(d.cost) AS daily
       FROM (SELECT range_start, range_end, app, sum(cost_total) AS cost FROM usage_summaries FINAL
             WHERE timezone = 'America/New_York' GROUP BY range_start, range_end, app) AS s
       LEFT JOIN (SELECT toStartOfMonth(bucket_date) AS month, app, sum(cost_total) AS cost FROM usage_buckets FINAL
             WHERE timezone = 'America/New_York' AND timeframe = 'day' AND bucket_date >= {from:Date} AND bucket_date < {to:Date}
             GROUP BY month, app) AS d
       ON d.month = toStartOfMonth(s.range_start) AND d.app = s.app
       WHERE s.range_start >= {from:Date}`,
      { from: FROM, to: TO },
    );
    expect(new Set(rows.map((r) => `${r.range_start}..${r.range_end}`))).toEqual(
      new Set(['2026-10-17..2026-11-01', '2026-11-01..2026-11-22']),
    );
    for (const r of rows) {
      const diff = decimalToScaled(r.summary, 9) - decimalToScaled(r.daily, 9);
      expect(diff < 0n ? -diff : diff, `${r.app} ${r.range_start}`).toBeLessThan(5_000_000n); // < half a cent
    }
    // And the summary is exactly the platform's (the truth's) summary for the range.
    const truthSummary = sim.truth.usageSummary({ from: '2026-11-01', to: TO, timezone: 'America/New_York' });
    const storedSummary = await queryRows<{ n: string; cost: string }>(
      rt,
      `SELECT count() AS n, toString(sum(cost_total)) AS cost FROM usage_summaries FINAL
       WHERE timezone = 'America/New_York' AND range_start = '2026-11-01' AND range_end = '2026-11-22'`,
    );
    expect(Number(storedSummary[0].n)).toBe(truthSummary.length);
    expect(decimalToScaled(storedSummary[0].cost, 9)).toBe(truthSummary.reduce((s, t) => s + BigInt(t.cost_total_nanos), 0n));
  });

  it('never sends more than 50 app names in one request', async () => {
    const apps = sim.truth.apps().filter((a) => a.owned_by_caller).map((a) => a.name);
    expect(apps.length).toBeGreaterThanOrEqual(60);
    const before = sim.requestLog().length;
    const run = await runJob(rt, sim, 'usage', { from: '2026-11-20', to: '2026-11-22', timezone: 'UTC', apps: apps.join(',') });
    expect(run.status, run.error).toBe('ok');
    const calls = sim.requestLog().slice(before).filter((c) => c.path === '/v1/serverless/usage');
    const counts = calls.map((c) => {
      const v = c.query.app;
      return (Array.isArray(v) ? v : v ? [v] : []).flatMap((s) => s.split(',')).length;
    });
    expect(Math.max(...counts)).toBe(50);
    expect(counts.every((n) => n <= 50)).toBe(true);
    // Every app was asked for, in time series and summary calls alike.
    const asked = new Set(calls.flatMap((c) => [c.query.app].flat().filter((x): x is string => typeof x === 'string')));
    expect(asked).toEqual(new Set(apps));
  });
});

describe('usage collector under faults and with the wrong key', () => {
  it('with 20% faults the totals still equal the truth, and job_runs shows the retries', async () => {
    const faulty = await startSim({ seed: 7, now: NOW, days: 40, faultRate: 0.2, slowMs: 3_000 });
    try {
      const run = await runJob(rt, faulty, 'usage', { from: '2026-11-01', to: TO, timezone: 'Europe/Berlin' });
      expect(run.status, run.error).toBe('ok');
      expect(run.retries).toBeGreaterThan(0);
      const truth = truthDaily('Europe/Berlin', '2026-11-01', TO);
      const rows = await queryRows<{ day: string; app: string; cost: string }>(
        rt,
        `SELECT toString(bucket_date) AS day, app, toString(sum(cost_total)) AS cost FROM usage_buckets FINAL
         WHERE timezone = 'Europe/Berlin' AND timeframe = 'day' GROUP BY day, app`,
      );
      const stored: Totals = new Map(rows.map((r) => [`${r.day}|${r.app}`, decimalToScaled(r.cost, 9)]));
      expect(sortedEntries(stored)).toEqual(sortedEntries(truth));
      const [recorded] = await queryRows<{ status: string; retries: string; rows: string }>(
        rt,
        'SELECT status, retries, rows FROM job_runs WHERE run_id = {id:UUID}',
        { id: run.runId },
      );
      expect(recorded.status).toBe('ok');
      expect(Number(recorded.retries)).toBe(run.retries);
      expect(Number(recorded.rows)).toBe(run.rows);
      expect(Number(recorded.rows)).toBeGreaterThan(0);
      expect(Object.values(faulty.stats().faultsInjected).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    } finally {
      await faulty.close();
    }
  });

  it('with only an API-scope key the usage job fails once per run naming the ADMIN scope; other jobs keep running', async () => {
    const ticks: string[] = [];
    const other: JobDefinition = {
      name: 'other',
      description: 'a job that needs only the API key',
      defaultCron: '* * * * *',
      scope: 'api',
      label: 'the other collector',
      async run(ctx) {
        const meta = await ctx.platform.getJson('/v1/meta', { ctx: ctx.call });
        ticks.push(JSON.stringify(meta).slice(0, 20));
      },
    };
    const platform = simClient(sim, { api: sim.keys.api, admin: sim.keys.api }); // the "admin" key is an API-scope key
    const before = sim.requestLog().length;
    const results = [];
    for (let i = 0; i < 2; i++) {
      results.push(await runJob(rt, sim, 'usage', { timezone: 'UTC' }, { platform, jobs: [usageJob, other] }));
      results.push(await runJob(rt, sim, 'other', {}, { platform, jobs: [usageJob, other] }));
    }
    await platform.close();
    const usageRuns = results.filter((r) => r.job === 'usage');
    expect(usageRuns.map((r) => r.status)).toEqual(['failed', 'failed']);
    for (const r of usageRuns) {
      expect(r.error).toMatch(/the usage collector needs an ADMIN-scope key/);
      expect(r.retries).toBe(0);
    }
    expect(results.filter((r) => r.job === 'other').map((r) => r.status)).toEqual(['ok', 'ok']);
    expect(ticks).toHaveLength(2);
    // One refused call per run: no retry storm.
    const usageCalls = sim.requestLog().slice(before).filter((c) => c.path === '/v1/serverless/usage');
    expect(usageCalls).toHaveLength(2);

    const noAdmin = simClient(sim, { api: sim.keys.api });
    const missing = await runJob(rt, sim, 'usage', { timezone: 'UTC' }, { platform: noAdmin });
    await noAdmin.close();
    expect(missing.status).toBe('failed');
    expect(missing.error).toMatch(/the usage collector needs an ADMIN-scope key/);
  });
});
