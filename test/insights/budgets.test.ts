// src/insights/budgets.ts on hand-worked numbers (README "Budgets"): October 2026 has 31 days; four complete days of
// 10, 12, 8 and 10 (mean 10, sample variance (0 + 4 + 4 + 0) / 3 = 8/3), 27 days left, 40 spent:
// forecast = 40 + 27 x 10 = 310; sd = sqrt(8/3) x sqrt(27 + 27^2 / 4) = 23.62202...; 90% interval
// 310 -/+ 1.645 x 23.62202 = [271.14, 348.86].
import { describe, expect, it } from 'vitest';
import { budgetFigures } from '../../src/insights/budgets.js';

const costs = [
  { day: '2026-10-01', cost: '10' },
  { day: '2026-10-02', cost: '12' },
  { day: '2026-10-03', cost: '8' },
  { day: '2026-10-04', cost: '10' },
];
const budget = (amount: string) => ({ scope: 'app' as const, name: 'acme/flux', amount, currency: 'USD' });

describe('budgetFigures', () => {
  it('forecasts the month-end with its interval (hand-worked)', () => {
    const f = budgetFigures({ budget: budget('400'), month: '2026-10', costs, today: '2026-10-05' });
    expect(f).toMatchObject({ spent: '40', days_elapsed: 4, days_in_month: 31, forecast: '310.00', interval: { low: '271.14', high: '348.86', level: 0.9 }, status: 'ok' });
  });

  it('is at_risk when the interval reaches the budget, over only once spend has passed it', () => {
    expect(budgetFigures({ budget: budget('348.86'), month: '2026-10', costs, today: '2026-10-05' }).status).toBe('at_risk');
    expect(budgetFigures({ budget: budget('348.87'), month: '2026-10', costs, today: '2026-10-05' }).status).toBe('ok');
    expect(budgetFigures({ budget: budget('40'), month: '2026-10', costs, today: '2026-10-05' }).status).toBe('at_risk');
    expect(budgetFigures({ budget: budget('39.999999'), month: '2026-10', costs, today: '2026-10-05' }).status).toBe('over');
  });

  it('counts today in spent but not in the rate, and has no interval with fewer than two complete days', () => {
    // Day 2 with 10 on day 1 and 3 so far today: forecast = 10 + 3 + max(10 x 30, 3) - 3 = 310; interval [13, open).
    const f = budgetFigures({ budget: budget('1000'), month: '2026-10', costs: [{ day: '2026-10-01', cost: '10' }, { day: '2026-10-02', cost: '3' }], today: '2026-10-02' });
    expect(f).toMatchObject({ spent: '13', days_elapsed: 1, forecast: '310.00', interval: { low: '13.00', high: null }, status: 'ok' });
  });

  it('after the month: the forecast is what was spent', () => {
    const f = budgetFigures({ budget: budget('30'), month: '2026-10', costs, today: '2026-11-03' });
    expect(f).toMatchObject({ spent: '40', forecast: '40.00', interval: { low: '40.00', high: '40.00' }, status: 'over' });
  });
});
