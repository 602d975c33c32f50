// The finance report's money (issue 43.1): the pure half of the monthly report. Rows the store returns (daily sums
// per app and machine type or per model endpoint, unit and key; the platform's own summary totals) in, the report's
// item, subtotal and total rows with their reconciliation out. No I/O, no store, no clock: the caller reads the rows
// (src/api/finance.ts) and passes `now` and each product's finality. Every figure is an exact decimal (BigInt at
// the money columns' scale), never a float.
import { DateTime } from 'luxon';
import { addDecimals, decimalToScaled, scaledToDecimal } from '../values.js';

const SCALE = 12; // Decimal(38, 12) money columns: exact sums in BigInt at this scale
const TOLERANCE = decimalToScaled('0.01', SCALE);

export type Product = 'serverless' | 'model_api';
export const PRODUCTS: readonly Product[] = ['serverless', 'model_api'];

export interface FinanceRow {
  /** item: one app and machine type, or one model endpoint, unit and key; subtotal: a product in a currency; total: a currency. */
  row_type: 'item' | 'subtotal' | 'total';
  app: string;
  machine_type: string;
  currency: string;
  /** Serverless only ('0' for model rows). */
  machine_seconds: string;
  surge_machine_seconds: string;
  subtotal: string;
  discount: string;
  total: string;
  /** The platform's own summary for the same month and row. */
  platform_summary_total: string | null;
  /** total − platform_summary_total. */
  difference: string | null;
  /** |difference| > 0.01, or one side missing. */
  flagged: boolean;
  /** False while the month is not over in the report's timezone: its figures will still grow. */
  month_complete: boolean;
  /** serverless or model_api; '' on a currency's total row (both products). */
  product: Product | '';
  /** Model rows: the model endpoint (e.g. svc-ai/flux-dev). */
  endpoint_id: string;
  /** second (serverless machine-seconds), or the model's unit (image, megapixel, ...). */
  unit: string;
  /** In `unit`. */
  quantity: string;
  /** Model rows: the API key's label (or the login) that made the calls. */
  api_key: string;
  /** The row can no longer change: every day of the month is final for its product (src/insights/finality.ts). */
  final: boolean;
}

export type FinanceLine = Omit<FinanceRow, 'row_type' | 'platform_summary_total' | 'difference' | 'flagged' | 'month_complete' | 'final'>;

export interface ReconciliationRow {
  product: Product;
  app: string;
  machine_type: string;
  endpoint_id: string;
  unit: string;
  api_key: string;
  currency: string;
  daily_total: string;
  summary_total: string | null;
  difference: string | null;
  flagged: boolean;
}

export interface FinanceReport {
  month: string;
  timezone: string;
  /** False while the month is not over in `timezone` (a partial month). */
  month_complete: boolean;
  /** Every day of the month is final for both products: no figure of the report can change any more. */
  month_final: boolean;
  /** Days of the month that can still change (either product). */
  provisional_days: string[];
  range: { from: string; to: string };
  rows: FinanceRow[];
  /** Per product and currency. */
  product_totals: FinanceRow[];
  /** Per currency, both products (currencies are never summed together). */
  totals: FinanceRow[];
  reconciliation: {
    /** The range of the platform summary compared, per product (the whole month once it is over). */
    summary_range: { from: string; to: string } | null;
    summary_ranges: Record<Product, { from: string; to: string } | null>;
    complete_month: boolean;
    tolerance: string;
    flagged: number;
    rows: ReconciliationRow[];
  };
}

export const FINANCE_COLUMNS: Array<keyof FinanceRow> = [
  'row_type',
  // Second, not 14th (issue 30.14): which product line a row is is the first thing a reader sorts by.
  'product',
  'app',
  'machine_type',
  'currency',
  'machine_seconds',
  'surge_machine_seconds',
  'subtotal',
  'discount',
  'total',
  'platform_summary_total',
  'difference',
  'flagged',
  'month_complete',
  'endpoint_id',
  'unit',
  'quantity',
  'api_key',
  'final',
];

const abs = (v: bigint) => (v < 0n ? -v : v);
/** The key a line, a reconciliation row and a platform summary row meet on. */
export const lineKey = (r: Pick<FinanceLine, 'product' | 'currency' | 'app' | 'machine_type' | 'endpoint_id' | 'unit' | 'api_key'>) =>
  [r.product, r.currency, r.app, r.machine_type, r.endpoint_id, r.unit, r.api_key].join('\u0000');

/** A serverless row of the month's daily sums (per app, machine type and currency), as the store reads it. */
export interface ServerlessCostRow {
  app: string;
  machine_type: string;
  currency: string;
  machine_seconds: string;
  surge_machine_seconds: string;
  subtotal: string;
  discount: string;
  total: string;
}

/** A model API row of the month's daily sums (per endpoint, unit, currency and key), as the store reads it. */
export interface ModelCostRow {
  endpoint_id: string;
  unit: string;
  currency: string;
  api_key_label: string;
  quantity: string;
  subtotal: string;
  discount: string;
  total: string;
}

export function serverlessLines(rows: readonly ServerlessCostRow[]): FinanceLine[] {
  return rows.map((d) => ({
    product: 'serverless',
    app: d.app,
    machine_type: d.machine_type,
    endpoint_id: '',
    unit: 'second',
    api_key: '',
    currency: d.currency,
    quantity: d.machine_seconds,
    machine_seconds: d.machine_seconds,
    surge_machine_seconds: d.surge_machine_seconds,
    subtotal: d.subtotal,
    discount: d.discount,
    total: d.total,
  }));
}

export function modelLines(rows: readonly ModelCostRow[]): FinanceLine[] {
  return rows.map((d) => ({
    product: 'model_api',
    app: '',
    machine_type: '',
    endpoint_id: d.endpoint_id,
    unit: d.unit,
    api_key: d.api_key_label,
    currency: d.currency,
    quantity: d.quantity,
    machine_seconds: '0',
    surge_machine_seconds: '0',
    subtotal: d.subtotal,
    discount: d.discount,
    total: d.total,
  }));
}

/** The platform's serverless summary totals, keyed like the lines they are compared with. */
export function serverlessSummary(rows: ReadonlyArray<{ app: string; machine_type: string; currency: string; total: string }>): Map<string, string> {
  const key = (s: { app: string; machine_type: string; currency: string }) =>
    lineKey({ product: 'serverless', currency: s.currency, app: s.app, machine_type: s.machine_type, endpoint_id: '', unit: 'second', api_key: '' });
  return new Map(rows.map((s) => [key(s), s.total]));
}

/** The platform's model summary totals, keyed like the lines they are compared with. */
export function modelSummary(rows: ReadonlyArray<{ endpoint_id: string; unit: string; currency: string; api_key_label: string; total: string }>): Map<string, string> {
  const key = (s: { endpoint_id: string; unit: string; currency: string; api_key_label: string }) =>
    lineKey({ product: 'model_api', currency: s.currency, app: '', machine_type: '', endpoint_id: s.endpoint_id, unit: s.unit, api_key: s.api_key_label });
  return new Map(rows.map((s) => [key(s), s.total]));
}

/** One product's daily lines and the platform's summary of the month, as far as it was collected. */
export interface ProductData {
  product: Product;
  lines: FinanceLine[];
  /** The daily lines up to the summary's end (= lines once the summary covers the month). */
  comparable: FinanceLine[];
  summaryEnd: string | null;
  summary: Map<string, string>;
}

/** The local days [from, to) of a month (YYYY-MM) in a timezone, and whether it is over at `now`. */
export function financeMonth(month: string, timezone: string, now: Date): { from: string; to: string; monthComplete: boolean } {
  const start = DateTime.fromFormat(month, 'yyyy-MM', { zone: timezone });
  if (!start.isValid) throw new Error(`month must be YYYY-MM, got ${JSON.stringify(month)}`);
  return { from: start.toISODate()!, to: start.plus({ months: 1 }).toISODate()!, monthComplete: start.plus({ months: 1 }).toMillis() <= now.getTime() };
}

/** Each row of a product against the platform's summary; a row missing on either side is flagged. */
export function reconcile(data: ProductData): ReconciliationRow[] {
  const comparable = new Map(data.comparable.map((l) => [lineKey(l), l]));
  const keys = new Set([...comparable.keys(), ...(data.summaryEnd ? data.summary.keys() : [])]);
  return [...keys].sort().map((k) => {
    const [product, currency, app, machine_type, endpoint_id, unit, api_key] = k.split('\u0000');
    const dailyTotal = comparable.get(k)?.total ?? '0';
    const summaryTotal = data.summaryEnd ? (data.summary.get(k) ?? null) : null;
    const diff = summaryTotal === null ? null : decimalToScaled(dailyTotal, SCALE) - decimalToScaled(summaryTotal, SCALE);
    return {
      product: product as Product,
      app,
      machine_type,
      endpoint_id,
      unit,
      api_key,
      currency,
      daily_total: dailyTotal,
      summary_total: summaryTotal,
      difference: diff === null ? null : scaledToDecimal(diff, SCALE),
      flagged: data.summaryEnd !== null && (diff === null || abs(diff) > TOLERANCE),
    };
  });
}

/** A subtotal or total row over `items` (one currency), with its reconciliation rows. */
export function sumRow(rowType: 'subtotal' | 'total', product: Product | '', currency: string, items: FinanceLine[], recon: ReconciliationRow[], summaryKnown: boolean) {
  const summaryTotal = summaryKnown ? addDecimals(recon.map((r) => r.summary_total ?? '0'), SCALE) : null;
  const comparableTotal = addDecimals(recon.map((r) => r.daily_total), SCALE);
  const diff = summaryTotal === null ? null : decimalToScaled(comparableTotal, SCALE) - decimalToScaled(summaryTotal, SCALE);
  const single = (f: (l: FinanceLine) => string) => (new Set(items.map(f)).size === 1 && items.length > 0 ? f(items[0]) : '');
  return {
    row_type: rowType,
    app: '',
    machine_type: '',
    currency,
    machine_seconds: addDecimals(items.map((i) => i.machine_seconds), SCALE),
    surge_machine_seconds: addDecimals(items.map((i) => i.surge_machine_seconds), SCALE),
    subtotal: addDecimals(items.map((i) => i.subtotal), SCALE),
    discount: addDecimals(items.map((i) => i.discount), SCALE),
    total: addDecimals(items.map((i) => i.total), SCALE),
    platform_summary_total: summaryTotal,
    difference: diff === null ? null : scaledToDecimal(diff, SCALE),
    flagged: diff !== null && abs(diff) > TOLERANCE,
    product,
    endpoint_id: '',
    // Quantities add up only in one unit.
    unit: single((l) => l.unit),
    quantity: single((l) => l.unit) ? addDecimals(items.map((i) => i.quantity), SCALE) : '',
    api_key: '',
  } satisfies Omit<FinanceRow, 'month_complete' | 'final'>;
}

/**
 * The finance report of a month from each product's rows (serverless first, then model APIs) and finality: item
 * rows, a subtotal per product and currency, a total per currency (currencies are never summed together), each
 * reconciled with the platform's own summary.
 */
export function shapeFinanceReport(q: {
  month: string;
  timezone: string;
  from: string;
  to: string;
  monthComplete: boolean;
  products: ProductData[];
  finality: Record<Product, { final: boolean; provisional_days: readonly string[] }>;
}): FinanceReport {
  const { month, timezone, from, to, monthComplete, products, finality } = q;
  const recon = new Map(products.map((p) => [p.product, reconcile(p)]));
  const monthFinal = monthComplete && finality.serverless.final && finality.model_api.final;
  const mark = <R extends Omit<FinanceRow, 'month_complete' | 'final'>>(r: R): FinanceRow => ({
    ...r,
    month_complete: monthComplete,
    final: monthComplete && (r.product === '' ? monthFinal : finality[r.product].final),
  });
  const rows: FinanceRow[] = [];
  const productTotals: FinanceRow[] = [];
  for (const p of products) {
    const byKey = new Map(recon.get(p.product)!.map((r) => [lineKey(r), r]));
    for (const l of p.lines) {
      const r = byKey.get(lineKey(l));
      rows.push(mark({ row_type: 'item', ...l, platform_summary_total: r?.summary_total ?? null, difference: r?.difference ?? null, flagged: r?.flagged ?? false }));
    }
    for (const currency of [...new Set(p.lines.map((l) => l.currency))].sort()) {
      const items = p.lines.filter((l) => l.currency === currency);
      const rr = recon.get(p.product)!.filter((r) => r.currency === currency);
      productTotals.push(mark(sumRow('subtotal', p.product, currency, items, rr, p.summaryEnd !== null)));
    }
  }
  const allLines = products.flatMap((p) => p.lines);
  const allRecon = [...recon.values()].flat();
  const totals = [...new Set(allLines.map((l) => l.currency))].sort().map((currency) => {
    const withSummary = products.filter((p) => p.summaryEnd !== null && p.lines.some((l) => l.currency === currency));
    const known = withSummary.length === products.filter((p) => p.lines.some((l) => l.currency === currency)).length;
    return mark(sumRow('total', '', currency, allLines.filter((l) => l.currency === currency), allRecon.filter((r) => r.currency === currency), known));
  });
  const ranges = Object.fromEntries(products.map((p) => [p.product, p.summaryEnd ? { from, to: p.summaryEnd } : null])) as Record<Product, { from: string; to: string } | null>;
  const withData = products.filter((p) => p.lines.length > 0 || p.summaryEnd !== null);
  return {
    month,
    timezone,
    month_complete: monthComplete,
    month_final: monthFinal,
    provisional_days: [...new Set([...finality.serverless.provisional_days, ...finality.model_api.provisional_days])].sort(),
    range: { from, to },
    rows,
    product_totals: productTotals,
    totals,
    reconciliation: {
      summary_range: ranges.serverless ?? ranges.model_api,
      summary_ranges: ranges,
      complete_month: withData.length > 0 && withData.every((p) => p.summaryEnd === to),
      tolerance: '0.01',
      flagged: allRecon.filter((r) => r.flagged).length,
      rows: allRecon,
    },
  };
}

/** The finance table's rows: items, product subtotals, currency totals; machine-seconds empty on model API rows. */
export function financeTableRows(report: Pick<FinanceReport, 'rows' | 'product_totals' | 'totals'>): FinanceRow[] {
  // Machine-seconds do not apply to model API rows: empty in the table (they read as 0 seconds), kept in JSON.
  return [...report.rows, ...report.product_totals, ...report.totals].map((r) =>
    r.product === 'model_api' ? { ...r, machine_seconds: '', surge_machine_seconds: '' } : r,
  );
}

/**
 * Why a finance report cannot be given (CONTRIBUTING.md rule 19: nothing empty without a reason): a month that
 * has not started (`future`), or one with no usage collected in the timezone (`empty`, with the command that
 * would fill it). Undefined: the report stands.
 */
export function financeProblem(
  report: Pick<FinanceReport, 'month' | 'timezone' | 'rows' | 'range'>,
  context: { configuredTimezones: readonly string[]; now: Date },
): { kind: 'future' | 'empty'; message: string } | undefined {
  const start = DateTime.fromISO(report.range.from, { zone: report.timezone });
  if (start.toMillis() > context.now.getTime()) {
    return { kind: 'future', message: `expected a month that has started in ${report.timezone}; ${report.month} has not` };
  }
  if (report.rows.length > 0) return undefined;
  const configured = context.configuredTimezones.includes(report.timezone);
  return {
    kind: 'empty',
    message:
      `no usage is collected for ${report.month} in ${report.timezone}` +
      (configured ? '' : ` (not in TIMEZONES=${context.configuredTimezones.join(',')}: scheduled runs do not collect it)`) +
      `; collect it with: tallyhouse collect usage --from ${report.range.from} --to ${report.range.to} --timezone ${report.timezone}` +
      ` (and model APIs: tallyhouse collect models with the same options)`,
  };
}
