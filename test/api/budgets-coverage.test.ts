// Budgets, acceptance 3 of issue 32: across the simulated apps, the month-end forecast interval made on day 10
// (ten complete days) contains the actual month-end cost for at least 80% of apps (the coverage is printed), and
// `over` is never shown before spend passes the budget. Daily costs and month-ends come from the simulator's
// truth; the forecast is src/insights/budgets.ts, the module the API and gauges use.
import { describe, expect, it } from 'vitest';
import { DateTime } from 'luxon';
import { budgetFigures } from '../../src/insights/budgets.js';
import { SimModel } from '../../src/sim/model.js';
import { createTruth } from '../../src/sim/truth.js';
import { Webhooks } from '../../src/sim/webhooks.js';
import { Drain } from '../../src/sim/drain.js';
import { decimalToScaled, scaledToDecimal } from '../../src/values.js';

describe('budget forecasts over the simulated apps (issue 32, acceptance 3)', () => {
  it('the day-10 interval holds the month-end for at least 80% of apps, and over never shows before spend passes the budget', () => {
    const model = new SimModel({ seed: 21, nowMs: Date.parse('2026-11-21T12:00:00Z'), days: 60, apps: 60, requestsPerHour: 1 });
    const truth = createTruth(model, new Webhooks(model), new Drain(model, { secret: 'unused' }));
    const daily = new Map<string, Map<string, bigint>>(); // app -> day -> nanos
    for (const r of truth.usage({ from: '2026-10-01', to: '2026-11-01', timezone: 'UTC', timeframe: 'day' })) {
      const day = DateTime.fromISO(r.bucket!, { setZone: true }).toISODate()!;
      const m = daily.get(r.app) ?? new Map<string, bigint>();
      daily.set(r.app, m);
      m.set(day, (m.get(day) ?? 0n) + BigInt(r.cost_total_nanos));
    }
    const apps = [...daily.keys()].filter((a) => [...daily.get(a)!.values()].some((v) => v > 0n)).sort();
    expect(apps.length).toBeGreaterThanOrEqual(40);
    const text = (n: bigint) => scaledToDecimal(n, 9);
    let covered = 0;
    let overEarly = 0;
    let overShown = 0;
    for (const app of apps) {
      const days = [...daily.get(app)!.entries()].sort(([a], [b]) => a.localeCompare(b));
      const actual = days.reduce((a, [, v]) => a + v, 0n);
      const costs = days.map(([day, v]) => ({ day, cost: text(v) }));
      const f = budgetFigures({ budget: { scope: 'app', name: app, amount: text(actual), currency: 'USD' }, month: '2026-10', costs: costs.filter((c) => c.day <= '2026-10-10'), today: '2026-10-11' });
      const low = decimalToScaled(f.interval.low, 9);
      const high = f.interval.high === null ? null : decimalToScaled(f.interval.high, 9);
      // The interval is rounded to cents: compare at the cent.
      if (actual >= low - 10_000_000n && (high === null || actual <= high + 10_000_000n)) covered++;
      // A budget of 60% of the month's actual cost: walk the month day by day; over must wait for spend to pass it.
      const budget = (actual * 6n) / 10n;
      let spent = 0n;
      for (const [day, v] of days) {
        const g = budgetFigures({ budget: { scope: 'app', name: app, amount: text(budget), currency: 'USD' }, month: '2026-10', costs: costs.filter((c) => c.day <= day), today: day });
        spent += v;
        if (g.status === 'over') overShown++;
        if (g.status === 'over' && spent <= budget) overEarly++;
        expect(decimalToScaled(g.spent, 9)).toBe(spent);
      }
    }
    const coverage = covered / apps.length;
    console.log(`budget forecast coverage on day 10: ${covered}/${apps.length} apps = ${(coverage * 100).toFixed(1)}% (90% interval); over shown ${overShown} times, before spend passed the budget ${overEarly} times`);
    expect(overShown).toBeGreaterThan(0);
    expect(overEarly).toBe(0);
    expect(coverage).toBeGreaterThanOrEqual(0.8);
  });
});
