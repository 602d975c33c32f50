import { DateTime } from 'luxon';
import { z } from 'zod';
import type { Store } from '../store/client.js';
import { addDecimals, decimalToScaled, scaledToDecimal } from '../store/values.js';
import type { Table } from './http.js';

const SCALE = 12; // Decimal(38, 12) money columns: exact sums in BigInt at this scale
const TOLERANCE = decimalToScaled('0.01', SCALE);

export interface FinanceRow {
  row_type: 'item' | 'total';
  app: string;
  machine_type: string;
  currency: string;
  machine_seconds: string;
  surge_machine_seconds: string;
  subtotal: string;
  discount: string;
  total: string;
  /** The platform's own summary for the same month, app and machine type. */
  platform_summary_total: string | null;
  /** total − platform_summary_total. */
  difference: string | null;
  /** |difference| > 0.01, or one side missing. */
  flagged: boolean;
}

export interface FinanceReport {
  month: string;
  timezone: string;
  range: { from: string; to: string };
  rows: FinanceRow[];
  totals: FinanceRow[];
  reconciliation: {
    /** The range of the platform summary compared (the whole month once it is over). */
    summary_range: { from: string; to: string } | null;
    complete_month: boolean;
    tolerance: string;
    flagged: number;
    rows: Array<{
      app: string;
      machine_type: string;
      currency: string;
      daily_total: string;
      summary_total: string | null;
      difference: string | null;
      flagged: boolean;
    }>;
  };
}

export const FINANCE_COLUMNS: Array<keyof FinanceRow> = [
  'row_type',
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
];

const DailyRow = z.object({
  app: z.string(),
  machine_type: z.string(),
  currency: z.string(),
  machine_seconds: z.string(),
  surge_machine_seconds: z.string(),
  subtotal: z.string(),
  discount: z.string(),
  total: z.string(),
});

const DAILY_SQL = `
  SELECT app, machine_type, currency,
         toString(sum(quantity)) AS machine_seconds,
         toString(sumIf(quantity, is_surge)) AS surge_machine_seconds,
         toString(sum(ifNull(cost_subtotal, cost_total))) AS subtotal,
         toString(sum(ifNull(cost_discount, 0))) AS discount,
         toString(sum(cost_total)) AS total
  FROM usage_buckets FINAL
  WHERE timezone = {timezone:String} AND timeframe = 'day' AND bucket_date >= {from:Date} AND bucket_date < {to:Date}
  GROUP BY app, machine_type, currency
  ORDER BY currency, app, machine_type`;

const SUMMARY_RANGE_SQL = `
  SELECT toString(max(range_end)) AS last_end, count() AS n
  FROM usage_summaries FINAL
  WHERE timezone = {timezone:String} AND range_start = {from:Date} AND range_end <= {to:Date}`;

const SUMMARY_SQL = `
  SELECT app, machine_type, currency, toString(sum(cost_total)) AS total
  FROM usage_summaries FINAL
  WHERE timezone = {timezone:String} AND range_start = {from:Date} AND range_end = {end:Date}
  GROUP BY app, machine_type, currency`;

async function rows<T>(store: Pick<Store, 'client'>, query: string, params: Record<string, unknown>, schema: z.ZodType<T>): Promise<T[]> {
  const rs = await store.client.query({ query, query_params: params, format: 'JSONEachRow' });
  return z.array(schema).parse(await rs.json());
}

const abs = (v: bigint) => (v < 0n ? -v : v);

/**
 * Monthly cost per app and machine type in a timezone, with a total row per currency, reconciled with the
 * platform's own summary for the month. Every figure is an exact decimal (no float arithmetic, no rounding).
 */
export async function financeReport(store: Pick<Store, 'client'>, month: string, timezone: string): Promise<FinanceReport> {
  const start = DateTime.fromFormat(month, 'yyyy-MM', { zone: timezone });
  if (!start.isValid) throw new Error(`month must be YYYY-MM, got ${JSON.stringify(month)}`);
  const from = start.toISODate()!;
  const to = start.plus({ months: 1 }).toISODate()!;
  const daily = await rows(store, DAILY_SQL, { timezone, from, to }, DailyRow);

  const [range] = await rows(store, SUMMARY_RANGE_SQL, { timezone, from, to }, z.object({ last_end: z.string(), n: z.union([z.string(), z.number()]) }));
  const summaryEnd = Number(range?.n ?? 0) > 0 ? range.last_end : null;
  const summary = summaryEnd
    ? await rows(store, SUMMARY_SQL, { timezone, from, end: summaryEnd }, z.object({ app: z.string(), machine_type: z.string(), currency: z.string(), total: z.string() }))
    : [];
  // Compare like with like: when the platform's summary covers only part of the month, so do the daily sums.
  const comparable = summaryEnd && summaryEnd !== to ? await rows(store, DAILY_SQL, { timezone, from, to: summaryEnd }, DailyRow) : daily;

  const key = (r: { app: string; machine_type: string; currency: string }) => `${r.currency}\u0000${r.app}\u0000${r.machine_type}`;
  const summaryByKey = new Map(summary.map((s) => [key(s), s.total]));
  const comparableByKey = new Map(comparable.map((d) => [key(d), d.total]));

  const reconRows: FinanceReport['reconciliation']['rows'] = [];
  const keys = new Set([...comparableByKey.keys(), ...(summaryEnd ? summaryByKey.keys() : [])]);
  for (const k of [...keys].sort()) {
    const [currency, app, machine_type] = k.split('\u0000');
    const dailyTotal = comparableByKey.get(k) ?? '0';
    const summaryTotal = summaryEnd ? (summaryByKey.get(k) ?? null) : null;
    const diff = summaryTotal === null ? null : decimalToScaled(dailyTotal, SCALE) - decimalToScaled(summaryTotal, SCALE);
    reconRows.push({
      app,
      machine_type,
      currency,
      daily_total: dailyTotal,
      summary_total: summaryTotal,
      difference: diff === null ? null : scaledToDecimal(diff, SCALE),
      flagged: summaryEnd !== null && (diff === null || abs(diff) > TOLERANCE),
    });
  }
  const reconByKey = new Map(reconRows.map((r) => [key(r), r]));

  const items: FinanceRow[] = daily.map((d) => {
    const r = reconByKey.get(key(d));
    return {
      row_type: 'item',
      ...d,
      platform_summary_total: r?.summary_total ?? null,
      difference: r?.difference ?? null,
      flagged: r?.flagged ?? false,
    };
  });

  const totals: FinanceRow[] = [];
  for (const currency of [...new Set(items.map((i) => i.currency))].sort()) {
    const mine = items.filter((i) => i.currency === currency);
    const recon = reconRows.filter((r) => r.currency === currency);
    const summaryTotal = summaryEnd ? addDecimals(recon.map((r) => r.summary_total ?? '0'), SCALE) : null;
    const comparableTotal = addDecimals(recon.map((r) => r.daily_total), SCALE);
    const diff = summaryTotal === null ? null : decimalToScaled(comparableTotal, SCALE) - decimalToScaled(summaryTotal, SCALE);
    totals.push({
      row_type: 'total',
      app: '',
      machine_type: '',
      currency,
      machine_seconds: addDecimals(mine.map((i) => i.machine_seconds), SCALE),
      surge_machine_seconds: addDecimals(mine.map((i) => i.surge_machine_seconds), SCALE),
      subtotal: addDecimals(mine.map((i) => i.subtotal), SCALE),
      discount: addDecimals(mine.map((i) => i.discount), SCALE),
      total: addDecimals(mine.map((i) => i.total), SCALE),
      platform_summary_total: summaryTotal,
      difference: diff === null ? null : scaledToDecimal(diff, SCALE),
      flagged: diff !== null && abs(diff) > TOLERANCE,
    });
  }

  return {
    month,
    timezone,
    range: { from, to },
    rows: items,
    totals,
    reconciliation: {
      summary_range: summaryEnd ? { from, to: summaryEnd } : null,
      complete_month: summaryEnd === to,
      tolerance: '0.01',
      flagged: reconRows.filter((r) => r.flagged).length,
      rows: reconRows,
    },
  };
}

export function financeTable(report: FinanceReport): Table {
  return { columns: FINANCE_COLUMNS, rows: [...report.rows, ...report.totals] as unknown as Table['rows'] };
}
