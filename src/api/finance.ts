// The finance report's reads (issue 43.1): this module reads the month's rows from the store (daily sums, the
// platform's summary totals, each product's finality) and hands them to src/insights/finance.ts, which holds every
// figure of the report (items, subtotals, totals, reconciliation).
import type { Store } from '../store/client.js';
import { monthlyCostByAppMachine } from '../store/tables/usage-buckets.js';
import { summaryRangeOfMonth, summaryTotalsByAppMachine } from '../store/tables/usage-summaries.js';
import { modelSummaryRangeOfMonth, modelSummaryTotals, monthlyModelCost } from '../store/tables/model-usage.js';
import {
  FINANCE_COLUMNS,
  financeMonth,
  financeTableRows,
  modelLines,
  modelSummary,
  serverlessLines,
  serverlessSummary,
  shapeFinanceReport,
  type FinanceReport,
  type ProductData,
} from '../insights/finance.js';
import type { Table } from './http.js';
import { loadFinality } from './finality-report.js';

async function serverlessData(store: Pick<Store, 'client'>, timezone: string, from: string, to: string): Promise<ProductData> {
  const lines = serverlessLines(await monthlyCostByAppMachine(store, { timezone, from, to }));
  const [range] = await summaryRangeOfMonth(store, { timezone, from, to });
  const summaryEnd = Number(range?.n ?? 0) > 0 ? range.last_end : null;
  // Stryker disable next-line ArrayDeclaration: read only when summaryEnd is set (reconcile), and then this is not the branch taken
  const summary = summaryEnd ? await summaryTotalsByAppMachine(store, { timezone, from, end: summaryEnd }) : [];
  // Compare like with like: when the platform's summary covers only part of the month, so do the daily sums.
  const comparable = summaryEnd && summaryEnd !== to ? serverlessLines(await monthlyCostByAppMachine(store, { timezone, from, to: summaryEnd })) : lines;
  return { product: 'serverless', lines, comparable, summaryEnd, summary: serverlessSummary(summary) };
}

async function modelData(store: Pick<Store, 'client'>, timezone: string, from: string, to: string): Promise<ProductData> {
  const lines = modelLines(await monthlyModelCost(store, { timezone, from, to }));
  const [range] = await modelSummaryRangeOfMonth(store, { timezone, from, to });
  const summaryEnd = Number(range?.n ?? 0) > 0 ? range.last_end : null;
  // Stryker disable next-line ArrayDeclaration: read only when summaryEnd is set (reconcile), and then this is not the branch taken
  const summary = summaryEnd ? await modelSummaryTotals(store, { timezone, from, end: summaryEnd }) : [];
  const comparable = summaryEnd && summaryEnd !== to ? modelLines(await monthlyModelCost(store, { timezone, from, to: summaryEnd })) : lines;
  return { product: 'model_api', lines, comparable, summaryEnd, summary: modelSummary(summary) };
}

/**
 * Monthly cost of both product lines in a timezone: serverless per app and machine type, model APIs per
 * endpoint, unit and key; a subtotal per product and currency and a total per currency; each product reconciled
 * with the platform's own summary for the month (the figures: src/insights/finance.ts).
 */
export async function financeReport(
  store: Pick<Store, 'client'>,
  month: string,
  timezone: string,
  now: Date,
  opts: { windowHours?: number } = {},
): Promise<FinanceReport> {
  const { from, to, monthComplete } = financeMonth(month, timezone, now);
  const products = [await serverlessData(store, timezone, from, to), await modelData(store, timezone, from, to)];
  const windowHours = opts.windowHours ?? 48;
  const finality = {
    serverless: await loadFinality(store, { product: 'serverless', timezone, from, to, windowHours, now }),
    model_api: await loadFinality(store, { product: 'model_api', timezone, from, to, windowHours, now }),
  };
  return shapeFinanceReport({ month, timezone, from, to, monthComplete, products, finality });
}

export function financeTable(report: FinanceReport): Table {
  return { columns: FINANCE_COLUMNS, rows: financeTableRows(report) as unknown as Table['rows'] };
}
