// The change-attribution report: reads both periods' lines with the named queries and hands them to the pure
// module (src/insights/cost-changes.ts). The route GET /api/v1/cost/changes and `tallyhouse report changes` both
// call this, never a copy.
import type { Store } from '../store/client.js';
import { CHANGE_GROUPS, costChangeLines, type ChangeGroup } from '../store/tables/usage-buckets.js';
import { MODEL_CHANGE_GROUPS, modelCostChangeLines, type ModelChangeGroup } from '../store/tables/model-usage.js';
import { attributeChanges, honestChanges, type CostLine, type HonestCostChanges } from '../insights/cost-changes.js';
import { periodsCoverage, type Coverage, type CoverageSource } from '../insights/coverage.js';
import { loadCoverage } from './coverage-report.js';
import type { Table } from './http.js';
import { loadFinality, loadFinalityBoth } from './finality-report.js';

export const CHANGE_GROUP_NAMES = [...Object.keys(CHANGE_GROUPS), ...Object.keys(MODEL_CHANGE_GROUPS)] as [string, ...string[]];
export type ChangeProduct = 'all' | 'serverless' | 'model_api';

export interface CostChangesQuery {
  timezone: string;
  /** Local days, `to` exclusive. */
  from: string;
  to: string;
  baselineFrom: string;
  baselineTo: string;
  product: ChangeProduct;
  /** Keys of either product; each product groups by those that apply to it (none: the product as one group). */
  groupBy: string[];
  apps?: string[];
  endpoints?: string[];
}

export interface CostChangesReport extends HonestCostChanges {
  /** What each period rests on: usage (and model usage) collected over it, or the ranges not collected. */
  coverage: Coverage;
  /** Days in each period (the per-day figures divide by these). */
  baseline_days: number;
  current_days: number;
  /** Whether each period's figures can still change (src/insights/finality.ts); the days that can. */
  final: { baseline: boolean; current: boolean; provisional_days: string[] };
  timezone: string;
  from: string;
  to: string;
  baseline_from: string;
  baseline_to: string;
  product: ChangeProduct;
  group_by: string[];
}

async function linesOf(store: Pick<Store, 'client'>, q: CostChangesQuery, from: string, to: string): Promise<CostLine[]> {
  const lines: CostLine[] = [];
  if (q.product !== 'model_api') {
    const groupBy = q.groupBy.filter((g): g is ChangeGroup => g in CHANGE_GROUPS);
    for (const r of await costChangeLines(store, { timezone: q.timezone, from, to, groupBy, apps: q.apps ?? [] })) {
      const row = r as Record<string, unknown>;
      lines.push({
        product: 'serverless',
        group: Object.fromEntries(groupBy.map((g) => [g, String(row[`g_${g}`])])),
        item: `${r.app} ${r.machine_type}${r.is_surge ? ' surge' : ''}`,
        currency: r.currency,
        quantity: r.quantity,
        subtotal: r.subtotal,
        discount: r.discount,
      });
    }
  }
  if (q.product !== 'serverless') {
    const groupBy = q.groupBy.filter((g): g is ModelChangeGroup => g in MODEL_CHANGE_GROUPS);
    for (const r of await modelCostChangeLines(store, { timezone: q.timezone, from, to, groupBy, endpoints: q.endpoints ?? [] })) {
      const row = r as Record<string, unknown>;
      lines.push({
        product: 'model_api',
        group: Object.fromEntries(groupBy.map((g) => [g, String(row[`g_${g}`])])),
        item: `${r.endpoint_id} ${r.unit}`,
        currency: r.currency,
        quantity: r.quantity,
        subtotal: r.subtotal,
        discount: r.discount,
      });
    }
  }
  return lines;
}

const dayCount = (from: string, to: string) => Math.round((Date.parse(to) - Date.parse(from)) / 86_400_000);

export async function costChangesReport(store: Pick<Store, 'client'>, q: CostChangesQuery & { windowHours: number; now: Date }): Promise<CostChangesReport> {
  const baseline = await linesOf(store, q, q.baselineFrom, q.baselineTo);
  const current = await linesOf(store, q, q.from, q.to);
  const finality = async (from: string, to: string) =>
    q.product === 'all'
      ? loadFinalityBoth(store, { timezone: q.timezone, from, to, windowHours: q.windowHours, now: q.now })
      : loadFinality(store, { product: q.product, timezone: q.timezone, from, to, windowHours: q.windowHours, now: q.now });
  const [fb, fc] = [await finality(q.baselineFrom, q.baselineTo), await finality(q.from, q.to)];
  const sources: CoverageSource[] = q.product === 'all' ? ['usage', 'model_usage'] : [q.product === 'serverless' ? 'usage' : 'model_usage'];
  const consequence = { usage: 'its serverless cost is unknown, not zero', model_usage: 'its model API cost is unknown, not zero' };
  const [cb, cc] = await Promise.all([
    loadCoverage(store, { sources, zone: q.timezone, from: q.baselineFrom, to: q.baselineTo, now: q.now, consequence }),
    loadCoverage(store, { sources, zone: q.timezone, from: q.from, to: q.to, now: q.now, consequence }),
  ]);
  const baselineDays = dayCount(q.baselineFrom, q.baselineTo);
  const currentDays = dayCount(q.from, q.to);
  const coverage = periodsCoverage(
    [{ label: `Baseline ${q.baselineFrom} to ${q.baselineTo}`, coverage: cb }, { label: `Current period ${q.from} to ${q.to}`, coverage: cc }],
    'A group seen in one period only is not_collected there, not new or gone.',
  );
  return {
    coverage,
    baseline_days: baselineDays,
    current_days: currentDays,
    final: { baseline: fb.final, current: fc.final, provisional_days: [...new Set([...fb.provisional_days, ...fc.provisional_days])].sort() },
    timezone: q.timezone,
    from: q.from,
    to: q.to,
    baseline_from: q.baselineFrom,
    baseline_to: q.baselineTo,
    product: q.product,
    group_by: q.groupBy,
    ...honestChanges(attributeChanges({ baseline, current }), {
      baselineComplete: cb.status === 'complete', currentComplete: cc.status === 'complete', baselineDays, currentDays,
    }),
  };
}

const PART_COLUMNS = ['baseline_cost', 'current_cost', 'difference', 'volume', 'price', 'discount', 'new', 'gone', 'not_collected'] as const;

/** The report as one table: a row per group (ranked), then a total row per currency. */
export function costChangesTable(report: CostChangesReport, limit?: number): Table {
  const columns = ['row_type', 'rank', 'product', ...report.group_by, 'currency', 'status', ...PART_COLUMNS, 'baseline_per_day', 'current_per_day', 'final'];
  const final = report.final.baseline && report.final.current;
  const groups = limit === undefined ? report.groups : report.groups.slice(0, limit);
  const rows: Array<Record<string, string | number | boolean | null>> = groups.map((g, i) => ({
    row_type: 'group',
    rank: i + 1,
    product: g.product,
    ...Object.fromEntries(report.group_by.map((k) => [k, g.group[k] ?? ''])),
    currency: g.currency,
    status: g.status,
    baseline_cost: g.baseline.cost,
    current_cost: g.current.cost,
    difference: g.difference,
    volume: g.volume,
    price: g.price,
    discount: g.discount,
    new: g.new,
    gone: g.gone,
    not_collected: g.not_collected,
    baseline_per_day: null,
    current_per_day: null,
    final,
  }));
  for (const t of report.totals) {
    rows.push({
      row_type: 'total',
      rank: null,
      product: '',
      ...Object.fromEntries(report.group_by.map((k) => [k, ''])),
      currency: t.currency,
      status: '',
      baseline_cost: t.baseline,
      current_cost: t.current,
      difference: t.difference,
      volume: t.volume,
      price: t.price,
      discount: t.discount,
      new: t.new,
      gone: t.gone,
      not_collected: t.not_collected,
      baseline_per_day: t.baseline_per_day,
      current_per_day: t.current_per_day,
      final,
    });
  }
  return { columns, rows };
}
