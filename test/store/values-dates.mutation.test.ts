// isoToDateTime64 at the edges of the calendar and the clock (src/values.ts namesARealDay and the ...Z fast
// path): every expected value is a hand-worked DateTime64(3) UTC text, or null for a day or time that does not exist.
import { describe, expect, it } from 'vitest';
import { isoToDateTime64 } from '../../src/values.js';

describe('isoToDateTime64: days that exist', () => {
  it('the first and last day of the year, of each month length, and 29 February only in a leap year', () => {
    expect(isoToDateTime64('2026-01-01T00:00:00Z')).toBe('2026-01-01 00:00:00.000');
    expect(isoToDateTime64('2026-12-31T23:59:59.999Z')).toBe('2026-12-31 23:59:59.999');
    expect(isoToDateTime64('2026-04-30T12:00:00Z')).toBe('2026-04-30 12:00:00.000');
    expect(isoToDateTime64('2026-01-31T12:00:00Z')).toBe('2026-01-31 12:00:00.000');
    expect(isoToDateTime64('2026-02-28T12:00:00Z')).toBe('2026-02-28 12:00:00.000');
    expect(isoToDateTime64('2024-02-29T12:00:00Z')).toBe('2024-02-29 12:00:00.000');
    expect(isoToDateTime64('2026-11-29T08:00:00Z')).toBe('2026-11-29 08:00:00.000');
  });

  it('days that do not exist are refused, not rolled over to another day', () => {
    for (const day of ['2026-00-10', '2026-13-01', '2026-01-00', '2026-02-29', '2026-02-30', '2026-04-31', '2100-02-29', '2026-01-32']) {
      expect(isoToDateTime64(`${day}T00:00:00Z`), day).toBeNull();
    }
  });

  // Issue 43.2: one ISO 8601 reader for the drain and the platform's fields; the expanded year is not one of its forms.
  it('the expanded year form (a sign and six digits) is refused, real day or not', () => {
    expect(isoToDateTime64('+002026-02-28T12:00:00Z')).toBeNull();
    expect(isoToDateTime64('+002024-02-29T12:00:00Z')).toBeNull();
    for (const day of ['+002026-02-30', '+002026-02-29', '+002026-04-31', '+002026-13-01', '+002026-01-00']) {
      expect(isoToDateTime64(`${day}T00:00:00Z`), day).toBeNull();
    }
    expect(isoToDateTime64('+002026-11-26T24:00:00Z')).toBeNull();
  });

  it('times of day that do not exist are refused; the last second of a day is kept', () => {
    expect(isoToDateTime64('2026-11-26T23:59:59Z')).toBe('2026-11-26 23:59:59.000');
    expect(isoToDateTime64('2026-11-26T24:00:00Z')).toBeNull();
    expect(isoToDateTime64('2026-11-26T10:60:00Z')).toBeNull();
    expect(isoToDateTime64('2026-11-26T10:00:60Z')).toBeNull();
    // Minutes only (no seconds): read as UTC.
    expect(isoToDateTime64('2026-11-26T23:59')).toBe('2026-11-26 23:59:00.000');
    expect(isoToDateTime64('2026-11-26T24:00')).toBeNull();
  });
});

describe('isoToDateTime64: the forms', () => {
  it('one to three decimals padded to milliseconds; more through Date (cut to milliseconds)', () => {
    expect(isoToDateTime64('2026-11-26T10:00:00.5Z')).toBe('2026-11-26 10:00:00.500');
    expect(isoToDateTime64('2026-11-26T10:00:00.25Z')).toBe('2026-11-26 10:00:00.250');
    expect(isoToDateTime64('2026-11-26T10:00:00.125Z')).toBe('2026-11-26 10:00:00.125');
    expect(isoToDateTime64('2026-11-26T10:00:00.1259Z')).toBe('2026-11-26 10:00:00.125');
  });

  it('an offset is turned into UTC; a date alone (not a date-time) and text around a timestamp are refused', () => {
    expect(isoToDateTime64('2026-11-26T01:30:00+05:30')).toBe('2026-11-25 20:00:00.000');
    expect(isoToDateTime64('2026-03-01T00:30:00+01:00')).toBe('2026-02-28 23:30:00.000');
    expect(isoToDateTime64('2026-11-26')).toBeNull();
    expect(isoToDateTime64('x2026-11-26T10:00:00Z')).toBeNull();
    expect(isoToDateTime64('2026-11-26T10:00:00Zx')).toBeNull();
    expect(isoToDateTime64('')).toBeNull();
    expect(isoToDateTime64(null)).toBeNull();
    expect(isoToDateTime64(undefined)).toBeNull();
  });
});
