import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Runtime } from '../runtime.js';
import { badParameter, checkRangeDays, dateParam, formatParam, listParam, sendTable, isoDay } from './http.js';
import type { RouteRegistry } from './routes.js';
import { CHANGE_GROUP_NAMES, costChangesReport, costChangesTable } from './cost-changes-report.js';
import { changePeriods } from '../insights/cost-changes.js';
import { CoverageResponse } from './coverage-report.js';
import { DateTime } from 'luxon';

const money = (what: string) => z.string().describe(`${what}: exact decimal text, in the row's currency`);
const parts = {
  volume: money('quantity change at the old unit price: (q1 - q0) x p0'),
  price: money('unit-price change at the new quantity: (p1 - p0) x q1'),
  discount: money('change in discount, as its effect on cost: -(d1 - d0)'),
  new: money('the whole current cost of a group absent from the baseline'),
  gone: money('minus the whole baseline cost of a group absent from the current period'),
  not_collected: money('the difference of a group seen in one period only while the other was not wholly collected (unknown, neither new nor gone)'),
};
const figures = z.object({ subtotal: money('before discounts'), discount: money('discounts'), cost: money('net cost') });
const itemFigures = z.object({
  quantity: z.string().describe("in the item's unit (machine-seconds, image, ...), exact decimal text"),
  subtotal: money('before discounts'),
  discount: money('discounts'),
  cost: money('net cost'),
  unit_price: z.string().nullable().describe('subtotal / quantity (the one price, or the period mean when it moved)'),
});

export const CostChangesResponse = z.object({
  timezone: z.string(),
  from: isoDay().describe('current period: first local day, inclusive'),
  to: isoDay().describe('current period: last local day, exclusive'),
  baseline_from: isoDay(),
  baseline_to: isoDay().describe('exclusive'),
  product: z.enum(['all', 'serverless', 'model_api']),
  group_by: z.array(z.string()),
  coverage: CoverageResponse,
  baseline_days: z.number().describe('days in the baseline'),
  current_days: z.number().describe('days in the current period (to date when it is not over)'),
  final: z
    .object({ baseline: z.boolean(), current: z.boolean(), provisional_days: z.array(z.string()) })
    .describe('whether each period can still change: every day final (late-billing window passed, a re-collection after it agreed)'),
  groups: z
    .array(
      z.object({
        product: z.enum(['serverless', 'model_api']),
        group: z.record(z.string(), z.string()).describe('the group-by keys that apply to the product'),
        currency: z.string(),
        status: z.enum(['new', 'gone', 'changed', 'unchanged', 'baseline_not_collected', 'current_not_collected']).describe('baseline_not_collected / current_not_collected: seen in one period only while the other was not wholly collected (never new or gone)'),
        baseline: figures,
        current: figures,
        difference: money('current cost minus baseline cost; = volume + price + discount + new + gone exactly'),
        ...parts,
        items: z
          .array(
            z.object({
              item: z.string().describe('what one unit price applies to: "app machine_type[ surge]" or "endpoint unit"'),
              baseline: itemFigures,
              current: itemFigures,
              difference: money('current minus baseline'),
              ...parts,
            }),
          )
          .describe('the priced items of the group, each decomposed by the same formulas'),
      }),
    )
    .describe('top movers first (largest |difference|)'),
  totals: z
    .array(z.object({
      currency: z.string(), baseline: money('baseline cost'), current: money('current cost'), difference: money('current minus baseline'), ...parts,
      baseline_per_day: money('baseline cost / baseline_days'), current_per_day: money('current cost / current_days'),
    }))
    .describe('per currency (never summed across currencies)'),
});


const Query = z.strictObject({
  from: dateParam('current period: first local day, inclusive'),
  to: dateParam('current period: last local day, exclusive'),
  baseline_from: dateParam('baseline: first local day (default: the period just before from: as many calendar months when from and to are first days of months, else as many days)').optional(),
  baseline_to: dateParam('baseline: last local day, exclusive (default: from; a period not over is compared to date: the baseline as many days as have passed)').optional(),
  timezone: z.string().default('UTC').describe('one of the collected timezones'),
  product: z.enum(['all', 'serverless', 'model_api']).default('all').describe('all (both product lines), serverless or model_api'),
  group_by: listParam()
    .pipe(z.array(z.enum(CHANGE_GROUP_NAMES,
      // Stryker disable next-line ObjectLiteral,StringLiteral: parseQuery (src/api/http.ts) answers every invalid_value 'expected one of ...': this message is never seen
      { error: `expected a subset of ${CHANGE_GROUP_NAMES.join(', ')}` })))
    .describe(`comma-separated; serverless: app, environment, machine_type, surge; model_api: endpoint, api_key, unit (default app,endpoint); a product none of them applies to is one group`),
  limit: z.coerce.number().int().min(1).max(100_000).optional().describe('only the top movers (CSV and JSON groups); totals always cover every group'),
  format: formatParam,
});

/** GET /cost/changes: why the bill changed between two periods (src/insights/cost-changes.ts does the figures). */
export function costChangeRoutes(app: FastifyInstance, registry: RouteRegistry, rt: Runtime, checkTimezone: (rt: Runtime, tz: string) => Promise<void>): void {
  registry.get(app, {
    path: '/cost/changes',
    operationId: 'getCostChanges',
    response: CostChangesResponse,
    summary: 'Why the bill changed: per group the cost in a baseline and a current period, the difference split into volume, price, discount, new and gone',
    description:
      'Each group (app, environment, machine type, surge for serverless; endpoint, API key, unit for model APIs) per currency: volume = (q1 - q0) x p0, price = (p1 - p0) x q1, discount = -(d1 - d0), computed per priced item (app and machine type and surge; endpoint and unit) with p = subtotal / quantity; new and gone groups count whole. The parts add up to the difference exactly, per group and per currency. Ranked by the size of the difference.',
    query: Query,
    csv: true,
    handler: async (q, request, reply) => {
      if (q.to <= q.from) throw badParameter('to', `expected a date after from (${q.from}); to is exclusive`);
      const days = (Date.parse(q.to) - Date.parse(q.from)) / 86_400_000;
      checkRangeDays(days, rt.config.API_MAX_RANGE_DAYS, 'API_MAX_RANGE_DAYS');
      const now = rt.now();
      // One default with the CLI (src/insights/cost-changes.ts): calendar months against calendar months, a period
      // not over against the same days of its baseline.
      const periods = changePeriods({ from: q.from, to: q.to, baselineFrom: q.baseline_from, baselineTo: q.baseline_to, today: DateTime.fromJSDate(now, { zone: q.timezone }).toISODate() ?? q.from });
      const { baselineFrom, baselineTo } = periods;
      if (baselineTo <= baselineFrom) throw badParameter('baseline_to', `expected a date after baseline_from (${baselineFrom}); baseline_to is exclusive`);
      checkRangeDays((Date.parse(baselineTo) - Date.parse(baselineFrom)) / 86_400_000, rt.config.API_MAX_RANGE_DAYS, 'API_MAX_RANGE_DAYS');
      await checkTimezone(rt, q.timezone);
      const groupBy = q.group_by.length > 0 ? [...new Set(q.group_by)] : ['app', 'endpoint'];
      const report = await costChangesReport(rt.store, {
        timezone: q.timezone,
        from: periods.from,
        to: periods.to,
        baselineFrom,
        baselineTo,
        product: q.product,
        groupBy,
        windowHours: rt.config.LATE_BILLING_WINDOW_HOURS,
        now,
      });
      const answer = q.limit === undefined ? report : { ...report, groups: report.groups.slice(0, q.limit) };
      return sendTable(reply, request, q.format, costChangesTable(report, q.limit), () => answer, `cost-changes-${q.from}-${q.to}.csv`, report.coverage);
    },
  });
}
