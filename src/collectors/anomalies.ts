import type { Runtime } from '../runtime.js';
import type { JobContext } from './job.js';
import { dailyAppCostLines } from '../store/tables/usage-buckets.js';
import { dailyModelCostLines } from '../store/tables/model-usage.js';
import { anomalyInputsByBucket } from '../store/tables/analytics-buckets.js';
import { anomalies, findingsInRange, type AnomalyRow } from '../store/tables/anomalies.js';
import { nextVersionMs, toDateTime64 } from '../values.js';
import {
  DEFAULT_DETECT_OPTIONS,
  describeFinding,
  detectSeries,
  peerKey,
  peerNoise,
  type Finding,
  type SeriesKey,
  type SeriesKind,
  type SeriesPoint,
} from '../insights/anomalies.js';
import { attributeChanges, describeGroupChange, type CostLine, type CostProduct } from '../insights/cost-changes.js';
import { collectorRejects, commitRows, tableWrite } from './common.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const WEEK_MS = 7 * DAY_MS;

/** A series with its points, and for cost the lines the attribution explains a finding from. */
interface BuiltSeries {
  key: SeriesKey;
  points: SeriesPoint[];
  lines?: { startMs: number; line: CostLine }[];
  /**
   * The end of the newest bucket its source (usage, model usage, analytics of one kind) holds for any series:
   * buckets after it are not collected yet, not empty, and are not judged (an absent bucket before it is 0).
   */
  coveredUntilMs?: number;
}

/** 'YYYY-MM-DD hh:mm:ss.sss' (UTC, as toString(DateTime64) gives it) to ms. */
function utcMs(text: string): number {
  return Date.parse(`${text.replace(' ', 'T')}Z`);
}

function keyText(k: { kind: string; id: string; measure: string; grain: string; unit: string }): string {
  return `${k.kind}\u0000${k.id}\u0000${k.measure}\u0000${k.grain}\u0000${k.unit}`;
}

class SeriesSet {
  private readonly byKey = new Map<string, BuiltSeries>();
  get(key: SeriesKey): BuiltSeries {
    const k = keyText(key);
    let s = this.byKey.get(k);
    if (!s) this.byKey.set(k, (s = { key, points: [] }));
    return s;
  }
  all(): BuiltSeries[] {
    return [...this.byKey.values()];
  }
  /** Stamps every series added since the last call with its source's coverage. */
  cover(untilMs: number): void {
    for (const s of this.byKey.values()) s.coveredUntilMs ??= untilMs;
  }
}

/** Adds a point's value to the series' point of that bucket (several lines of one day and currency are one point). */
function addTo(s: BuiltSeries, startMs: number, value: number): void {
  const last = s.points.find((p) => p.startMs === startMs);
  if (last) last.value += value;
  else s.points.push({ startMs, value });
}

function costSeries(set: SeriesSet, kind: SeriesKind, id: string, currency: string, startMs: number, cost: string, line: CostLine): void {
  const s = set.get({ kind, id, measure: 'cost', grain: 'day', unit: currency });
  addTo(s, startMs, Number(cost));
  (s.lines ??= []).push({ startMs, line });
}

/**
 * Reads the series of [readFromMs, toMs) in `timezone` through the tables' named queries: daily cost per app
 * (usage), per model endpoint and per API key (model usage), and from the analytics' hourly buckets each endpoint's
 * requests and error rate (5xx / requests) per hour and per local day, and its p95 latency per local day. A day's
 * p95 is the request-weighted mean of its hours' p95s: percentiles do not add up, and the platform's hourly ones
 * are what is stored; a shift of the whole latency distribution moves it as it moves the true p95.
 */
export async function readAnomalySeries(rt: Pick<Runtime, 'store'>, timezone: string, readFromMs: number, toMs: number): Promise<BuiltSeries[]> {
  const set = new SeriesSet();
  const from = toDateTime64(new Date(readFromMs));
  const to = toDateTime64(new Date(toMs));
  let newest = -Infinity;
  for (const r of await dailyAppCostLines(rt.store, { timezone, from, to })) {
    if (!r.app) continue;
    const line: CostLine = { product: 'serverless', group: { app: r.app }, item: `${r.machine_type}${r.is_surge ? ' surge' : ''}`, currency: r.currency, quantity: r.quantity, subtotal: r.subtotal, discount: r.discount };
    costSeries(set, 'app', r.app, r.currency, utcMs(r.bucket_utc), r.cost, line);
    newest = Math.max(newest, utcMs(r.bucket_utc) + DAY_MS);
  }
  set.cover(newest);
  newest = -Infinity;
  for (const r of await dailyModelCostLines(rt.store, { timezone, from, to })) {
    const product: CostProduct = 'model_api';
    const startMs = utcMs(r.bucket_utc);
    const figures = { currency: r.currency, quantity: r.quantity, subtotal: r.subtotal, discount: r.discount };
    costSeries(set, 'model_endpoint', r.endpoint_id, r.currency, startMs, r.cost, { product, group: { endpoint: r.endpoint_id }, item: r.unit, ...figures });
    if (r.caller) costSeries(set, 'api_key', r.caller, r.currency, startMs, r.cost, { product, group: { api_key: r.caller }, item: `${r.endpoint_id} ${r.unit}`, ...figures });
    newest = Math.max(newest, startMs + DAY_MS);
  }
  set.cover(newest);
  for (const kind of ['serverless', 'models'] as const) {
    const rows = await anomalyInputsByBucket(rt.store, { kind, timezone, timeframe: 'hour', from, to, endpoint_ids: [] });
    const days = new Map<string, { kind: SeriesKind; id: string; startMs: number; requests: number; errors: number; latencyWeighted: number; latencyRequests: number }>();
    for (const r of rows) {
      const seriesKind: SeriesKind = r.endpoint_scope === 'model' || kind === 'models' ? 'model_endpoint' : r.endpoint_scope === 'app' ? 'app' : 'endpoint';
      const startMs = utcMs(r.bucket_utc);
      newest = Math.max(newest, startMs + HOUR_MS);
      const requests = r.request_count ?? 0;
      const errors = r.error_count ?? 0;
      set.get({ kind: seriesKind, id: r.endpoint_id, measure: 'volume', grain: 'hour', unit: 'requests' }).points.push({ startMs, value: requests });
      if (requests > 0) set.get({ kind: seriesKind, id: r.endpoint_id, measure: 'error_rate', grain: 'hour', unit: 'ratio' }).points.push({ startMs, value: errors / requests, requests });
      // The local day of the hour: its offset tells where the zone's midnight fell.
      const offsetMs = Number(r.bucket_offset_minutes) * 60_000;
      const dayStartMs = Math.floor((startMs + offsetMs) / DAY_MS) * DAY_MS - offsetMs;
      const dk = `${seriesKind}\u0000${r.endpoint_id}\u0000${dayStartMs}`;
      let d = days.get(dk);
      if (!d) days.set(dk, (d = { kind: seriesKind, id: r.endpoint_id, startMs: dayStartMs, requests: 0, errors: 0, latencyWeighted: 0, latencyRequests: 0 }));
      d.requests += requests;
      d.errors += errors;
      if (r.p95_duration !== null && requests > 0) {
        d.latencyWeighted += r.p95_duration * requests;
        d.latencyRequests += requests;
      }
    }
    set.cover(newest);
    for (const d of days.values()) {
      set.get({ kind: d.kind, id: d.id, measure: 'volume', grain: 'day', unit: 'requests' }).points.push({ startMs: d.startMs, value: d.requests });
      if (d.requests > 0) set.get({ kind: d.kind, id: d.id, measure: 'error_rate', grain: 'day', unit: 'ratio' }).points.push({ startMs: d.startMs, value: d.errors / d.requests, requests: d.requests });
      if (d.latencyRequests > 0) set.get({ kind: d.kind, id: d.id, measure: 'p95_latency', grain: 'day', unit: 'seconds' }).points.push({ startMs: d.startMs, value: d.latencyWeighted / d.latencyRequests, requests: d.latencyRequests });
    }
    // A local day is judged once its last hour is collected.
    set.cover(newest - DAY_MS + 1);
    newest = -Infinity;
  }
  return set.all();
}

/**
 * A cost finding's explanation: the change attribution (src/insights/cost-changes.ts) of the finding's day against the
 * same weekday a week before, in words ("price effect +412 USD on svc-ai/flux: unit price ...").
 */
export function explainCostFinding(f: Finding, lines: readonly { startMs: number; line: CostLine }[]): string {
  const near = (t: number, target: number) => Math.abs(t - target) <= HOUR_MS;
  const current = lines.filter((l) => near(l.startMs, f.startMs)).map((l) => l.line);
  const baseline = lines.filter((l) => near(l.startMs, f.startMs - WEEK_MS)).map((l) => l.line);
  if (current.length === 0 && baseline.length === 0) return '';
  const changes = attributeChanges({ baseline, current });
  const group = changes.groups.find((g) => g.currency === f.series.unit);
  return group ? `${describeGroupChange(group)} (against ${new Date(f.startMs - WEEK_MS).toISOString().slice(0, 10)})` : '';
}

export interface AnomalyEvaluation {
  findings: number;
  tombstoned: number;
  series: number;
}

/**
 * Judges the complete buckets starting in [fromMs, toMs) of every series (an hourly bucket once its hour has
 * passed, a daily one once its day has), writes a row per finding (a newer version of a bucket found before), and a
 * tombstone for a stored finding of a judged bucket that is no longer anomalous. Resolves once committed.
 */
export async function evaluateAnomalies(ctx: JobContext, plan: { timezone: string; fromMs: number; toMs: number; nowMs: number }): Promise<AnomalyEvaluation> {
  const options = DEFAULT_DETECT_OPTIONS;
  // the calibrated baseline reads its lookback; error rate its trailing weeks
  const readFromMs = plan.fromMs - Math.max(options.weeks * WEEK_MS, options.baseline.lookbackDays * DAY_MS) - DAY_MS;
  const series = await readAnomalySeries(ctx.runtime, plan.timezone, readFromMs, plan.toMs);
  // A bucket is judged once it has ended: an hour that started an hour or more ago, a day that started a day or more ago.
  const judgedUntil = { hour: Math.min(plan.toMs, plan.nowMs - HOUR_MS + 1), day: Math.min(plan.toMs, plan.nowMs - DAY_MS + 1) };
  const version = nextVersionMs();
  const evaluatedAt = toDateTime64(new Date(plan.nowMs));
  const rows: AnomalyRow[] = [];
  const found = new Set<string>();
  const judgedUntilByKey = new Map<string, number>();
  const peers = peerNoise(series, options);
  for (const s of series) {
    const until = Math.min(judgedUntil[s.key.grain], s.coveredUntilMs ?? -Infinity);
    judgedUntilByKey.set(keyText(s.key), until);
    for (const f of detectSeries(s.key, s.points, plan.fromMs, until, options, peers.get(peerKey(s.key)))) {
      found.add(f.findingId);
      rows.push({
        series_kind: f.series.kind,
        series_id: f.series.id,
        measure: f.series.measure,
        grain: f.series.grain,
        unit: f.series.unit,
        bucket: toDateTime64(new Date(f.startMs)),
        finding_id: f.findingId,
        expected: f.expected,
        expected_low: f.expectedLow,
        expected_high: f.expectedHigh,
        actual: f.actual,
        score: f.score,
        direction: f.direction,
        summary: describeFinding(f),
        explanation: f.series.measure === 'cost' && s.lines ? explainCostFinding(f, s.lines) : '',
        version,
        is_deleted: 0,
        evaluated_at: evaluatedAt,
      });
    }
  }
  // Stored findings of judged buckets that this evaluation no longer finds: tombstones.
  const stored = await findingsInRange(ctx.runtime.store, {
    from: toDateTime64(new Date(plan.fromMs)),
    to: toDateTime64(new Date(plan.toMs)),
    series_kind: '',
    measure: '',
    series_id: '',
    limit: 1_000_000,
  });
  let tombstoned = 0;
  for (const old of stored) {
    const startMs = utcMs(old.bucket_utc);
    const until = judgedUntilByKey.get(keyText({ kind: old.series_kind, id: old.series_id, measure: old.measure, grain: old.grain, unit: old.unit }));
    if (found.has(old.finding_id) || until === undefined || startMs < plan.fromMs || startMs >= until) continue;
    tombstoned++;
    rows.push({
      series_kind: old.series_kind,
      series_id: old.series_id,
      measure: old.measure,
      grain: old.grain,
      unit: old.unit,
      bucket: old.bucket_utc,
      finding_id: old.finding_id,
      expected: old.expected,
      expected_low: old.expected_low,
      expected_high: old.expected_high,
      actual: old.actual,
      score: old.score,
      direction: old.direction,
      summary: old.summary,
      explanation: old.explanation,
      version,
      is_deleted: 1,
      evaluated_at: evaluatedAt,
    });
  }
  await commitRows(ctx, [tableWrite(anomalies, rows)], collectorRejects('anomalies'));
  return { findings: found.size, tombstoned, series: series.length };
}
