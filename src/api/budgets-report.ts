// Budgets as configured (BUDGETS, BUDGETS_FILE, APP_BUDGETS) with their month's daily cost read by the cost
// queries, handed to the pure module (src/insights/budgets.ts). GET /api/v1/budgets and the budget gauges call this.
import { DateTime } from 'luxon';
import type { Config } from '../config.js';
import type { Store } from '../store/client.js';
import { costByGroups } from '../store/tables/usage-buckets.js';
import { modelCostByGroups } from '../store/tables/model-usage.js';
import { budgetFigures, type Budget, type BudgetFigures, type DailyCost } from '../insights/budgets.js';
import { loadFinality } from './finality-report.js';

export function configuredBudgets(config: Pick<Config, 'BUDGETS' | 'BUDGETS_FILE' | 'APP_BUDGETS' | 'BUDGET_CURRENCY'>): Budget[] {
  const listed = [...config.BUDGETS, ...config.BUDGETS_FILE].map((b) => ({ scope: b.scope, name: b.name, amount: b.amount, currency: b.currency ?? config.BUDGET_CURRENCY }));
  const apps = Object.entries(config.APP_BUDGETS)
    .filter(([app]) => !listed.some((b) => b.scope === 'app' && b.name === app))
    .map(([app, amount]) => ({ scope: 'app' as const, name: app, amount: String(amount), currency: config.BUDGET_CURRENCY }));
  return [...listed, ...apps];
}

export interface BudgetsReport {
  month: string;
  timezone: string;
  today: string;
  /** spent_final: every day of the month so far is final for the budget's product (src/insights/finality.ts). */
  budgets: Array<BudgetFigures & { spent_final: boolean }>;
}

/** Every configured budget's figures for `month` (default: the current one) as of `today` (default: the day `now` falls on), in `timezone`. */
export async function budgetsReport(
  store: Pick<Store, 'client'>,
  budgets: Budget[],
  q: { timezone: string; month?: string; today?: string; windowHours?: number; now: Date },
): Promise<BudgetsReport> {
  const today = q.today ?? DateTime.fromJSDate(q.now).setZone(q.timezone).toISODate()!;
  const month = q.month ?? today.slice(0, 7);
  const from = `${month}-01`;
  const to = DateTime.fromISO(from, { zone: 'UTC' }).plus({ months: 1 }).toISODate()!;
  const range = { timezone: q.timezone, from, to, search: '' };
  const need = (scope: Budget['scope']) => budgets.some((b) => b.scope === scope);
  const daily = new Map<string, DailyCost[]>(); // scope|name|currency -> costs
  const put = (key: string, day: string, cost: string) => daily.set(key, [...(daily.get(key) ?? []), { day, cost }]);
  if (need('app')) {
    for (const r of await costByGroups(store, { ...range, groupBy: ['app', 'day'], apps: budgets.filter((b) => b.scope === 'app').map((b) => b.name) })) {
      put(`app|${r.app}|${r.currency}`, String(r.day), r.cost);
    }
  }
  if (need('endpoint')) {
    for (const r of await modelCostByGroups(store, { ...range, groupBy: ['endpoint', 'day'], endpoints: budgets.filter((b) => b.scope === 'endpoint').map((b) => b.name) })) {
      put(`endpoint|${r.endpoint}|${r.currency}`, String(r.day), r.cost);
    }
  }
  if (need('api_key')) {
    for (const r of await modelCostByGroups(store, { ...range, groupBy: ['api_key', 'day'], endpoints: [] })) put(`api_key|${r.api_key}|${r.currency}`, String(r.day), r.cost);
  }
  if (need('product')) {
    for (const r of await costByGroups(store, { ...range, groupBy: ['day'], apps: [] })) put(`product|serverless|${r.currency}`, String(r.day), r.cost);
    for (const r of await modelCostByGroups(store, { ...range, groupBy: ['day'], endpoints: [] })) put(`product|model_api|${r.currency}`, String(r.day), r.cost);
  }
  const upTo = today < to ? DateTime.fromISO(today, { zone: 'UTC' }).plus({ days: 1 }).toISODate()! : to;
  const finalOf = async (product: 'serverless' | 'model_api') =>
    upTo <= from ? false : (await loadFinality(store, { product, timezone: q.timezone, from, to: upTo, windowHours: q.windowHours ?? 48, now: q.now })).final;
  const final = { serverless: await finalOf('serverless'), model_api: await finalOf('model_api') };
  return {
    month,
    timezone: q.timezone,
    today,
    budgets: budgets.map((b) => ({
      ...budgetFigures({ budget: b, month, today, costs: daily.get(`${b.scope}|${b.name}|${b.currency}`) ?? [] }),
      spent_final: final[b.scope === 'app' || (b.scope === 'product' && b.name === 'serverless') ? 'serverless' : 'model_api'],
    })),
  };
}
