import { createHash } from 'node:crypto';
import { bandZ, DEFAULT_BASELINE_OPTIONS, fitBaseline, medianOf, seriesNoise, type Baseline, type BaselineMeasure, type BaselineOptions } from './anomaly-baseline.js';

/**
 * Anomaly detection (issue 32 point 2): is a bucket of a series far from what the same weekday (and hour) of the
 * trailing weeks makes ordinary? One pure module (CONTRIBUTING.md rule 20): the anomalies job, the bench and the
 * tests call it with rows; it does no I/O.
 *
 * The baseline of bucket t is the values of t - 1 week, t - 2 weeks, ... t - `weeks` weeks (same weekday, and the
 * same hour for hourly series): their median is the expected value, and their spread is 1.4826 x MAD (the median
 * absolute deviation, scaled to a standard deviation for normal noise). Seasonality longer than a week and slow
 * trends move the median along with them; a past anomaly is one of `weeks` samples and barely moves it.
 *
 * The spread is floored, so that a quiet or very regular series does not alarm on a trifle: at least
 * `relativeFloor` x |median|, at least the measure's absolute floor, and for counts the noise of counting itself:
 * sqrt(median) for volume (Poisson), sqrt(p(1 - p) / n) for an error rate p over n requests (binomial).
 *
 * score = (actual - median) / spread. A finding is a bucket whose |score| reaches the grain's threshold. Error rate
 * and latency alarm only upwards (fewer errors or faster answers are nobody's incident); cost and volume both ways
 * (a runaway key and an outage that stops traffic are both findings).
 *
 * A bucket needs at least `minWeeks` of those past buckets: a new series has no finding until it has a history.
 * Cost and volume points that are absent count as 0 once the series has begun (no usage is usage of 0); an error
 * rate or latency point that is absent, or whose bucket had fewer than `minRequests` requests, is no evidence
 * either way and is left out (and not judged itself).
 */

export type SeriesKind = 'app' | 'endpoint' | 'model_endpoint' | 'api_key';
export type Measure = 'cost' | 'volume' | 'error_rate' | 'p95_latency';
export type Grain = 'day' | 'hour';
export type Direction = 'up' | 'down';

export const SERIES_KINDS: readonly SeriesKind[] = ['app', 'endpoint', 'model_endpoint', 'api_key'];
export const MEASURES: readonly Measure[] = ['cost', 'volume', 'error_rate', 'p95_latency'];

export interface SeriesKey {
  kind: SeriesKind;
  /** The app (`owner/name`), endpoint id, model endpoint id or API key id. */
  id: string;
  measure: Measure;
  grain: Grain;
  /** What the values are in: the currency for cost, `requests`, `ratio` (error rate), `seconds` (latency). */
  unit: string;
}

export interface SeriesPoint {
  /** Bucket start, ms since epoch (UTC). */
  startMs: number;
  value: number;
  /** Requests of the bucket: the n of an error rate, the weight of a latency. */
  requests?: number;
}

export interface DetectOptions {
  /** Trailing weeks of the baseline. */
  weeks: number;
  /** Past buckets needed at least to judge one. */
  minWeeks: number;
  /** |score| that makes a finding, per grain. */
  threshold: Record<Grain, number>;
  /** The spread is at least this share of |median|. */
  relativeFloor: number;
  /** The spread is at least this, per measure (in the measure's unit). */
  absoluteFloor: Record<Measure, number>;
  /** Error rate and latency buckets with fewer requests are not judged and not used. */
  minRequests: number;
  /** Cost, volume and latency: the calibrated baseline (src/insights/anomaly-baseline.ts). */
  baseline: BaselineOptions;
}

export const DEFAULT_DETECT_OPTIONS: DetectOptions = {
  weeks: 4,
  minWeeks: 3,
  threshold: { day: 5, hour: 5 },
  relativeFloor: 0.06,
  absoluteFloor: { cost: 1, volume: 5, error_rate: 0.01, p95_latency: 0.05 },
  minRequests: 20,
  baseline: DEFAULT_BASELINE_OPTIONS,
};

export interface Finding {
  /** Stable over re-evaluations: the series and the bucket (a receiver dedupes notifications by it). */
  findingId: string;
  series: SeriesKey;
  startMs: number;
  expected: number;
  expectedLow: number;
  expectedHigh: number;
  actual: number;
  score: number;
  direction: Direction;
}

const HOUR_MS = 3_600_000;
const WEEK_MS = 7 * 24 * HOUR_MS;
const MAD_TO_SD = 1.4826;

export function median(values: readonly number[]): number {
  if (values.length === 0) throw new Error('median of nothing');
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** Median and 1.4826 x MAD of the baseline values. */
export function robustCentre(values: readonly number[]): { median: number; spread: number } {
  const m = median(values);
  return { median: m, spread: MAD_TO_SD * median(values.map((v) => Math.abs(v - m))) };
}

/** The floored spread of a bucket (see the module comment). */
export function flooredSpread(measure: Measure, m: number, rawSpread: number, requests: number | undefined, o: DetectOptions): number {
  let s = Math.max(rawSpread, o.relativeFloor * Math.abs(m), o.absoluteFloor[measure]);
  if (measure === 'volume') s = Math.max(s, Math.sqrt(Math.max(m, 0)));
  if (measure === 'error_rate' && requests && requests > 0) {
    const p = Math.min(Math.max(m, 0), 1);
    s = Math.max(s, Math.sqrt((p * (1 - p)) / requests));
  }
  return s;
}

export function findingId(series: SeriesKey, startMs: number): string {
  return createHash('sha256')
    .update([series.kind, series.id, series.measure, series.grain, series.unit, new Date(startMs).toISOString()].join('\u0000'))
    .digest('hex')
    .slice(0, 32);
}

/** Buckets of a series, by start; a daily bucket in a zone with DST may sit an hour off its weekday's neighbours. */
class PointIndex {
  private readonly byStart = new Map<number, SeriesPoint>();
  readonly firstMs: number;
  constructor(points: readonly SeriesPoint[]) {
    let first = Infinity;
    for (const p of points) {
      this.byStart.set(p.startMs, p);
      if (p.startMs < first) first = p.startMs;
    }
    this.firstMs = first;
  }
  near(ms: number, grain: Grain): SeriesPoint | undefined {
    const exact = this.byStart.get(ms);
    if (exact || grain === 'hour') return exact;
    return this.byStart.get(ms - HOUR_MS) ?? this.byStart.get(ms + HOUR_MS);
  }
}

function counted(measure: Measure): boolean {
  return measure === 'cost' || measure === 'volume';
}

/** The value a bucket contributes, or undefined when it is no evidence (see the module comment). */
function usable(measure: Measure, p: SeriesPoint | undefined, begun: boolean, o: DetectOptions): number | undefined {
  if (counted(measure)) return p ? p.value : begun ? 0 : undefined;
  if (!p || !Number.isFinite(p.value)) return undefined;
  if ((p.requests ?? 0) < o.minRequests) return undefined;
  return p.value;
}

/**
 * Judges the buckets of one series that start in [fromMs, toMs) (every bucket present there, and for cost and
 * volume every grain step, absent ones being 0). `points` must also hold the trailing `weeks` weeks before fromMs.
 */
export function detectSeries(
  series: SeriesKey,
  points: readonly SeriesPoint[],
  fromMs: number,
  toMs: number,
  options: DetectOptions = DEFAULT_DETECT_OPTIONS,
  priorScale?: number,
): Finding[] {
  if (points.length === 0) return [];
  if (series.measure !== 'error_rate') return detectCalibrated(series, points, fromMs, toMs, options, priorScale);
  const index = new PointIndex(points);
  const threshold = options.threshold[series.grain];
  const starts = counted(series.measure) ? gridStarts(points, fromMs, toMs, series.grain) : points.map((p) => p.startMs).filter((t) => t >= fromMs && t < toMs).sort((a, b) => a - b);
  const findings: Finding[] = [];
  for (const t of starts) {
    const point = index.near(t, 'hour');
    const actual = usable(series.measure, point, t >= index.firstMs, options);
    if (actual === undefined) continue;
    const past: number[] = [];
    for (let k = 1; k <= options.weeks; k++) {
      const at = t - k * WEEK_MS;
      const v = usable(series.measure, index.near(at, series.grain), at >= index.firstMs - (series.grain === 'day' ? HOUR_MS : 0), options);
      if (v !== undefined) past.push(v);
    }
    if (past.length < options.minWeeks) continue;
    const centre = robustCentre(past);
    const spread = flooredSpread(series.measure, centre.median, centre.spread, point?.requests, options);
    const score = boundedByCounting(series.measure, (actual - centre.median) / spread, actual, centre.median, point?.requests);
    if (Math.abs(score) < threshold) continue;
    const direction: Direction = score > 0 ? 'up' : 'down';
    if (direction === 'down' && !counted(series.measure)) continue;
    findings.push({
      findingId: findingId(series, t),
      series,
      startMs: t,
      expected: centre.median,
      expectedLow: Math.max(0, centre.median - threshold * spread),
      expectedHigh: centre.median + threshold * spread,
      actual,
      score,
      direction,
    });
  }
  return findings;
}

/**
 * An error rate over few requests is mostly counting noise, and the binomial spread of a rate near 0 is near 0:
 * the score of a rise is also bounded by how far the error count is beyond what counting explains: the
 * Anscombe-transformed Poisson count, 2 (sqrt(errors + 3/8) - sqrt(expected errors + 3/8)), near-normal even
 * for an expected count under 1.
 */
export function boundedByCounting(measure: Measure, score: number, actual: number, expected: number, requests: number | undefined): number {
  if (measure !== 'error_rate' || score <= 0 || !requests) return score;
  const countScore = 2 * (Math.sqrt(actual * requests + 0.375) - Math.sqrt(Math.max(expected, 0) * requests + 0.375));
  return Math.min(score, countScore);
}

/** Every bucket start in [fromMs, toMs) on the series' grid (aligned on its points; hours, or days of 24 h). */
function gridStarts(points: readonly SeriesPoint[], fromMs: number, toMs: number, grain: Grain): number[] {
  const present = points.map((p) => p.startMs).filter((t) => t >= fromMs && t < toMs);
  if (grain === 'day') {
    // Days of a zone with DST are 23 or 25 h: step from each stored day, and fill a missing day 24 h on.
    const set = new Set(present);
    const anchor = points[0].startMs;
    const step = 24 * HOUR_MS;
    let t = anchor + Math.ceil((fromMs - anchor) / step) * step;
    for (; t < toMs; t += step) {
      if (![t, t - HOUR_MS, t + HOUR_MS].some((x) => set.has(x))) set.add(t);
    }
    return [...set].sort((a, b) => a - b);
  }
  const out: number[] = [];
  const anchor = points[0].startMs;
  for (let t = anchor + Math.ceil((fromMs - anchor) / HOUR_MS) * HOUR_MS; t < toMs; t += HOUR_MS) out.push(t);
  return out;
}

/**
 * Cost, volume and latency: each bucket of [fromMs, toMs) against the calibrated baseline of the history before it
 * (src/insights/anomaly-baseline.ts), refitted for every daily bucket and at every 24th hourly one (a fit reads up
 * to 8 weeks of hours). Cost and volume buckets absent after the series began are 0.
 */
function detectCalibrated(series: SeriesKey, points: readonly SeriesPoint[], fromMs: number, toMs: number, options: DetectOptions, priorScale: number | undefined): Finding[] {
  const measure = series.measure as BaselineMeasure;
  const o = options.baseline;
  const sorted = [...points].sort((a, b) => a.startMs - b.startMs);
  const index = new PointIndex(sorted);
  const lookbackMs = o.lookbackDays * 24 * HOUR_MS;
  // The dense history: every grid step from the first point for cost and volume, the present points for latency.
  const dense: { startMs: number; value: number; requests?: number }[] = counted(measure)
    ? gridStarts(sorted, sorted[0].startMs, toMs, series.grain).map((t) => ({ startMs: t, value: index.near(t, 'hour')?.value ?? 0 }))
    : sorted.filter((p) => Number.isFinite(p.value) && (p.requests ?? 0) >= options.minRequests && p.startMs < toMs);
  const findings: Finding[] = [];
  let fit: Baseline | undefined;
  let fittedAt = -Infinity;
  let lo = 0;
  for (let i = 0; i < dense.length; i++) {
    const t = dense[i].startMs;
    if (t < fromMs) continue;
    if (series.grain === 'day' || t - fittedAt >= 24 * HOUR_MS) {
      while (dense[lo].startMs < t - lookbackMs) lo++;
      fit = fitBaseline(measure, series.grain, dense.slice(lo, i), priorScale, o);
      fittedAt = t;
    }
    if (!fit) continue;
    const actual = dense[i].value;
    const score = fit.score(t, actual);
    if (Math.abs(score) < bandZ(series.grain, o)) continue;
    const direction: Direction = score > 0 ? 'up' : 'down';
    if (direction === 'down' && !counted(measure)) continue;
    const expected = fit.expected(t);
    // Below the measure's absolute floor a difference is nobody's incident, whatever the scale says.
    if (Math.abs(actual - expected) < o.absoluteFloor[measure]) continue;
    const band = fit.band(t);
    findings.push({ findingId: findingId(series, t), series, startMs: t, expected, expectedLow: band.low, expectedHigh: band.high, actual, score, direction });
  }
  return findings;
}

/**
 * The peers' noise of each kind of series (kind, measure, grain): the median noise (anomaly-baseline's seriesNoise) of
 * the series of that kind with 3 weeks of history, when at least 5 have; what a young series' spread is pulled to.
 */
export function peerNoise(series: Iterable<{ key: SeriesKey; points: readonly SeriesPoint[] }>, options: DetectOptions = DEFAULT_DETECT_OPTIONS): Map<string, number> {
  const noise = new Map<string, number[]>();
  for (const s of series) {
    if (s.key.measure === 'error_rate') continue;
    const n = seriesNoise(s.key.measure as BaselineMeasure, s.key.grain, s.points, options.baseline);
    if (n === undefined) continue;
    const k = peerKey(s.key);
    (noise.get(k) ?? noise.set(k, []).get(k)!).push(n);
  }
  const out = new Map<string, number>();
  for (const [k, v] of noise) if (v.length >= 5) out.set(k, medianOf(v));
  return out;
}

export function peerKey(k: SeriesKey): string {
  return `${k.kind}|${k.measure}|${k.grain}`;
}

/** Findings of many series, most extreme first. */
export function detectAll(
  series: Iterable<{ key: SeriesKey; points: readonly SeriesPoint[] }>,
  fromMs: number,
  toMs: number,
  options: DetectOptions = DEFAULT_DETECT_OPTIONS,
): Finding[] {
  const list = [...series];
  const peers = peerNoise(list, options);
  const out: Finding[] = [];
  for (const s of list) out.push(...detectSeries(s.key, s.points, fromMs, toMs, options, peers.get(peerKey(s.key))));
  return out.sort((a, b) => Math.abs(b.score) - Math.abs(a.score) || a.startMs - b.startMs);
}

/** One line a person reads: "cost of app acme/flux on 2026-11-02: 312.5 USD, expected 100 (80-120), up, score 9.4". */
export function describeFinding(f: Finding): string {
  const when = f.series.grain === 'day' ? new Date(f.startMs).toISOString().slice(0, 10) : `${new Date(f.startMs).toISOString().slice(0, 13)}:00Z`;
  const n = (v: number) => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toPrecision(3));
  const what = { cost: 'cost', volume: 'requests', error_rate: 'error rate', p95_latency: 'p95 latency' }[f.series.measure];
  return `${what} of ${f.series.kind.replace('_', ' ')} ${f.series.id} ${f.series.grain === 'day' ? 'on' : 'at'} ${when}: ${n(f.actual)} ${f.series.unit}, expected ${n(f.expected)} (${n(f.expectedLow)}-${n(f.expectedHigh)}), ${f.direction}, score ${f.score.toFixed(1)}`;
}
