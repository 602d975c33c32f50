// Time windows and buckets in a caller's time zone. luxon does all calendar arithmetic, so DST days come out
// 23 or 25 hours long and zones like Asia/Kolkata (+05:30) start their buckets on the half hour.
import { DateTime, IANAZone } from 'luxon';

export type Timeframe = 'minute' | 'hour' | 'day' | 'week' | 'month';
export const TIMEFRAMES: readonly Timeframe[] = ['minute', 'hour', 'day', 'week', 'month'];

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

// luxon's zone check and ISO parsing are slow next to the rest of a page; clients repeat the same values.
const zoneValidity = new Map<string, boolean>();
export function isValidZone(tz: string): boolean {
  let ok = zoneValidity.get(tz);
  if (ok === undefined) {
    ok = IANAZone.isValidZone(tz);
    if (zoneValidity.size > 1000) zoneValidity.clear();
    zoneValidity.set(tz, ok);
  }
  return ok;
}
const parsedTimes = new Map<string, number | null>();

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/;

/**
 * `YYYY-MM-DD` is local midnight in `tz`; an ISO datetime keeps its own offset (or is read in `tz` when it has
 * none). Returns epoch ms, or null when the text is not a valid date.
 */
export function parseTimeParam(value: string, tz: string): number | null {
  const key = `${tz}|${value}`;
  const cached = parsedTimes.get(key);
  if (cached !== undefined) return cached;
  let ms: number | null = null;
  if (DATE_ONLY.test(value) || DATE_TIME.test(value)) {
    const dt = DateTime.fromISO(value, { zone: tz });
    ms = dt.isValid ? dt.toMillis() : null;
  }
  if (parsedTimes.size > 10_000) parsedTimes.clear();
  parsedTimes.set(key, ms);
  return ms;
}

/** ISO 8601 with the zone's offset, `+00:00` rather than `Z` so every bucket label has the same shape. */
export function isoInZone(ms: number, tz: string): string {
  const s = DateTime.fromMillis(ms, { zone: tz }).toISO({ suppressMilliseconds: true }) ?? '';
  return s.endsWith('Z') ? s.slice(0, -1) + '+00:00' : s;
}

export function dayInZone(ms: number, tz: string): string {
  return DateTime.fromMillis(ms, { zone: tz }).toISODate() ?? '';
}

export function isoUtcMs(ms: number): string {
  return new Date(ms).toISOString();
}

export function floorToBucket(ms: number, timeframe: Timeframe, tz: string): number {
  return DateTime.fromMillis(ms, { zone: tz }).startOf(timeframe).toMillis();
}

export function nextBucket(startMs: number, timeframe: Timeframe, tz: string): number {
  // minute and hour are absolute durations (luxon adds them in UTC), so a DST change cannot skip a bucket.
  if (timeframe === 'minute') return startMs + 60_000;
  if (timeframe === 'hour') return DateTime.fromMillis(startMs, { zone: tz }).plus({ hours: 1 }).startOf('hour').toMillis();
  return DateTime.fromMillis(startMs, { zone: tz }).plus({ [`${timeframe}s`]: 1 }).toMillis();
}

/** When the caller omits the timeframe the platform picks one from the range length. */
export function defaultTimeframe(startMs: number, endMs: number): Timeframe {
  const span = endMs - startMs;
  if (span <= 2 * HOUR_MS) return 'minute';
  if (span <= 2 * DAY_MS) return 'hour';
  if (span <= 90 * DAY_MS) return 'day';
  if (span <= 400 * DAY_MS) return 'week';
  return 'month';
}

export interface Buckets {
  /** Effective bucket boundaries: bucket i covers [edges[i], edges[i+1]); length = labels.length + 1. */
  edges: number[];
  /** The local start of each bucket, ISO 8601 with the zone offset (also for a clipped first bucket). */
  labels: string[];
  /** Nominal (unclipped) starts of each bucket. */
  starts: number[];
}

export const MAX_BUCKETS = 10_000;

/**
 * Buckets covering [startMs, endMs), clipped at `capMs` (the virtual "now": nothing exists after it).
 * With `bound` the range is widened to whole buckets (the platform's bound_to_timeframe=true); without it the
 * first and last buckets are partial. Returns null when more than MAX_BUCKETS would be needed.
 */
export function bucketize(startMs: number, endMs: number, timeframe: Timeframe, tz: string, bound: boolean, capMs: number): Buckets | null {
  const edges: number[] = [];
  const labels: string[] = [];
  const starts: number[] = [];
  const first = floorToBucket(startMs, timeframe, tz);
  let rangeStart = bound ? first : startMs;
  let rangeEnd = endMs;
  if (bound) {
    const flo = floorToBucket(endMs - 1, timeframe, tz);
    rangeEnd = nextBucket(flo, timeframe, tz);
  }
  rangeEnd = Math.min(rangeEnd, capMs);
  rangeStart = Math.min(rangeStart, rangeEnd);
  let b = first;
  while (b < rangeEnd) {
    const next = nextBucket(b, timeframe, tz);
    if (next > rangeStart) {
      if (labels.length >= MAX_BUCKETS) return null;
      edges.push(Math.max(b, rangeStart));
      labels.push(isoInZone(b, tz));
      starts.push(b);
    }
    b = next;
  }
  edges.push(Math.max(rangeStart, Math.min(b, rangeEnd)));
  return { edges, labels, starts };
}

/** Index of the bucket holding `ms`, or -1 when outside. Edges are sorted ascending. */
export function bucketIndex(edges: number[], ms: number): number {
  if (ms < edges[0] || ms >= edges[edges.length - 1]) return -1;
  let lo = 0;
  let hi = edges.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if (edges[mid] <= ms) lo = mid;
    else hi = mid;
  }
  return lo;
}
