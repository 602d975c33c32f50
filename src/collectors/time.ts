import { DateTime, type DurationLikeObject } from 'luxon';

/** Bucket sizes the platform's time series come in. */
export const TIMEFRAMES = ['minute', 'hour', 'day'] as const;
export type Timeframe = (typeof TIMEFRAMES)[number];

/** The start of the bucket holding `ms`. */
export function bucketStart(ms: number, timeframe: Timeframe, timezone: string): number {
  return DateTime.fromMillis(ms, { zone: timezone }).startOf(timeframe).toMillis();
}

/** Splits [startMs, endMs) into chunks of at most `chunk` that begin on bucket boundaries of `timezone`. */
export function bucketChunks(
  startMs: number,
  endMs: number,
  timeframe: Timeframe,
  timezone: string,
  chunk: DurationLikeObject,
): Array<{ startMs: number; endMs: number }> {
  const out: Array<{ startMs: number; endMs: number }> = [];
  let s = bucketStart(startMs, timeframe, timezone);
  while (s < endMs) {
    const next = Math.min(DateTime.fromMillis(s, { zone: timezone }).plus(chunk).startOf(timeframe).toMillis(), endMs);
    out.push({ startMs: s, endMs: next });
    s = next;
  }
  return out;
}
