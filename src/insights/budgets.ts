// Budgets with forecasts (issue 32.3): one pure module (no I/O) that takes a budget and the daily cost of its
// month so far and returns spent, the month-end forecast with an interval, and the status. The API route, the
// gauges and the alert rules all read what this returns.
//
// Forecast (documented in the README, "Budgets"): with d complete days of the month costing c_1..c_d (mean m,
// sample standard deviation s) and r days left, forecast = spent + r x m. Its interval treats the days left as
// independent draws like the days seen: the remaining sum has variance s^2 x r, and the mean itself is uncertain
// by s^2 / d, scaled by r^2; so sd = s x sqrt(r + r^2 / d), and the interval is forecast -/+ z x sd with z = 1.645
// (a 90% normal interval), never below spent. With fewer than 2 complete days the interval is [spent, infinity)
// (nothing to estimate a spread from) and the forecast is spent + r x m (m = the one day, or 0).
import { addDecimals, decimalToScaled, scaledToDecimal } from '../values.js';

export type BudgetScope = 'app' | 'endpoint' | 'api_key' | 'product';
export type BudgetStatus = 'ok' | 'at_risk' | 'over';

export interface Budget {
  scope: BudgetScope;
  /** The app (owner/name or name as usage reports it), model endpoint, API key (label or id) or product. */
  name: string;
  /** Monthly amount, exact decimal text. */
  amount: string;
  currency: string;
}

export interface DailyCost {
  /** YYYY-MM-DD, a day of the month. */
  day: string;
  /** Exact decimal text. */
  cost: string;
}

export interface BudgetFigures extends Budget {
  month: string;
  /** The month's cost so far (every day given, the current one included), exact. */
  spent: string;
  /** Complete days the forecast learns from, and the month's days. */
  days_elapsed: number;
  days_in_month: number;
  /** Month-end forecast, rounded to 2 decimals (an estimate, not money charged). */
  forecast: string;
  interval: { low: string; high: string | null; level: number };
  status: BudgetStatus;
}

const Z90 = 1.645;
const SCALE = 12;

const cents = (v: number) => (Math.round(v * 100) / 100).toFixed(2);

/**
 * The figures of one budget on a day: `costs` are the month's daily costs in the budget's currency up to and
 * including `today` (a day not given cost nothing); days before `today` are complete, `today` counts toward spent
 * but not toward the forecast's rate.
 */
export function budgetFigures({ budget, month, costs, today }: { budget: Budget; month: string; costs: DailyCost[]; today: string }): BudgetFigures {
  const [y, mo] = month.split('-').map(Number);
  const daysInMonth = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  const todayIndex = today.startsWith(month) ? Number(today.slice(8, 10)) : today > month ? daysInMonth + 1 : 1;
  const inMonth = costs.filter((c) => c.day.startsWith(month) && Number(c.day.slice(8, 10)) <= Math.min(todayIndex, daysInMonth));
  const spent = addDecimals(inMonth.map((c) => c.cost), SCALE);
  const complete = Math.min(todayIndex - 1, daysInMonth);
  const perDay = new Array<number>(Math.max(complete, 0)).fill(0);
  for (const c of inMonth) {
    const i = Number(c.day.slice(8, 10)) - 1;
    if (i < complete) perDay[i] += Number(c.cost);
  }
  const left = daysInMonth - complete;
  const spentNumber = Number(spent);
  // What today has already cost is in spent; the days left include today, so today's partial cost is replaced by a
  // whole expected day (the rate of the complete days) only for the part not yet spent.
  const todaySpent = inMonth.filter((c) => Number(c.day.slice(8, 10)) === todayIndex).reduce((a, c) => a + Number(c.cost), 0);
  const mean = perDay.length > 0 ? perDay.reduce((a, b) => a + b, 0) / perDay.length : 0;
  const forecast = left === 0 ? spentNumber : spentNumber - todaySpent + Math.max(mean * left, todaySpent);
  let low = forecast;
  let high: number | null = forecast;
  if (left > 0) {
    if (perDay.length >= 2) {
      const variance = perDay.reduce((a, b) => a + (b - mean) ** 2, 0) / (perDay.length - 1);
      const sd = Math.sqrt(variance) * Math.sqrt(left + (left * left) / perDay.length);
      low = Math.max(spentNumber, forecast - Z90 * sd);
      high = forecast + Z90 * sd;
    } else {
      low = spentNumber;
      high = null;
    }
  }
  const amount = decimalToScaled(budget.amount, SCALE);
  const spentScaled = decimalToScaled(spent, SCALE);
  // `over` only once spend has passed the budget; `at_risk` when the interval's top reaches it (the forecast itself
  // while there is no interval yet).
  // Compared as shown (in cents), so the status never contradicts the figures beside it.
  const status: BudgetStatus = spentScaled > amount ? 'over' : Number(cents(high ?? forecast)) >= Number(budget.amount) ? 'at_risk' : 'ok';
  return {
    ...budget,
    month,
    spent: scaledToDecimal(spentScaled, SCALE),
    days_elapsed: Math.max(complete, 0),
    days_in_month: daysInMonth,
    forecast: cents(forecast),
    interval: { low: cents(low), high: high === null ? null : cents(high), level: 0.9 },
    status,
  };
}
