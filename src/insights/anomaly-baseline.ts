/**
 * The calibrated baseline of one series (issue 46.1): what the next bucket of a cost, volume or latency series is
 * expected to be, and how far from it is extraordinary, from the series' own history and its own noise. Pure: rows in,
 * figures out (CONTRIBUTING.md rule 20). src/insights/anomalies.ts judges buckets with it.
 *
 * Values are compared on a log scale, log(value + offset): usage varies by a share of itself, so a doubling is as far
 * from ordinary on a series of 10 USD a day as on one of 10,000. The offset (the measure's absolute floor, or 5% of
 * the typical value when larger) keeps a day of 0 finite and stops a few cents from looking like a tenfold change.
 *
 * The fit, on the history of the lookback (default 8 weeks) before the judged bucket:
 * 1. Intermittent series: when at least `intermittentShare` of the buckets are 0, the zeros are the series' rhythm,
 *    not evidence: the model is fitted to the non-zero buckets, and a 0 is never a finding.
 * 2. Seasonality only where the data shows it: a profile (weekday for daily series; hour of day, then weekday, for
 *    hourly ones) is the median, per phase, of each bucket's distance from a centred rolling median over one period
 *    (robust to a level shift and to a spike); it is used when it removes at least a quarter of the spread and the
 *    history holds three cycles (each of its phases costs the interval a degree of freedom).
 * 3. Level shifts: when the last `shiftConfirmDays` days all lie beyond 3 spreads of what came before, on the same
 *    side, the series has a new level: the history starts at the first day of that run. A shift is therefore judged
 *    anomalous for those first days (one episode), then learnt.
 * 4. Trend where there is one: a Theil-Sen slope over the days of the history (the median of pairwise slopes: a few
 *    spikes do not tilt it) when it removes at least a tenth of the spread and the history spans 3 weeks.
 * 5. Spread: the standard deviation of the residuals within 3 x 1.4826 x their median absolute value (a past spike is
 *    left out; the median absolute residual alone is too noisy an estimate on a few weeks). With
 *    few points it is pulled towards a prior (the noise of the series' peers: the same kind of series and measure)
 *    worth `priorWeight` buckets, and floored (`relativeFloor` on the log scale; counting noise for volume).
 * 6. A prediction interval, not a point band: the spread times sqrt(1 + 1/n + the trend's extrapolation term) times
 *    the Student t quantile of n + priorWeight - parameters degrees of freedom at the tail of `z` normal sigmas, so it
 *    widens on a short history and tends to +-z spreads on a long one.
 * 7. Ordinary spikes: when at least 2 and 4% of the buckets older than a week sit beyond 2.5 spreads on one side
 *    (normal noise puts 0.6% there), spikes that size are the series' habit: the band on that side reaches the
 *    largest of them plus two spreads. One past spike (an anomaly already reported) does not widen it, and all
 *    of them age out with the lookback.
 *
 * The score of a value is its distance from the prediction in units of (band half-width / z): |score| >= z is outside
 * the band, on either side.
 */

export type BaselineMeasure = 'cost' | 'volume' | 'p95_latency';
export type BaselineGrain = 'day' | 'hour';

export interface BaselineOptions {
  /** Days of history a fit uses at most. */
  lookbackDays: number;
  /** Days of an hourly series' history a fit uses at most (24 points a day: 4 weeks hold 672). */
  hourlyLookbackDays: number;
  /** One-sided normal quantile of the band of a daily bucket on a long history (widened on a short one). */
  z: number;
  /**
   * The same for an hourly bucket: a day holds 24 of them, so for the same false findings per series-day each needs a
   * tail 24 times thinner (4 sigmas: 3.2e-5; 4.7 sigmas: 1.3e-6).
   */
  hourlyZ: number;
  /** Buckets a series needs in its current level to be judged, per grain. */
  minHistory: Record<BaselineGrain, number>;
  /** Days a new level must hold before it is learnt. */
  shiftConfirmDays: number;
  /** Weight of the peers' noise in buckets (0: none). */
  priorWeight: number;
  /** The spread on the log scale is at least this. */
  relativeFloor: number;
  /** Share of zero buckets from which a series is intermittent. */
  intermittentShare: number;
  /** The value offset of the log scale, at least, per measure (in its unit). */
  absoluteFloor: Record<BaselineMeasure, number>;
}

export const DEFAULT_BASELINE_OPTIONS: BaselineOptions = {
  lookbackDays: 56,
  hourlyLookbackDays: 28,
  z: 4,
  hourlyZ: 4.7,
  minHistory: { day: 3, hour: 72 },
  shiftConfirmDays: 4,
  priorWeight: 14,
  relativeFloor: 0.04,
  intermittentShare: 0.2,
  absoluteFloor: { cost: 1, volume: 5, p95_latency: 0.05 },
};

export interface HistoryPoint {
  startMs: number;
  value: number;
}

export interface Baseline {
  /** The expected value of a bucket starting at `ms` (in the measure's unit). */
  expected(ms: number): number;
  /** The band's edges at `ms` (in the measure's unit; low floored at 0). */
  band(ms: number): { low: number; high: number };
  /** The value's score (see the module comment); 0 for a 0 of an intermittent series. */
  score(ms: number, value: number): number;
  /** What the fit found, for the tests and the explanation. */
  readonly info: { points: number; offset: number; scale: number; slopePerDay: number; weekly: boolean; daily: boolean; intermittent: boolean; shiftAtMs?: number; tailUp: boolean; tailDown: boolean };
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const MAD_TO_SD = 1.4826;
/** A side is heavy-tailed when at least 2 and 4% of the older residuals lie beyond 2.5 spreads (normal noise: 0.6%). */
const HEAVY_SPREADS = 2.5;
const HEAVY_SHARE = 0.04;

export function medianOf(values: readonly number[]): number {
  const s = Float64Array.from(values).sort();
  const n = s.length;
  if (n === 0) return NaN;
  return n % 2 ? s[n >> 1] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

export function madScale(values: readonly number[]): number {
  const m = medianOf(values);
  return MAD_TO_SD * medianOf(values.map((v) => Math.abs(v - m)));
}

/** The local weekday of a bucket starting at `ms` (0..6; a local midnight is within 12 h of the UTC one). */
function weekdayOf(ms: number): number {
  return Math.floor((ms + 12 * HOUR_MS) / DAY_MS + 4) % 7;
}
function hourOf(ms: number): number {
  return Math.floor(ms / HOUR_MS) % 24;
}
function dayOf(ms: number): number {
  return Math.floor((ms + 12 * HOUR_MS) / DAY_MS);
}

/** Centred rolling median over `window` neighbours (truncated at the ends). */
function rollingMedian(y: readonly number[], window: number): number[] {
  const half = window >> 1;
  return y.map((_, i) => medianOf(y.slice(Math.max(0, i - half), Math.min(y.length, i + half + 1))));
}

/** A seasonal profile by phase, used only when it removes at least a quarter of the spread (see the module comment). */
function seasonalProfile(y: readonly number[], phases: readonly number[], period: number, count: number): number[] | undefined {
  // three cycles at least: a profile of two points per phase fits the noise of a young series
  if (y.length < 3 * period) return undefined;
  const roll = rollingMedian(y, period);
  const r = y.map((v, i) => v - roll[i]);
  const byPhase: number[][] = Array.from({ length: count }, () => []);
  r.forEach((v, i) => byPhase[phases[i]].push(v));
  if (byPhase.some((b) => b.length < 3)) return undefined;
  const profile = byPhase.map((b) => medianOf(b));
  const centre = medianOf(profile);
  for (let k = 0; k < count; k++) profile[k] -= centre;
  const before = madScale(r);
  const after = madScale(r.map((v, i) => v - profile[phases[i]]));
  return after < 0.75 * before || (before === 0 && profile.some((p) => p !== 0)) ? profile : undefined;
}

/** Theil-Sen slope (median of pairwise slopes) of y over t. */
function theilSen(t: readonly number[], y: readonly number[]): number {
  const slopes: number[] = [];
  for (let i = 0; i < t.length; i++) for (let j = i + 1; j < t.length; j++) if (t[j] !== t[i]) slopes.push((y[j] - y[i]) / (t[j] - t[i]));
  return slopes.length ? medianOf(slopes) : 0;
}

// Student's t: the regularized incomplete beta by its continued fraction (Numerical Recipes' betacf), the quantile by bisection.
function logGamma(x: number): number {
  const c = [76.18009172947146, -86.50532032941677, 24.01409824083091, -1.231739572450155, 0.1208650973866179e-2, -0.5395239384953e-5];
  let y = x;
  const tmp = x + 5.5 - (x + 0.5) * Math.log(x + 5.5);
  let ser = 1.000000000190015;
  for (const k of c) ser += k / ++y;
  return -tmp + Math.log((2.5066282746310005 * ser) / x);
}
function betacf(a: number, b: number, x: number): number {
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  d = 1 / (Math.abs(d) < 1e-300 ? 1e-300 : d);
  let h = d;
  for (let m = 1; m <= 300; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    d = 1 / (Math.abs(d) < 1e-300 ? 1e-300 : d);
    c = 1 + aa / c;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    d = 1 / (Math.abs(d) < 1e-300 ? 1e-300 : d);
    c = 1 + aa / c;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < 3e-14) break;
  }
  return h;
}
/** P(T > t) for Student's t with nu degrees of freedom, t >= 0. */
export function studentTail(t: number, nu: number): number {
  const x = nu / (nu + t * t);
  const a = nu / 2;
  const bt = Math.exp(logGamma(a + 0.5) - logGamma(a) - logGamma(0.5) + a * Math.log(x) + 0.5 * Math.log(1 - x));
  const ib = x < (a + 1) / (a + 1.5) ? (bt * betacf(a, 0.5, x)) / a : 1 - (bt * betacf(0.5, a, 1 - x)) / 0.5;
  return ib / 2;
}
/** P(Z > z) for a standard normal (Abramowitz-Stegun 7.1.26 is too coarse in the tail: erfc by its continued fraction). */
export function normalTail(z: number): number {
  return studentTail(z, 1e7);
}
const quantileCache = new Map<string, number>();
/** The t quantile with the same upper tail as `z` normal sigmas. */
export function tQuantileAtZ(z: number, nu: number): number {
  const key = `${z}|${Math.round(nu * 10)}`;
  const cached = quantileCache.get(key);
  if (cached !== undefined) return cached;
  const p = normalTail(z);
  let lo = z;
  let hi = z;
  while (studentTail(hi, nu) > p) hi *= 2;
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (studentTail(mid, nu) > p) lo = mid;
    else hi = mid;
  }
  const q = (lo + hi) / 2;
  quantileCache.set(key, q);
  return q;
}

/**
 * Fits the baseline of the bucket(s) after `history` (buckets before the judged one, oldest first, absent ones of a
 * cost or volume series given as 0). `priorScale`: the peers' noise on the log scale (undefined: no prior).
 * Undefined when the history is too short to judge.
 */
export function fitBaseline(
  measure: BaselineMeasure,
  grain: BaselineGrain,
  history: readonly HistoryPoint[],
  priorScale: number | undefined,
  options: BaselineOptions = DEFAULT_BASELINE_OPTIONS,
): Baseline | undefined {
  if (history.length === 0) return undefined;
  const zBand = bandZ(grain, options);
  const endMs = history[history.length - 1].startMs;
  const lookbackDays = grain === 'hour' ? Math.min(options.lookbackDays, options.hourlyLookbackDays) : options.lookbackDays;
  const window = history.filter((p) => p.startMs > endMs - lookbackDays * DAY_MS);
  const zeros = window.filter((p) => p.value <= 0).length;
  const intermittent = measure !== 'p95_latency' && zeros >= options.intermittentShare * window.length && zeros > 0;
  let pts = intermittent ? window.filter((p) => p.value > 0) : window;
  const minPoints = options.minHistory[grain];
  if (pts.length < (priorScale === undefined ? 2 * minPoints : minPoints)) return undefined;
  const typical = medianOf(pts.map((p) => p.value));
  const offset = measure === 'p95_latency' ? 0 : Math.max(options.absoluteFloor[measure], intermittent ? 0 : 0.05 * typical);
  const tr = (v: number) => Math.log(Math.max(v, 0) + offset + (offset === 0 ? 1e-9 : 0));
  let y = pts.map((p) => tr(p.value));

  // 2. seasonality
  let daily: number[] | undefined;
  let weekly: number[] | undefined;
  if (grain === 'hour' && !intermittent) {
    daily = seasonalProfile(y, pts.map((p) => hourOf(p.startMs)), 24, 24);
    if (daily) y = y.map((v, i) => v - daily![hourOf(pts[i].startMs)]);
  }
  if (!intermittent) {
    if (grain === 'day') weekly = seasonalProfile(y, pts.map((p) => weekdayOf(p.startMs)), 7, 7);
    else {
      // weekday effect of an hourly series: on its daily medians
      const days = groupByDay(pts, y);
      const prof = seasonalProfile(days.y, days.t.map((d) => weekdayOf(d * DAY_MS)), 7, 7);
      if (prof) weekly = prof;
    }
    if (weekly) y = y.map((v, i) => v - weekly![weekdayOf(pts[i].startMs)]);
  }
  const seasonal = (ms: number) => (daily ? daily[hourOf(ms)] : 0) + (weekly ? weekly[weekdayOf(ms)] : 0);

  // 3. level shift: on day-level values
  let shiftAtMs: number | undefined;
  {
    const days = grain === 'day' ? { t: pts.map((p) => dayOf(p.startMs)), y } : groupByDay(pts, y);
    const k = options.shiftConfirmDays;
    if (days.y.length >= k + minPointsDays(grain, minPoints)) {
      const before = days.y.slice(0, days.y.length - k);
      const m = medianOf(before);
      const s = Math.max(madScale(before), options.relativeFloor, priorScale ?? 0);
      const tail = days.y.slice(-k);
      const side = tail.every((v) => v > m + 3 * s) ? 1 : tail.every((v) => v < m - 3 * s) ? -1 : 0;
      if (side !== 0) {
        let first = days.y.length - k;
        while (first > 0 && side * (days.y[first - 1] - m) > 3 * s) first--;
        const firstDay = days.t[first];
        const keep = pts.map((p) => dayOf(p.startMs) >= firstDay);
        shiftAtMs = pts[keep.indexOf(true)].startMs;
        pts = pts.filter((_, i) => keep[i]);
        y = y.filter((_, i) => keep[i]);
      }
    }
  }
  const n = y.length;
  const tDays = pts.map((p) => (p.startMs - endMs) / DAY_MS);

  // 4. trend
  let slope = 0;
  const spanDays = tDays.length ? tDays[n - 1] - tDays[0] : 0;
  const flatLevel = medianOf(y);
  const flatScale = madScale(y);
  let level = flatLevel;
  let scale = flatScale;
  if (spanDays >= 21) {
    const days = grain === 'day' ? { t: tDays, y } : groupByDayT(tDays, y);
    const b = theilSen(days.t, days.y);
    const a = medianOf(y.map((v, i) => v - b * tDays[i]));
    const s = madScale(y.map((v, i) => v - a - b * tDays[i]));
    if (s < 0.9 * flatScale) {
      slope = b;
      level = a;
      scale = s;
    }
  }
  const residuals = y.map((v, i) => v - level - slope * tDays[i]);
  // The MAD alone is a noisy estimate (a third of the standard deviation's efficiency: a band on 50 points is
  // often 20% too narrow); the standard deviation of the residuals within 3 MAD spreads is nearly as efficient and
  // as deaf to spikes. 0.98658: the standard deviation of a normal truncated at +-3 sigmas.
  {
    const kept = residuals.filter((r) => Math.abs(r) <= 3 * scale);
    const dof = kept.length - (slope ? 2 : 1);
    if (scale > 0 && dof >= 2) scale = Math.sqrt(kept.reduce((a, r) => a + r * r, 0) / dof) / 0.98658;
  }

  // 5. spread with prior and floors
  const w = priorScale === undefined ? 0 : options.priorWeight;
  let pooled = w ? Math.sqrt((n * scale * scale + w * priorScale! * priorScale!) / (n + w)) : scale;
  pooled = Math.max(pooled, options.relativeFloor);
  const params = 1 + (slope ? 1 : 0) + (shiftAtMs !== undefined ? 1 : 0) + (weekly ? 6 : 0) + (daily ? 23 : 0);
  const nu = Math.max(1, n + w - params);
  const q = tQuantileAtZ(zBand, nu) / zBand;
  const tMean = tDays.reduce((s, t) => s + t, 0) / Math.max(1, n);
  const sxx = tDays.reduce((s, t) => s + (t - tMean) ** 2, 0);

  const predictLog = (ms: number) => level + slope * ((ms - endMs) / DAY_MS) + seasonal(ms);
  const halfWidthUnit = (ms: number) => {
    const dt = (ms - endMs) / DAY_MS;
    const trendTerm = slope && sxx > 0 ? (dt - tMean) ** 2 / sxx : 0;
    let s = pooled;
    if (measure === 'volume') {
      // counting noise: sd of log(x + offset) for a Poisson count of mean lambda
      const lambda = Math.max(0, Math.exp(predictLog(ms)) - offset);
      s = Math.max(s, Math.sqrt(lambda) / (lambda + offset));
    }
    return s * Math.sqrt(1 + 1 / n + trendTerm) * q;
  };

  // 7. ordinary spikes: excursions older than a week
  const recentMs = endMs - 7 * DAY_MS;
  const older = residuals.filter((_, i) => pts[i].startMs <= recentMs);
  const ups = older.filter((r) => r > HEAVY_SPREADS * pooled);
  const downs = older.filter((r) => r < -HEAVY_SPREADS * pooled);
  const heavy = (k: number) => k >= 2 && k >= HEAVY_SHARE * older.length;
  const tailUp = heavy(ups.length) ? Math.max(...ups) + 4 * pooled : 0;
  const tailDown = heavy(downs.length) ? Math.min(...downs) - 4 * pooled : 0;

  const edges = (ms: number) => {
    const u = halfWidthUnit(ms);
    return { up: Math.max(zBand * u, tailUp), down: Math.min(-zBand * u, tailDown), u };
  };
  const fromLog = (v: number) => Math.max(0, Math.exp(v) - offset);
  return {
    expected: (ms) => fromLog(predictLog(ms)),
    band: (ms) => {
      const e = edges(ms);
      const p = predictLog(ms);
      return { low: fromLog(p + e.down), high: fromLog(p + e.up) };
    },
    score: (ms, value) => {
      if (intermittent && value <= 0) return 0;
      const r = tr(value) - predictLog(ms);
      const e = edges(ms);
      return r >= 0 ? (r / e.up) * zBand : (r / -e.down) * zBand;
    },
    info: { points: n, offset, scale: pooled, slopePerDay: slope, weekly: weekly !== undefined, daily: daily !== undefined, intermittent, shiftAtMs, tailUp: tailUp > 0, tailDown: tailDown < 0 },
  };
}

/** The band's z of a grain (see BaselineOptions). */
export function bandZ(grain: BaselineGrain, options: BaselineOptions = DEFAULT_BASELINE_OPTIONS): number {
  return grain === 'hour' ? options.hourlyZ : options.z;
}

function minPointsDays(grain: BaselineGrain, minPoints: number): number {
  return grain === 'day' ? minPoints : Math.ceil(minPoints / 24);
}

function groupByDay(pts: readonly HistoryPoint[], y: readonly number[]): { t: number[]; y: number[] } {
  const byDay = new Map<number, number[]>();
  pts.forEach((p, i) => {
    const d = dayOf(p.startMs);
    (byDay.get(d) ?? byDay.set(d, []).get(d)!).push(y[i]);
  });
  const t = [...byDay.keys()].sort((a, b) => a - b);
  return { t, y: t.map((d) => medianOf(byDay.get(d)!)) };
}

function groupByDayT(tDays: readonly number[], y: readonly number[]): { t: number[]; y: number[] } {
  const byDay = new Map<number, number[]>();
  tDays.forEach((t, i) => {
    const d = Math.floor(t);
    (byDay.get(d) ?? byDay.set(d, []).get(d)!).push(y[i]);
  });
  const t = [...byDay.keys()].sort((a, b) => a - b);
  return { t: t.map((d) => d + 0.5), y: t.map((d) => medianOf(byDay.get(d)!)) };
}

/**
 * The noise of a series on the log scale, for its peers' prior: 1.4826 x MAD of its week-over-week differences / sqrt 2
 * (a week apart: weekly seasonality, a slow trend and a level shift barely enter it). Undefined under 3 weeks.
 */
export function seriesNoise(measure: BaselineMeasure, grain: BaselineGrain, points: readonly HistoryPoint[], options: BaselineOptions = DEFAULT_BASELINE_OPTIONS): number | undefined {
  const positive = points.filter((p) => p.value > 0);
  if (positive.length < (grain === 'day' ? 21 : 21 * 24)) return undefined;
  const typical = medianOf(positive.map((p) => p.value));
  const offset = measure === 'p95_latency' ? 0 : Math.max(options.absoluteFloor[measure], 0.05 * typical);
  const byStart = new Map(positive.map((p) => [p.startMs, Math.log(p.value + offset)]));
  const diffs: number[] = [];
  for (const p of positive) {
    const prev = byStart.get(p.startMs - 7 * DAY_MS) ?? byStart.get(p.startMs - 7 * DAY_MS - HOUR_MS) ?? byStart.get(p.startMs - 7 * DAY_MS + HOUR_MS);
    if (prev !== undefined) diffs.push(Math.log(p.value + offset) - prev);
  }
  if (diffs.length < (grain === 'day' ? 14 : 14 * 24)) return undefined;
  return madScale(diffs) / Math.SQRT2;
}
