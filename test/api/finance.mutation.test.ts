// The finance report (src/api/finance.ts) figure by figure, with no store: a stand-in client answers each named
// query with fixed rows, and every row, subtotal, total and reconciliation line is compared with values worked
// out by hand from the rows below (issue 31: the mutation score of the money modules). Rules checked, from
// finance.ts and the README: sums are exact decimals; a currency is never summed with another; the platform's
// summary is compared over the range it covers (the daily sums up to its end); a difference is flagged above
// 0.01 (0.01 itself is not), or when one side is missing; quantities add up only within one unit.
import { describe, expect, it } from 'vitest';
import { financeReport, financeTable } from '../../src/api/finance.js';
import { FINANCE_COLUMNS, financeProblem, PRODUCTS, type FinanceReport } from '../../src/insights/finance.js';
import { monthlyCostByAppMachine } from '../../src/store/tables/usage-buckets.js';
import { summaryRangeOfMonth, summaryTotalsByAppMachine } from '../../src/store/tables/usage-summaries.js';
import { modelSummaryRangeOfMonth, modelSummaryTotals, monthlyModelCost } from '../../src/store/tables/model-usage.js';
import { dayCollections } from '../../src/store/tables/cost-day-collections.js';
import type { Store } from '../../src/store/client.js';

type Params = Record<string, unknown>;
type Answers = Partial<Record<'daily' | 'range' | 'summary' | 'modelDaily' | 'modelRange' | 'modelSummary' | 'collections', (p: Params) => unknown[]>>;

const QUERIES = {
  daily: monthlyCostByAppMachine.sql,
  range: summaryRangeOfMonth.sql,
  summary: summaryTotalsByAppMachine.sql,
  modelDaily: monthlyModelCost.sql,
  modelRange: modelSummaryRangeOfMonth.sql,
  modelSummary: modelSummaryTotals.sql,
  collections: dayCollections.sql,
} as const;

function fakeStore(answers: Answers) {
  const asked: Array<{ query: keyof typeof QUERIES; params: Params }> = [];
  const store = {
    client: {
      query: async ({ query, query_params }: { query: string; query_params: Params }) => {
        const name = (Object.keys(QUERIES) as Array<keyof typeof QUERIES>).find((k) => QUERIES[k] === query);
        if (!name) throw new Error(`unexpected query: ${query.slice(0, 60)}`);
        asked.push({ query: name, params: query_params });
        const rows = answers[name]?.(query_params) ?? [];
        return { json: async () => rows };
      },
    },
  } as unknown as Pick<Store, 'client'>;
  return { store, asked };
}

const daily = (app: string, machine_type: string, currency: string, s: string, surge: string, subtotal: string, discount: string, total: string) => ({
  app, machine_type, currency, machine_seconds: s, surge_machine_seconds: surge, subtotal, discount, total,
});
const modelDaily = (endpoint_id: string, unit: string, currency: string, api_key_label: string, quantity: string, subtotal: string, discount: string, total: string) => ({
  endpoint_id, unit, currency, api_key_label, quantity, subtotal, discount, total,
});
/** Both collections of a day after its 48-hour window, agreeing: the day is final (src/insights/finality.ts). */
const agreed = (day: string) => [
  { local_day: day, collected_text: '2026-04-10 00:00:00.000', fingerprint: 'f' },
  { local_day: day, collected_text: '2026-04-11 00:00:00.000', fingerprint: 'f' },
];
const marchDays = Array.from({ length: 31 }, (_, i) => `2026-03-${String(i + 1).padStart(2, '0')}`);

// Scenario A, March 2026 in UTC. Serverless: two USD lines and one EUR line; the platform's summary covers the
// whole month and has a line the daily sums lack (acme/d). Model APIs: two USD lines; the summary covers only
// 1-15 March, over which the daily sums hold the image line alone (0.4).
const SERVERLESS_A = [
  daily('acme/c', 'CPU', 'EUR', '20', '0', '2', '0', '2'),
  daily('acme/a', 'CPU', 'USD', '100', '10', '5', '0.5', '4.5'),
  daily('acme/b', 'GPU-H100', 'USD', '50', '0', '10', '0', '10'),
];
const MODELS_A = [
  modelDaily('svc-ai/flux', 'image', 'USD', 'k1', '40', '1', '0.2', '0.8'),
  modelDaily('svc-ai/flux', 'megapixel', 'USD', 'k1', '3.5', '0.35', '0', '0.35'),
];
const answersA: Answers = {
  daily: () => SERVERLESS_A,
  range: () => [{ last_end: '2026-04-01', n: '2' }],
  summary: () => [
    { app: 'acme/a', machine_type: 'CPU', currency: 'USD', total: '4.5' }, // agrees
    { app: 'acme/b', machine_type: 'GPU-H100', currency: 'USD', total: '10.02' }, // 0.02 apart: flagged
    { app: 'acme/c', machine_type: 'CPU', currency: 'EUR', total: '2.01' }, // 0.01 apart: within tolerance
    { app: 'acme/d', machine_type: 'CPU', currency: 'USD', total: '1' }, // no daily line: flagged
  ],
  modelDaily: (p) => (p.to === '2026-03-15' ? [modelDaily('svc-ai/flux', 'image', 'USD', 'k1', '20', '0.5', '0.1', '0.4')] : MODELS_A),
  modelRange: () => [{ last_end: '2026-03-15', n: 1 }],
  modelSummary: () => [{ endpoint_id: 'svc-ai/flux', unit: 'image', currency: 'USD', api_key_label: 'k1', total: '0.4' }],
  // Serverless: every day final but the 31st; model APIs: every day final but the 2nd and the 31st.
  collections: (p) => marchDays.filter((d) => d !== '2026-03-31' && (p.product === 'serverless' || d !== '2026-03-02')).flatMap(agreed),
};

const NOW = new Date('2026-04-20T00:00:00Z');
const ITEM = { row_type: 'item', month_complete: true } as const;
const SERVERLESS_ITEM = { ...ITEM, product: 'serverless', endpoint_id: '', unit: 'second', api_key: '', final: false };
const MODEL_ITEM = { ...ITEM, product: 'model_api', app: '', machine_type: '', machine_seconds: '0', surge_machine_seconds: '0', final: false };

describe('financeReport, worked by hand (scenario A: March 2026, UTC)', () => {
  it('item rows: the daily sums beside the platform summary of the same line', async () => {
    const { store } = fakeStore(answersA);
    const report = await financeReport(store, '2026-03', 'UTC', NOW);
    expect(report.rows).toEqual([
      { ...SERVERLESS_ITEM, app: 'acme/c', machine_type: 'CPU', currency: 'EUR', quantity: '20', machine_seconds: '20', surge_machine_seconds: '0', subtotal: '2', discount: '0', total: '2',
        platform_summary_total: '2.01', difference: '-0.01', flagged: false },
      { ...SERVERLESS_ITEM, app: 'acme/a', machine_type: 'CPU', currency: 'USD', quantity: '100', machine_seconds: '100', surge_machine_seconds: '10', subtotal: '5', discount: '0.5', total: '4.5',
        platform_summary_total: '4.5', difference: '0', flagged: false },
      { ...SERVERLESS_ITEM, app: 'acme/b', machine_type: 'GPU-H100', currency: 'USD', quantity: '50', machine_seconds: '50', surge_machine_seconds: '0', subtotal: '10', discount: '0', total: '10',
        platform_summary_total: '10.02', difference: '-0.02', flagged: true },
      // Model summary to the 15th: the image line's 1-15 March sum (0.4) against the platform's 0.4.
      { ...MODEL_ITEM, endpoint_id: 'svc-ai/flux', unit: 'image', api_key: 'k1', currency: 'USD', quantity: '40', subtotal: '1', discount: '0.2', total: '0.8',
        platform_summary_total: '0.4', difference: '0', flagged: false },
      // Used after the 15th only: nothing of it is in the summary's range, so nothing to compare.
      { ...MODEL_ITEM, endpoint_id: 'svc-ai/flux', unit: 'megapixel', api_key: 'k1', currency: 'USD', quantity: '3.5', subtotal: '0.35', discount: '0', total: '0.35',
        platform_summary_total: null, difference: null, flagged: false },
    ]);
  });

  it('subtotals per product and currency, totals per currency: exact sums, summaries over the same lines', async () => {
    const { store } = fakeStore(answersA);
    const report = await financeReport(store, '2026-03', 'UTC', NOW);
    const sum = { app: '', machine_type: '', endpoint_id: '', api_key: '', month_complete: true, final: false };
    expect(report.product_totals).toEqual([
      { ...sum, row_type: 'subtotal', product: 'serverless', currency: 'EUR', machine_seconds: '20', surge_machine_seconds: '0', subtotal: '2', discount: '0', total: '2',
        platform_summary_total: '2.01', difference: '-0.01', flagged: false, unit: 'second', quantity: '20' },
      // Summary 4.5 + 10.02 + 1 = 15.52 against daily 4.5 + 10 + 0 = 14.5.
      { ...sum, row_type: 'subtotal', product: 'serverless', currency: 'USD', machine_seconds: '150', surge_machine_seconds: '10', subtotal: '15', discount: '0.5', total: '14.5',
        platform_summary_total: '15.52', difference: '-1.02', flagged: true, unit: 'second', quantity: '150' },
      // Two units: no quantity.
      { ...sum, row_type: 'subtotal', product: 'model_api', currency: 'USD', machine_seconds: '0', surge_machine_seconds: '0', subtotal: '1.35', discount: '0.2', total: '1.15',
        platform_summary_total: '0.4', difference: '0', flagged: false, unit: '', quantity: '' },
    ]);
    expect(report.totals).toEqual([
      { ...sum, row_type: 'total', product: '', currency: 'EUR', machine_seconds: '20', surge_machine_seconds: '0', subtotal: '2', discount: '0', total: '2',
        platform_summary_total: '2.01', difference: '-0.01', flagged: false, unit: 'second', quantity: '20' },
      // 15.52 + 0.4 = 15.92 against 14.5 + 0.4 = 14.9.
      { ...sum, row_type: 'total', product: '', currency: 'USD', machine_seconds: '150', surge_machine_seconds: '10', subtotal: '16.35', discount: '0.7', total: '15.65',
        platform_summary_total: '15.92', difference: '-1.02', flagged: true, unit: '', quantity: '' },
    ]);
  });

  it('the reconciliation: each line of each product, sorted; a line on one side only is flagged', async () => {
    const { store, asked } = fakeStore(answersA);
    const report = await financeReport(store, '2026-03', 'UTC', NOW);
    const recon = { endpoint_id: '', unit: 'second', api_key: '', product: 'serverless' };
    expect(report.reconciliation).toEqual({
      summary_range: { from: '2026-03-01', to: '2026-04-01' },
      summary_ranges: { serverless: { from: '2026-03-01', to: '2026-04-01' }, model_api: { from: '2026-03-01', to: '2026-03-15' } },
      complete_month: false,
      tolerance: '0.01',
      flagged: 2,
      rows: [
        { ...recon, app: 'acme/c', machine_type: 'CPU', currency: 'EUR', daily_total: '2', summary_total: '2.01', difference: '-0.01', flagged: false },
        { ...recon, app: 'acme/a', machine_type: 'CPU', currency: 'USD', daily_total: '4.5', summary_total: '4.5', difference: '0', flagged: false },
        { ...recon, app: 'acme/b', machine_type: 'GPU-H100', currency: 'USD', daily_total: '10', summary_total: '10.02', difference: '-0.02', flagged: true },
        { ...recon, app: 'acme/d', machine_type: 'CPU', currency: 'USD', daily_total: '0', summary_total: '1', difference: '-1', flagged: true },
        { product: 'model_api', app: '', machine_type: '', endpoint_id: 'svc-ai/flux', unit: 'image', api_key: 'k1', currency: 'USD', daily_total: '0.4', summary_total: '0.4', difference: '0', flagged: false },
      ],
    });
    // The summaries are read for the month's range, then up to their last end; the model's daily sums again to its end.
    const month = { timezone: 'UTC', from: '2026-03-01', to: '2026-04-01' };
    expect(asked.filter((a) => a.query !== 'collections')).toEqual([
      { query: 'daily', params: month },
      { query: 'range', params: month },
      { query: 'summary', params: { timezone: 'UTC', from: '2026-03-01', end: '2026-04-01' } },
      { query: 'modelDaily', params: month },
      { query: 'modelRange', params: month },
      { query: 'modelSummary', params: { timezone: 'UTC', from: '2026-03-01', end: '2026-03-15' } },
      { query: 'modelDaily', params: { timezone: 'UTC', from: '2026-03-01', to: '2026-03-15' } },
    ]);
    expect(asked.filter((a) => a.query === 'collections').map((a) => a.params)).toEqual([
      { product: 'serverless', ...month },
      { product: 'model_api', ...month },
    ]);
  });

  it('finality: a row is final when every day of its product is, the totals when both products are', async () => {
    const { store } = fakeStore(answersA);
    const report = await financeReport(store, '2026-03', 'UTC', NOW);
    // The days that can still change, once each, in order: the 2nd (model APIs) and the 31st (both).
    expect(report.provisional_days).toEqual(['2026-03-02', '2026-03-31']);
    expect([report.month_complete, report.month_final]).toEqual([true, false]);

    // Every day final for serverless only.
    const serverlessFinal = fakeStore({ ...answersA, collections: (p) => (p.product === 'serverless' ? marchDays.flatMap(agreed) : []) });
    const r = await financeReport(serverlessFinal.store, '2026-03', 'UTC', NOW);
    expect(r.rows.map((x) => [x.product, x.final])).toEqual([
      ['serverless', true], ['serverless', true], ['serverless', true], ['model_api', false], ['model_api', false],
    ]);
    expect(r.product_totals.map((x) => [x.product, x.final])).toEqual([['serverless', true], ['serverless', true], ['model_api', false]]);
    expect(r.totals.map((x) => x.final)).toEqual([false, false]);
    expect(r.month_final).toBe(false);
    expect(r.provisional_days).toEqual(marchDays);

    // Both products final: everything is.
    const allFinal = fakeStore({ ...answersA, collections: () => marchDays.flatMap(agreed) });
    const f = await financeReport(allFinal.store, '2026-03', 'UTC', NOW);
    expect([f.month_final, f.provisional_days]).toEqual([true, []]);
    expect([...f.rows, ...f.product_totals, ...f.totals].every((x) => x.final)).toBe(true);

    // A late-billing window of 400 h (16 days 16 h): the agreeing collection of 11 April 00:00 comes after the
    // window of the days up to the 24th (25 March 00:00 + 400 h = 10 April 16:00), not of the 25th on.
    const wide = await financeReport(allFinal.store, '2026-03', 'UTC', NOW, { windowHours: 400 });
    expect(wide.month_final).toBe(false);
    expect(wide.provisional_days).toEqual(marchDays.filter((d) => d >= '2026-03-25'));
    expect(wide.totals.every((x) => !x.final)).toBe(true);
  });

  it('a month not over in its timezone is incomplete, and nothing of it is final', async () => {
    const allFinal = fakeStore({ ...answersA, collections: () => marchDays.flatMap(agreed) });
    // March ends at 2026-04-01T00:00Z in UTC: complete from that instant on, not a millisecond before.
    const at = await financeReport(allFinal.store, '2026-03', 'UTC', new Date('2026-04-01T00:00:00.000Z'));
    expect([at.month_complete, at.month_final]).toEqual([true, true]);
    const before = await financeReport(allFinal.store, '2026-03', 'UTC', new Date('2026-03-31T23:59:59.999Z'));
    expect([before.month_complete, before.month_final]).toEqual([false, false]);
    expect([...before.rows, ...before.product_totals, ...before.totals].map((x) => [x.month_complete, x.final]).every(([c, f]) => !c && !f)).toBe(true);
    // In Asia/Kolkata (UTC+5:30) March ends at 2026-03-31T18:30Z.
    const kolkata = await financeReport(allFinal.store, '2026-03', 'Asia/Kolkata', new Date('2026-03-31T18:30:00.000Z'));
    expect(kolkata.month_complete).toBe(true);
    const kolkataBefore = await financeReport(allFinal.store, '2026-03', 'Asia/Kolkata', new Date('2026-03-31T18:29:59.999Z'));
    expect(kolkataBefore.month_complete).toBe(false);
    // A month long past is complete; one far ahead is not.
    expect((await financeReport(allFinal.store, '2020-01', 'UTC', NOW)).month_complete).toBe(true);
    expect((await financeReport(allFinal.store, '2999-01', 'UTC', NOW)).month_complete).toBe(false);
  });

  it('the header of the report; a month that is not YYYY-MM is refused', async () => {
    const { store } = fakeStore(answersA);
    const report = await financeReport(store, '2026-12', 'UTC', NOW);
    expect([report.month, report.timezone, report.range]).toEqual(['2026-12', 'UTC', { from: '2026-12-01', to: '2027-01-01' }]);
    await expect(financeReport(store, '2026-13', 'UTC', NOW)).rejects.toThrow('month must be YYYY-MM, got "2026-13"');
  });
});

describe('financeReport, a product without a summary', () => {
  it('model APIs with no summary: their lines are not compared, and a currency they share has no summary total', async () => {
    const { store, asked } = fakeStore({
      ...answersA,
      // What the query answers over no summary rows: max() of nothing, count 0.
      modelRange: () => [{ last_end: '1970-01-01', n: 0 }],
      modelSummary: () => [{ endpoint_id: 'svc-ai/flux', unit: 'image', currency: 'USD', api_key_label: 'k1', total: '99' }],
    });
    const report = await financeReport(store, '2026-03', 'UTC', NOW);
    expect(report.rows.filter((r) => r.product === 'model_api').map((r) => [r.platform_summary_total, r.difference, r.flagged])).toEqual([
      [null, null, false], [null, null, false],
    ]);
    const modelSubtotal = report.product_totals.find((r) => r.product === 'model_api')!;
    expect([modelSubtotal.platform_summary_total, modelSubtotal.difference, modelSubtotal.flagged]).toEqual([null, null, false]);
    // EUR is serverless only, and serverless has its summary; USD has model lines without one.
    expect(report.totals.map((r) => [r.currency, r.platform_summary_total, r.difference, r.flagged])).toEqual([
      ['EUR', '2.01', '-0.01', false],
      ['USD', null, null, false],
    ]);
    expect(report.reconciliation.summary_ranges).toEqual({ serverless: { from: '2026-03-01', to: '2026-04-01' }, model_api: null });
    expect(report.reconciliation.rows.filter((r) => r.product === 'model_api')).toEqual([
      { product: 'model_api', app: '', machine_type: '', endpoint_id: 'svc-ai/flux', unit: 'image', api_key: 'k1', currency: 'USD', daily_total: '0.8', summary_total: null, difference: null, flagged: false },
      { product: 'model_api', app: '', machine_type: '', endpoint_id: 'svc-ai/flux', unit: 'megapixel', api_key: 'k1', currency: 'USD', daily_total: '0.35', summary_total: null, difference: null, flagged: false },
    ]);
    expect(report.reconciliation.complete_month).toBe(false); // model APIs have lines and no summary
    expect(report.reconciliation.flagged).toBe(2);
    // No summary: the model's daily sums are read once, for the month.
    expect(asked.filter((a) => a.query === 'modelDaily').map((a) => a.params.to)).toEqual(['2026-04-01']);
  });

  it('only model APIs, summarised for the whole month: the summary range is theirs, and the month is complete', async () => {
    const { store, asked } = fakeStore({
      daily: () => [],
      range: () => [{ last_end: '1970-01-01', n: '0' }],
      modelDaily: () => MODELS_A,
      modelRange: () => [{ last_end: '2026-04-01', n: 3 }],
      modelSummary: () => [
        { endpoint_id: 'svc-ai/flux', unit: 'image', currency: 'USD', api_key_label: 'k1', total: '0.81' },
        { endpoint_id: 'svc-ai/flux', unit: 'megapixel', currency: 'USD', api_key_label: 'k1', total: '0.35' },
      ],
    });
    const report = await financeReport(store, '2026-03', 'UTC', NOW);
    expect(report.reconciliation.summary_range).toEqual({ from: '2026-03-01', to: '2026-04-01' });
    expect(report.reconciliation.summary_ranges.serverless).toBeNull();
    expect(report.reconciliation.complete_month).toBe(true);
    expect(report.reconciliation.rows.map((r) => [r.unit, r.daily_total, r.summary_total, r.difference, r.flagged])).toEqual([
      ['image', '0.8', '0.81', '-0.01', false],
      ['megapixel', '0.35', '0.35', '0', false],
    ]);
    expect(report.product_totals.map((r) => [r.product, r.total, r.platform_summary_total, r.difference])).toEqual([['model_api', '1.15', '1.16', '-0.01']]);
    expect(report.totals.map((r) => [r.currency, r.total, r.platform_summary_total])).toEqual([['USD', '1.15', '1.16']]);
    // The summary covers the month: the daily sums are read once.
    expect(asked.filter((a) => a.query === 'modelDaily').map((a) => a.params.to)).toEqual(['2026-04-01']);
  });

  it('nothing collected: no rows, no summary range, the month not complete', async () => {
    // The range queries answer one row of max() over nothing, or (a stand-in store) no row at all.
    for (const [range, modelRange] of [[[], [{ last_end: '1970-01-01', n: 0 }]], [[{ last_end: '1970-01-01', n: 0 }], []]]) {
      const { store } = fakeStore({ range: () => range, modelRange: () => modelRange });
      const report = await financeReport(store, '2026-03', 'UTC', NOW);
      expect([report.rows, report.product_totals, report.totals]).toEqual([[], [], []]);
      expect(report.reconciliation).toEqual({ summary_range: null, summary_ranges: { serverless: null, model_api: null }, complete_month: false, tolerance: '0.01', flagged: 0, rows: [] });
    }
  });
});

describe('financeTable and financeProblem', () => {
  it('the table: every row, subtotal and total in order; machine-seconds empty on model rows only', async () => {
    const { store } = fakeStore(answersA);
    const report = await financeReport(store, '2026-03', 'UTC', NOW);
    const table = financeTable(report);
    expect(table.columns).toBe(FINANCE_COLUMNS);
    expect(table.rows.map((r) => [r.row_type, r.product, r.currency, r.machine_seconds, r.surge_machine_seconds])).toEqual([
      ['item', 'serverless', 'EUR', '20', '0'],
      ['item', 'serverless', 'USD', '100', '10'],
      ['item', 'serverless', 'USD', '50', '0'],
      ['item', 'model_api', 'USD', '', ''],
      ['item', 'model_api', 'USD', '', ''],
      ['subtotal', 'serverless', 'EUR', '20', '0'],
      ['subtotal', 'serverless', 'USD', '150', '10'],
      ['subtotal', 'model_api', 'USD', '', ''],
      ['total', '', 'EUR', '20', '0'],
      ['total', '', 'USD', '150', '10'],
    ]);
  });

  const report = (rows: number): Pick<FinanceReport, 'month' | 'timezone' | 'rows' | 'range'> => ({
    month: '2026-03',
    timezone: 'Europe/Berlin',
    rows: Array.from({ length: rows }) as FinanceReport['rows'],
    range: { from: '2026-03-01', to: '2026-04-01' },
  });

  it('a month that has not started in its timezone is "future" (Berlin: 2026-02-28T23:00Z)', () => {
    const context = { configuredTimezones: ['Europe/Berlin'] };
    expect(financeProblem(report(0), { ...context, now: new Date('2026-02-28T22:59:59.999Z') })).toEqual({
      kind: 'future',
      message: 'expected a month that has started in Europe/Berlin; 2026-03 has not',
    });
    expect(financeProblem(report(1), { ...context, now: new Date('2026-02-28T23:00:00.000Z') })).toBeUndefined();
    expect(financeProblem(report(1), { ...context, now: new Date('2026-03-02T00:00:00.000Z') })).toBeUndefined();
    // Long after March 2026.
    const later = { ...context, now: new Date('2027-06-01T00:00:00.000Z') };
    expect(financeProblem(report(1), later)).toBeUndefined();
    expect(financeProblem({ ...report(1), month: '2999-01', range: { from: '2999-01-01', to: '2999-02-01' } }, later)?.kind).toBe('future');
  });

  it('a started month with no rows is "empty", naming the command; an unscheduled timezone says so', () => {
    const now = new Date('2026-03-10T00:00:00Z');
    expect(financeProblem(report(0), { configuredTimezones: ['UTC', 'Europe/Berlin'], now })).toEqual({
      kind: 'empty',
      message:
        'no usage is collected for 2026-03 in Europe/Berlin; collect it with: tallyhouse collect usage --from 2026-03-01 --to 2026-04-01 --timezone Europe/Berlin' +
        ' (and model APIs: tallyhouse collect models with the same options)',
    });
    expect(financeProblem(report(0), { configuredTimezones: ['UTC', 'Asia/Tokyo'], now })?.message).toBe(
      'no usage is collected for 2026-03 in Europe/Berlin (not in TIMEZONES=UTC,Asia/Tokyo: scheduled runs do not collect it)' +
        '; collect it with: tallyhouse collect usage --from 2026-03-01 --to 2026-04-01 --timezone Europe/Berlin' +
        ' (and model APIs: tallyhouse collect models with the same options)',
    );
  });
});

describe('financeReport: signs, one-sided lines and order (scenario B)', () => {
  // Serverless only, the summary covering the month. The stand-in answers USD before EUR (the report sorts by
  // currency itself). acme/z: daily 1 against the platform's 0.98 (+0.02: flagged); acme/y: a daily line the
  // summary lacks (flagged); acme/0: a summary line the daily sums lack (flagged).
  const answersB: Answers = {
    daily: () => [daily('acme/z', 'CPU', 'USD', '10', '0', '1', '0', '1'), daily('acme/y', 'CPU', 'EUR', '5', '0', '0.5', '0', '0.5')],
    range: () => [{ last_end: '2026-04-01', n: 1 }],
    summary: () => [
      { app: 'acme/z', machine_type: 'CPU', currency: 'USD', total: '0.98' },
      { app: 'acme/0', machine_type: 'CPU', currency: 'USD', total: '0.5' },
    ],
    modelRange: () => [{ last_end: '1970-01-01', n: 0 }],
  };

  it('a positive difference above the tolerance is flagged; a line on one side only is flagged, its missing side 0 in the sums', async () => {
    const report = await financeReport(fakeStore(answersB).store, '2026-03', 'UTC', NOW);
    expect(report.rows.map((r) => [r.app, r.currency, r.platform_summary_total, r.difference, r.flagged])).toEqual([
      ['acme/z', 'USD', '0.98', '0.02', true],
      ['acme/y', 'EUR', null, null, true],
    ]);
    expect(report.reconciliation.rows.map((r) => [r.app, r.currency, r.daily_total, r.summary_total, r.difference, r.flagged])).toEqual([
      ['acme/y', 'EUR', '0.5', null, null, true],
      ['acme/0', 'USD', '0', '0.5', '-0.5', true],
      ['acme/z', 'USD', '1', '0.98', '0.02', true],
    ]);
    expect(report.reconciliation.flagged).toBe(3);
    // EUR: daily 0.5 against a summary of nothing (0): +0.5. USD: daily 0 + 1 = 1 against 0.5 + 0.98 = 1.48: -0.48.
    const sums = (rows: typeof report.totals) => rows.map((r) => [r.row_type, r.currency, r.total, r.platform_summary_total, r.difference, r.flagged]);
    expect(sums(report.product_totals)).toEqual([
      ['subtotal', 'EUR', '0.5', '0', '0.5', true],
      ['subtotal', 'USD', '1', '1.48', '-0.48', true],
    ]);
    expect(sums(report.totals)).toEqual([
      ['total', 'EUR', '0.5', '0', '0.5', true],
      ['total', 'USD', '1', '1.48', '-0.48', true],
    ]);
  });

  it('totals in currency order when model APIs bring a currency that sorts first', async () => {
    const report = await financeReport(
      fakeStore({ ...answersB, modelDaily: () => [modelDaily('svc-ai/flux', 'image', 'AUD', 'k1', '1', '0.1', '0', '0.1')] }).store,
      '2026-03', 'UTC', NOW,
    );
    expect(report.totals.map((r) => [r.currency, r.total])).toEqual([['AUD', '0.1'], ['EUR', '0.5'], ['USD', '1']]);
  });

  it('a serverless summary to the 15th is compared with the daily sums to the 15th', async () => {
    const { store, asked } = fakeStore({
      daily: (p) => [daily('acme/a', 'CPU', 'USD', '100', '0', p.to === '2026-03-15' ? '2' : '5', '0', p.to === '2026-03-15' ? '2' : '5')],
      range: () => [{ last_end: '2026-03-15', n: 1 }],
      summary: () => [{ app: 'acme/a', machine_type: 'CPU', currency: 'USD', total: '2' }],
      modelRange: () => [],
    });
    const report = await financeReport(store, '2026-03', 'UTC', NOW);
    expect(report.rows.map((r) => [r.total, r.platform_summary_total, r.difference, r.flagged])).toEqual([['5', '2', '0', false]]);
    expect(report.reconciliation.rows.map((r) => [r.daily_total, r.summary_total])).toEqual([['2', '2']]);
    expect(asked.filter((a) => a.query === 'daily').map((a) => a.params)).toEqual([
      { timezone: 'UTC', from: '2026-03-01', to: '2026-04-01' },
      { timezone: 'UTC', from: '2026-03-01', to: '2026-03-15' },
    ]);
    expect(report.reconciliation.summary_range).toEqual({ from: '2026-03-01', to: '2026-03-15' });
  });

  it('a product with a partial summary and no lines still keeps the month from being complete', async () => {
    const { store } = fakeStore({
      range: () => [{ last_end: '2026-03-15', n: 1 }],
      modelDaily: () => MODELS_A,
      modelRange: () => [{ last_end: '2026-04-01', n: 1 }],
      modelSummary: () => [],
    });
    const report = await financeReport(store, '2026-03', 'UTC', NOW);
    expect(report.reconciliation.complete_month).toBe(false);
  });

  it('the column order of the CSV and the product list', () => {
    expect(FINANCE_COLUMNS).toEqual([
      'row_type', 'product', 'app', 'machine_type', 'currency', 'machine_seconds', 'surge_machine_seconds', 'subtotal', 'discount', 'total',
      'platform_summary_total', 'difference', 'flagged', 'month_complete', 'endpoint_id', 'unit', 'quantity', 'api_key', 'final',
    ]);
    expect(PRODUCTS).toEqual(['serverless', 'model_api']);
  });
});
