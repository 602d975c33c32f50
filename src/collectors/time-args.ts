import { DateTime, IANAZone } from 'luxon';
import { HAS_ZONE, ISO_DATE as DATE } from '../values.js';

// The one reading of the times people type (`--from`, `--to`, `--timezone`). It lives with the runtime that
// checks options before anything is opened; collectors use it too, for the dates of the chunks they are given.
const DATE_OR_DATETIME = /^\d{4}-\d{2}-\d{2}(T.+)?$/;

export function isTimeZone(value: string): boolean {
  return IANAZone.isValidZone(value);
}

export function isDateArg(value: string): boolean {
  return DATE.test(value);
}

/**
 * A wall-clock time that happens twice (clocks set back) as its first occurrence. Luxon alone picks by the offset
 * in force today, so the same argument would mean another instant in summer than in winter.
 */
function firstOccurrence(dt: DateTime): DateTime {
  return dt.getPossibleOffsets().reduce((a, b) => (b.toMillis() < a.toMillis() ? b : a), dt);
}

/** A calendar date `YYYY-MM-DD`, as the first instant of that day in `timezone`. */
export function parseLocalDate(value: string, timezone: string, name: string): DateTime {
  const dt = DATE.test(value) ? DateTime.fromISO(value, { zone: timezone }) : DateTime.invalid('format');
  if (!dt.isValid) throw new Error(`${name} must be a date YYYY-MM-DD, got ${JSON.stringify(value)}`);
  return firstOccurrence(dt.startOf('day'));
}

/**
 * `--from`/`--to` as epoch ms: a date is the first instant of that day in `timezone`; an ISO 8601 datetime with
 * `Z` or an offset is that instant; one without is a wall-clock time in `timezone` (a time a DST change skips
 * moves forward by the gap; one it repeats is its first occurrence).
 */
export function parseTimeArg(value: string, timezone: string, name: string): number {
  const dt = DATE_OR_DATETIME.test(value) ? DateTime.fromISO(value, { zone: timezone }) : DateTime.invalid('format');
  if (!dt.isValid) throw new Error(`${name} must be a date YYYY-MM-DD or an ISO 8601 datetime, got ${JSON.stringify(value)}`);
  // A time that names its zone or offset is one instant already.
  return (DATE.test(value) || !HAS_ZONE.test(value) ? firstOccurrence(dt) : dt).toMillis();
}

/** A `--from/--to` pair, checked once; what the two mean in epoch ms depends on the zone a job collects. */
export interface TimeRange {
  /** As typed (they name a backfill's checkpoint, so running the same command again resumes it). */
  from: string;
  to: string;
  /** [from, to) in epoch ms, dates and zone-less datetimes read in `timezone`; --to is exclusive. */
  instants(timezone: string): { fromMs: number; toMs: number };
}

export function timeRange(from: string, to: string): TimeRange {
  return {
    from,
    to,
    instants: (timezone) => ({ fromMs: parseTimeArg(from, timezone, '--from'), toMs: parseTimeArg(to, timezone, '--to') }),
  };
}
