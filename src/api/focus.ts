// The FOCUS 1.2 cost-and-usage export's reads (issue 43.1): this module reads a UTC month's daily charges and each
// day's finality from the store and hands them to src/insights/focus.ts, which shapes every FOCUS row (columns,
// list and contracted costs, derived unit prices). A month with no usage collected in UTC answers why.
import type { Store } from '../store/client.js';
import { focusServerlessCharges } from '../store/tables/usage-buckets.js';
import { focusModelCharges } from '../store/tables/model-usage.js';
import { FOCUS_COLUMNS, FocusNoDataError, focusMonth, focusRows, type FocusOptions, type FocusRow } from '../insights/focus.js';
import type { Table } from './http.js';
import { loadFinality } from './finality-report.js';

/** The FOCUS rows of a month (YYYY-MM, UTC), serverless first, then model APIs. */
export async function focusReport(store: Pick<Store, 'client'>, month: string, opts: FocusOptions): Promise<FocusRow[]> {
  const { range } = focusMonth(month);
  const [serverless, models] = await Promise.all([focusServerlessCharges(store, range), focusModelCharges(store, range)]);
  if (serverless.length === 0 && models.length === 0) throw new FocusNoDataError(month);
  // x_Final: whether the row's day can still change for its product (late-billing window passed, re-collection agreed).
  const windowHours = opts.lateBillingWindowHours ?? 48;
  const finalDays = {
    serverless: new Map((await loadFinality(store, { product: 'serverless', timezone: 'UTC', ...range, windowHours, now: opts.now })).days.map((d) => [d.day, d.final])),
    model_api: new Map((await loadFinality(store, { product: 'model_api', timezone: 'UTC', ...range, windowHours, now: opts.now })).days.map((d) => [d.day, d.final])),
  };
  return focusRows({ month, serverless, models, finalDays, opts });
}

export function focusTable(rows: FocusRow[]): Table {
  return { columns: [...FOCUS_COLUMNS], rows };
}
