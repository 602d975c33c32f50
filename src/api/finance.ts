import { DateTime } from 'luxon';
import type { Store } from '../store/client.js';
import { monthlyCostByAppMachine } from '../store/tables/usage-buckets.js';
import { summaryRangeOfMonth, summaryTotalsByAppMachine } from '../store/tables/usage-summaries.js';
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
  /** False while the month is not over in the report's timezone: its figures will still grow. */
  month_complete: boolean;
}

export interface FinanceReport {
  month: string;
  timezone: string;
  /** False while the month is not over in `timezone` (a partial month). */
  month_complete: boolean;
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
  'month_complete',
];

const abs = (v: bigint) => (v < 0n ? -v : v);

/**
 * Monthly cost per app and machine type in a timezone, with a total row per currency, reconciled with the
 * platform's own summary for the month. Every figure is an exact decimal (no float arithmetic, no rounding).
 */
export async function financeReport(store: Pick<Store, 'client'>, month: string, timezone: string, now: Date = new Date()): Promise<FinanceReport> {
  const start = DateTime.fromFormat(month, 'yyyy-MM', { zone: timezone });
  if (!start.isValid) throw new Error(`month must be YYYY-MM, got ${JSON.stringify(month)}`);
  const from = start.toISODate()!;
  const to = start.plus({ months: 1 }).toISODate()!;
  const monthComplete = start.plus({ months: 1 }).toMillis() <= now.getTime();
  const daily = await monthlyCostByAppMachine(store, { timezone, from, to });

  const [range] = await summaryRangeOfMonth(store, { timezone, from, to });
  const summaryEnd = Number(range?.n ?? 0) > 0 ? range.last_end : null;
  const summary = summaryEnd
    ? await summaryTotalsByAppMachine(store, { timezone, from, end: summaryEnd })
    : [];
  // Compare like with like: when the platform's summary covers only part of the month, so do the daily sums.
  const comparable = summaryEnd && summaryEnd !== to ? await monthlyCostByAppMachine(store, { timezone, from, to: summaryEnd }) : daily;

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

  const items: Array<Omit<FinanceRow, 'month_complete'>> = daily.map((d) => {
    const r = reconByKey.get(key(d));
    return {
      row_type: 'item',
      ...d,
      platform_summary_total: r?.summary_total ?? null,
      difference: r?.difference ?? null,
      flagged: r?.flagged ?? false,
    };
  });

  const totals: Array<Omit<FinanceRow, 'month_complete'>> = [];
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

  const mark = (r: Omit<FinanceRow, 'month_complete'>): FinanceRow => ({ ...r, month_complete: monthComplete });
  return {
    month,
    timezone,
    month_complete: monthComplete,
    range: { from, to },
    rows: items.map(mark),
    totals: totals.map(mark),
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

/**
 * Why a finance report cannot be given (CONTRIBUTING.md rule 19: nothing empty without a reason): a month that
 * has not started (`future`), or one with no usage collected in the timezone (`empty`, with the command that
 * would fill it). Undefined: the report stands.
 */
export function financeProblem(
  report: Pick<FinanceReport, 'month' | 'timezone' | 'rows' | 'range'>,
  context: { configuredTimezones: readonly string[]; now?: Date },
): { kind: 'future' | 'empty'; message: string } | undefined {
  const start = DateTime.fromISO(report.range.from, { zone: report.timezone });
  if (start.toMillis() > (context.now ?? new Date()).getTime()) {
    return { kind: 'future', message: `expected a month that has started in ${report.timezone}; ${report.month} has not` };
  }
  if (report.rows.length > 0) return undefined;
  const configured = context.configuredTimezones.includes(report.timezone);
  return {
    kind: 'empty',
    message:
      `no usage is collected for ${report.month} in ${report.timezone}` +
      (configured ? '' : ` (not in TIMEZONES=${context.configuredTimezones.join(',')}: scheduled runs do not collect it)`) +
      `; collect it with: tallyhouse collect usage --from ${report.range.from} --to ${report.range.to} --timezone ${report.timezone}`,
  };
}
