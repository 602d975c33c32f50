import { describe, expect, it } from 'vitest';
import { decimalToScaled, isoToDateTime64, nextVersionMs, scaledToDecimal, toDecimalOrNull, toDecimalScale } from '../../src/values.js';

describe('nextVersionMs', () => {
  it('never goes below the clock and strictly increases, even many times within one millisecond', () => {
    // wall-clock: nextVersionMs is at least the machine's clock, which is what this test checks
    const before = Date.now();
    const versions = Array.from({ length: 1000 }, () => nextVersionMs());
    expect(versions[0]).toBeGreaterThanOrEqual(before);
    for (let i = 1; i < versions.length; i++) expect(versions[i]).toBeGreaterThan(versions[i - 1]);
    expect(new Set(versions).size).toBe(versions.length);
  });
});

describe('isoToDateTime64', () => {
  it('reads a timestamp without a zone as UTC whatever the process time zone, and no string as null', () => {
    const tz = process.env.TZ;
    process.env.TZ = 'Asia/Kolkata';
    try {
      expect(new Date('2026-11-21T10:00:00').getTimezoneOffset()).toBe(-330); // the zone is in effect
      expect(isoToDateTime64('2026-11-21T10:00:00')).toBe('2026-11-21 10:00:00.000');
      expect(isoToDateTime64('2026-11-21T10:00:00.5')).toBe('2026-11-21 10:00:00.500');
      expect(isoToDateTime64('2026-11-21T15:30:00+05:30')).toBe('2026-11-21 10:00:00.000');
    } finally {
      if (tz === undefined) delete process.env.TZ;
      else process.env.TZ = tz;
    }
    expect(isoToDateTime64(null)).toBeNull();
    expect(isoToDateTime64(undefined)).toBeNull();
  });
});

describe('toDecimalScale', () => {
  it('rounds half away from zero on the decimal digits, exactly', () => {
    expect(toDecimalScale('0.0000000000005', 12)).toBe('0.000000000001');
    expect(toDecimalScale('0.0000000000004999', 12)).toBe('0');
    expect(toDecimalScale('1.23449999', 4)).toBe('1.2345');
    expect(toDecimalScale('1.23444999', 4)).toBe('1.2344');
    expect(toDecimalScale('9.99995', 4)).toBe('10');
    expect(toDecimalScale('0.5', 0)).toBe('1');
    expect(toDecimalScale('123456789012345678901234.1234567890125', 12)).toBe('123456789012345678901234.123456789013');
  });

  it('rounds negatives symmetrically, and never to "-0"', () => {
    expect(toDecimalScale('-1.23445', 4)).toBe('-1.2345');
    expect(toDecimalScale('-1.23444', 4)).toBe('-1.2344');
    expect(toDecimalScale(-0.5, 0)).toBe('-1');
    expect(toDecimalScale('-0.0000000000004', 12)).toBe('0');
  });

  it('leaves integers and values within the scale as toDecimalString gives them', () => {
    expect(toDecimalScale(42, 9)).toBe('42');
    expect(toDecimalScale('-7', 2)).toBe('-7');
    expect(toDecimalScale('1.50', 2)).toBe('1.50');
    expect(toDecimalScale(0.000575, 12)).toBe('0.000575');
  });

  it('takes exponent forms, as JSON numbers and as text', () => {
    expect(toDecimalScale(1e-13, 12)).toBe('0');
    expect(toDecimalScale(5e-13, 12)).toBe('0.000000000001');
    expect(toDecimalScale('1.5E-10', 9)).toBe('0');
    expect(toDecimalScale('2.5e-9', 9)).toBe('0.000000003');
    expect(toDecimalScale(1e21, 9)).toBe('1000000000000000000000');
    expect(toDecimalScale(-1.23456789e-3, 5)).toBe('-0.00123');
  });

  it('refuses what is not a decimal number or not a scale', () => {
    expect(() => toDecimalScale('1,5', 2)).toThrow('not a decimal number');
    expect(() => toDecimalScale(Number.NaN, 2)).toThrow('not a finite number');
    expect(() => toDecimalScale('1.5', -1)).toThrow('scale');
  });

  it('toDecimalOrNull keeps null and undefined, and rounds the rest', () => {
    expect(toDecimalOrNull(null, 4)).toBeNull();
    expect(toDecimalOrNull(undefined, 4)).toBeNull();
    expect(toDecimalOrNull(12.34565, 4)).toBe('12.3457');
  });
});

describe('decimalToScaled and scaledToDecimal', () => {
  // Literals worked out by hand: the integer is the decimal with its point moved `scale` places right.
  it('reads a decimal exactly on a fixed scale, negatives and exponent forms included', () => {
    expect(decimalToScaled('12.5', 9)).toBe(12_500_000_000n);
    expect(decimalToScaled('-0.000000001', 9)).toBe(-1n);
    expect(decimalToScaled('7', 3)).toBe(7000n);
    expect(decimalToScaled('0.10', 1)).toBe(1n); // a trailing zero beyond the scale is no precision lost
    expect(decimalToScaled('1.5e-3', 6)).toBe(1500n);
    expect(decimalToScaled('123456789012345678.123456789012', 12)).toBe(123456789012345678123456789012n);
  });

  it('refuses a value with more significant decimals than the scale, or not a number', () => {
    expect(() => decimalToScaled('0.0001', 3)).toThrow('0.0001 has more than 3 decimals');
    expect(() => decimalToScaled('12,5', 2)).toThrow(/not a decimal number|12,5/);
    expect(() => decimalToScaled('', 2)).toThrow();
  });

  it('writes the shortest decimal back, and round-trips', () => {
    expect(scaledToDecimal(12_500_000_000n, 9)).toBe('12.5');
    expect(scaledToDecimal(-1n, 9)).toBe('-0.000000001');
    expect(scaledToDecimal(0n, 9)).toBe('0');
    expect(scaledToDecimal(7000n, 3)).toBe('7');
    for (const v of ['0.000000001', '-42.75', '1000000', '3.14159']) expect(scaledToDecimal(decimalToScaled(v, 12), 12)).toBe(v);
  });
});
