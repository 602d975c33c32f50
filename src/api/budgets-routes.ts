import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Runtime } from '../runtime.js';
import { badParameter, dateParam, formatParam, monthParam, sendTable, isoDay } from './http.js';
import type { RouteRegistry } from './routes.js';
import { budgetsReport, configuredBudgets } from './budgets-report.js';

export const BudgetsResponse = z.object({
  month: z.string(),
  timezone: z.string(),
  today: isoDay().describe('the day the figures are as of; days before it are complete'),
  budgets: z.array(
    z.object({
      scope: z.enum(['app', 'endpoint', 'api_key', 'product']),
      name: z.string(),
      currency: z.string(),
      amount: z.string().describe('monthly budget, exact decimal text'),
      month: z.string(),
      spent: z.string().describe('cost of the month so far (today included), exact decimal text'),
      days_elapsed: z.number().int().describe('complete days the forecast learns from'),
      days_in_month: z.number().int(),
      forecast: z.string().describe('month-end forecast: spent + days left x mean daily cost of the complete days (2 decimals)'),
      interval: z.object({
        low: z.string(),
        high: z.string().nullable().describe('null while fewer than two days are complete'),
        level: z.number().describe('0.9: forecast -/+ 1.645 x s x sqrt(r + r^2 / d)'),
      }),
      status: z.enum(['ok', 'at_risk', 'over']).describe('over: spent passed the amount; at_risk: the interval reaches it'),
      spent_final: z.boolean().describe("spent can no longer change: every day of the month so far is final for the budget's product"),
    }),
  ),
});

const COLUMNS = ['scope', 'name', 'currency', 'amount', 'spent', 'forecast', 'forecast_low', 'forecast_high', 'status', 'days_elapsed', 'days_in_month', 'spent_final'];

/** GET /budgets: each configured budget's spend, month-end forecast with interval, and status (src/insights/budgets.ts). */
export function budgetRoutes(app: FastifyInstance, registry: RouteRegistry, rt: Runtime, checkTimezone: (rt: Runtime, tz: string) => Promise<void>): void {
  registry.get(app, {
    path: '/budgets',
    operationId: 'getBudgets',
    response: BudgetsResponse,
    summary: 'Budgets (BUDGETS, BUDGETS_FILE, APP_BUDGETS): spent this month, month-end forecast with a 90% interval, and status ok | at_risk | over',
    description:
      'Per budget (an app, a model endpoint, an API key or a product, in its currency): spent so far, forecast = spent + days left x the mean daily cost of the complete days, with a 90% interval from the spread of those days, and status: over once spent passes the amount, at_risk when the interval reaches it, else ok.',
    query: z.strictObject({
      month: monthParam('the budget month').optional().describe('default: the current month'),
      today: dateParam('the day to answer as of (default: today in timezone)').optional(),
      timezone: z.string().optional().describe('one of the collected timezones (default: the first of TIMEZONES)'),
      format: formatParam,
    }),
    csv: true,
    handler: async (q, request, reply) => {
      const timezone = q.timezone ?? rt.config.TIMEZONES[0];
      await checkTimezone(rt, timezone);
      if (q.month && q.today && q.today < `${q.month}-01`) throw badParameter('today', `expected a day on or after ${q.month}-01`);
      const report = await budgetsReport(rt.store, configuredBudgets(rt.config), { timezone, month: q.month, today: q.today, now: rt.now(), windowHours: rt.config.LATE_BILLING_WINDOW_HOURS });
      const table = {
        columns: COLUMNS,
        rows: report.budgets.map((b) => ({
          scope: b.scope,
          name: b.name,
          currency: b.currency,
          amount: b.amount,
          spent: b.spent,
          forecast: b.forecast,
          forecast_low: b.interval.low,
          forecast_high: b.interval.high,
          status: b.status,
          days_elapsed: b.days_elapsed,
          days_in_month: b.days_in_month,
          spent_final: b.spent_final,
        })),
      };
      return sendTable(reply, request, q.format, table, () => report, `budgets-${report.month}.csv`);
    },
  });
}
