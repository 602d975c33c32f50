// The platform's whole-range summary (`expand=summary`) per endpoint, for each local day and calendar month a run
// touches (issue 50.2): a period's percentiles are then the platform's own, computed over every request of the
// period. Percentiles of buckets do not merge (no p99 of a month follows from its days' p99s), so without this a
// month's p95/p99 cannot be known.
import { DateTime } from 'luxon';
import type { JobContext } from './job.js';
import { AnalyticsRow, ANALYTICS_METRIC_NAMES, chunk, SeriesPage, type AnalyticsMetricName } from '../platform/index.js';
import { analyticsSummaries, type AnalyticsSummaryRow, type SummaryPeriod } from '../store/tables/analytics-summaries.js';
import { nextVersionMs, toDateTime64 } from '../values.js';
import { collectorRejects, commitRows, describeZodIssue, tableWrite } from './common.js';
import { servedGauge } from './optional-endpoint.js';
import {
  EXTRA_EXPAND_METRICS,
  INTERFACE_EXPAND_METRICS,
  extrasAccepted,
  isSummaryNotServed,
  noteSummaryRefused,
  PATHS,
  SUMMARY_ENDPOINT,
  summaryRefused,
  type AnalyticsKind,
  type AnalyticsTargets,
  type RefusedEndpoints,
} from './analytics.js';

export interface SummaryRange {
  period: SummaryPeriod;
  startMs: number;
  endMs: number;
}

/**
 * The local days and calendar months in `timezone` that overlap [fromMs, toMs), each whole (a DST day is 23 or 25
 * hours). Local ranges, not UTC: the platform's analytics take `timezone` with `bound_to_timeframe` (notes:
 * "the range is aligned to bucket boundaries" in the requested zone), so a summary of a local day or month is
 * what it serves, and those are the ranges users read (a day or a month on their calendar, per TIMEZONES zone).
 */
export function summaryRanges(fromMs: number, toMs: number, timezone: string): SummaryRange[] {
  const out: SummaryRange[] = [];
  for (const period of ['day', 'month'] as const) {
    let t = DateTime.fromMillis(fromMs, { zone: timezone }).startOf(period);
    while (t.toMillis() < toMs) {
      const next = t.plus(period === 'day' ? { days: 1 } : { months: 1 }).startOf(period);
      out.push({ period, startMs: t.toMillis(), endMs: next.toMillis() });
      t = next;
    }
  }
  return out;
}

/**
 * Collects the summary of every range of `summaryRanges(fromMs, toMs, timezone)` for the target endpoints (ids the
 * run found refused are left out) and stores it, a re-collection replacing the earlier rows. Models: only the models
 * the caller used in the range (request_count not 0) are kept. A platform that does not serve `summary` is noted
 * once (log line, run note, tallyhouse_platform_endpoint_served 0) and the run goes on: the API then falls back
 * to the buckets and says so.
 */
export async function collectAnalyticsSummaries(
  ctx: JobContext,
  window: { timezone: string; fromMs: number; toMs: number },
  targets: AnalyticsTargets,
  refused: RefusedEndpoints,
): Promise<{ rows: number }> {
  if (summaryRefused(ctx)) {
    noteSummaryRefused(ctx, null);
    return { rows: 0 };
  }
  const { timezone } = window;
  const version = nextVersionMs();
  const collectedAt = toDateTime64(Date.now());
  const nowMs = ctx.now().getTime();
  const rejects = collectorRejects('analytics');
  const rows: AnalyticsSummaryRow[] = [];
  let withExtras = extrasAccepted(ctx);
  try {
    for (const r of summaryRanges(window.fromMs, window.toMs, timezone)) {
      for (const kind of ['serverless', 'models'] as const) {
        for (const ids of chunk(targets[kind].filter((id) => !refused.has(id)), 50)) {
          ctx.signal.throwIfAborted();
          let got: unknown[];
          try {
            got = await summaryOf(ctx, kind, r, timezone, ids, withExtras);
          } catch (err) {
            // The time series already settled whether the extras are served; a refusal here with them named is
            // tried once without them before the summary itself is taken as refused.
            if (!withExtras || !isSummaryNotServed(err)) throw err;
            withExtras = false;
            got = await summaryOf(ctx, kind, r, timezone, ids, withExtras);
          }
          for (const raw of got) {
            const parsed = AnalyticsRow.safeParse(raw);
            if (!parsed.success) {
              rejects.add(raw, `summary: ${describeZodIssue(parsed.error)}`);
              continue;
            }
            if (kind === 'models' && parsed.data.request_count === 0) continue;
            rows.push(toRow(kind, r, timezone, nowMs, parsed.data, raw, version, collectedAt));
          }
        }
      }
    }
  } catch (err) {
    if (!isSummaryNotServed(err)) throw err;
    noteSummaryRefused(ctx, err);
    return { rows: 0 };
  }
  servedGauge(ctx).set({ endpoint: SUMMARY_ENDPOINT }, 1);
  await commitRows(ctx, [tableWrite(analyticsSummaries, rows)], rejects, { timezone, summaries: true });
  return { rows: rows.length };
}

async function summaryOf(ctx: JobContext, kind: AnalyticsKind, r: SummaryRange, timezone: string, ids: string[], withExtras: boolean): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const page of ctx.platform.paginate(PATHS[kind], {
    query: {
      start: new Date(r.startMs).toISOString(),
      end: new Date(r.endMs).toISOString(),
      timezone,
      // Day buckets: a local day and a calendar month are whole days in the zone, so the aligned range is exact.
      timeframe: 'day',
      bound_to_timeframe: 'true',
      endpoint_id: ids,
      expand: ['summary', ...INTERFACE_EXPAND_METRICS, ...(withExtras ? EXTRA_EXPAND_METRICS : [])],
      limit: 1000,
    },
    schema: SeriesPage,
    ctx: ctx.call,
  })) {
    for (const raw of page.summary ?? []) out.push(raw);
  }
  return out;
}

function toRow(
  kind: AnalyticsKind,
  r: SummaryRange,
  timezone: string,
  nowMs: number,
  row: AnalyticsRow,
  raw: unknown,
  version: number,
  collectedAt: string,
): AnalyticsSummaryRow {
  const metrics = Object.fromEntries(ANALYTICS_METRIC_NAMES.map((m) => [m, row[m] ?? null])) as Record<AnalyticsMetricName, number | null>;
  const rate = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  return {
    kind,
    timezone,
    period: r.period,
    range_start: toDateTime64(r.startMs),
    range_end: toDateTime64(r.endMs),
    range_offset_minutes: DateTime.fromMillis(r.startMs, { zone: timezone }).offset,
    covered_until: toDateTime64(Math.min(r.endMs, nowMs)),
    endpoint_id: row.endpoint_id,
    endpoint_scope: kind === 'models' ? 'model' : row.endpoint_id.split('/').length <= 2 ? 'app' : 'route',
    ...metrics,
    success_rate: rate(row.success_rate),
    error_rate: rate(row.error_rate),
    raw: JSON.stringify(raw),
    version,
    collected_at: collectedAt,
  };
}
