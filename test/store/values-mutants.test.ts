// Mutants of src/values.ts that survived the first Stryker run (issue 31.1) and are not equivalent, killed
// with literals worked out by hand: an exponent form moves the point by its exponent (1.25e1 = 12.5, 1e-1 = 0.1,
// 00.5e2 = 50), zeros that carry no value go, and a time without a zone is UTC whatever the machine's zone.
// The survivors left are equivalent (see the commit note): anchors and checks that validation before them makes
// redundant, and the fast path of isoToDateTime64 whose answer the Date path gives as well.
import { describe, expect, it } from 'vitest';
import { addDecimals, HAS_ZONE, ISO_DATE, isoToDateTime64, toDateTime64, toDecimalString } from '../../src/values.js';

describe('toDecimalString: exponent forms, by hand', () => {
  it.each([
    ['1.5e3', '1500'], // no sign on the exponent
    ['12e1', '120'], // more than one digit before the point
    ['1.25e1', '12.5'], // the point lands inside the digits
    ['1.5e1', '15'], // the point lands right after them
    ['1e-1', '0.1'], // the point lands right before them
    ['1e-7', '0.0000001'],
    ['0.5e1', '5'], // a leading zero goes
    ['00.5e2', '50'], // every leading zero goes
    ['1.50e1', '15'], // a trailing zero after the point goes, and the point with it
    ['1.500e1', '15'],
    ['-1.5e1', '-15'], // the sign stays
    ['-0e3', '0'], // but never on zero
  ])('%s is %s', (text, expected) => {
    expect(toDecimalString(text)).toBe(expected);
  });

  it('JSON numbers that JavaScript prints with an exponent', () => {
    expect(toDecimalString(1e-7)).toBe('0.0000001');
    expect(toDecimalString(-2.5e-8)).toBe('-0.000000025');
    expect(toDecimalString(1.5e21)).toBe('1500000000000000000000');
  });
});

describe('addDecimals', () => {
  it('adds exactly, negatives subtracting, on 12 places by default', () => {
    expect(addDecimals(['0.1', '0.2', '-0.05'])).toBe('0.25');
    expect(addDecimals(['0.000000000001', '0.000000000001'])).toBe('0.000000000002');
    expect(addDecimals(['1.5', '2.25'], 2)).toBe('3.75');
    expect(addDecimals([])).toBe('0');
  });
});

describe('toDateTime64', () => {
  it('says what is not a time', () => {
    expect(() => toDateTime64('not a time')).toThrow('not a valid time: "not a time"');
    expect(toDateTime64(Date.UTC(2026, 10, 21, 10, 0, 0, 5))).toBe('2026-11-21 10:00:00.005');
  });
});

describe('isoToDateTime64: a time without a zone is UTC, with or without seconds and fractions', () => {
  it.each([
    ['2026-11-21T10:00', '2026-11-21 10:00:00.000'],
    ['2026-11-21T10:00:07', '2026-11-21 10:00:07.000'],
    ['2026-11-21T10:00:07.25', '2026-11-21 10:00:07.250'],
    ['2026-11-21T10:00:07.1234', '2026-11-21 10:00:07.123'],
  ])('%s is %s in a process whose zone is Asia/Kolkata', (text, expected) => {
    const tz = process.env.TZ;
    process.env.TZ = 'Asia/Kolkata';
    try {
      expect(new Date('2026-11-21T10:00:00').getTimezoneOffset()).toBe(-330); // the zone is in effect
      expect(isoToDateTime64(text)).toBe(expected);
    } finally {
      if (tz === undefined) delete process.env.TZ;
      else process.env.TZ = tz;
    }
  });
});

describe('ISO_DATE and HAS_ZONE', () => {
  it('ISO_DATE is a whole YYYY-MM-DD', () => {
    expect(ISO_DATE.test('2026-11-21')).toBe(true);
    expect(ISO_DATE.test('x2026-11-21')).toBe(false);
    expect(ISO_DATE.test('2026-11-21T10:00')).toBe(false);
  });

  it('HAS_ZONE: Z, or an offset of hours, hours:minutes or hhmm', () => {
    for (const t of ['2026-11-21T10:00:00Z', '2026-11-21T10:00:00z', '2026-11-21T10:00:00+05:30', '2026-11-21T10:00:00+0530', '2026-11-21T10:00:00-05']) {
      expect(HAS_ZONE.test(t), t).toBe(true);
    }
    expect(HAS_ZONE.test('2026-11-21T10:00:00')).toBe(false);
  });
});

// The platform's `...Z` form takes a fast path (a regular expression, no Date); anything it does not match goes
// through Date.parse. Each text below is not an ISO 8601 time (a non-digit, a short field, text around it), so
// the answer is null: a fast path that matched it would hand ClickHouse a time that is not one.
describe('isoToDateTime64: the fast path takes only whole YYYY-MM-DDTHH:MM:SS[.fff]Z', () => {
  it.each([
    ['2026-11-21T10:00:07Z', '2026-11-21 10:00:07.000'],
    ['2026-11-21T10:00:07.5Z', '2026-11-21 10:00:07.500'],
    ['2026-11-21T10:00:07.25Z', '2026-11-21 10:00:07.250'],
    ['2026-11-21T10:00:07.125Z', '2026-11-21 10:00:07.125'],
  ])('%s is %s', (text, expected) => {
    expect(isoToDateTime64(text)).toBe(expected);
  });

  it.each([
    'x2026-11-21T10:00:07Z', // text before
    '2026-11-21T10:00:07Zx', // text after
    '6-11-21T10:00:07Z', // a year of one digit
    'abcd-11-21T10:00:07Z',
    '2026-1-21T10:00:07Z', // a month of one digit
    '2026-ab-21T10:00:07Z',
    '2026-11-2T10:00:07Z', // a day of one digit
    '2026-11-abT10:00:07Z',
    '2026-11-21T1:00:07Z', // an hour of one digit
    '2026-11-21Tab:00:07Z',
    '2026-11-21T10:0:07Z', // minutes of one digit
    '2026-11-21T10:ab:07Z',
    '2026-11-21T10:00:7Z', // seconds of one digit
    '2026-11-21T10:00:abZ',
    '2026-11-21T10:00:07.abcZ', // a fraction that is not digits
  ])('%s is not a time: null', (text) => {
    expect(isoToDateTime64(text)).toBeNull();
  });

  // The fast path reads each field from its fixed place as two character codes (no captures), so only the form
  // check keeps out a text whose characters there would read as a real day and time: '-O' reads as 1 (45 * 10 + 79
  // - 528), '--' as -33, and a field one digit short shifts the later ones onto digits and separators that add up
  // to valid numbers. Each is not a time, and Date.parse says so too.
  it.each([
    '5-99-02T13:04:48.58Z', // a year of one digit: 99 and 02 land where the month and the day are read
    '2026--O-21T10:00:07Z', // a month of two non-digits
    '2026-11--OT10:00:07Z', // a day of two non-digits
    '2026-11-21T1:00:01Z', // an hour of one digit: '1:' reads as 20
    '2026-11-21T--:00:07Z', // an hour of two non-digits
    '2026-11-21T10:3:31.93Z', // minutes of one digit
    '2026-11-21T10:--:07Z', // minutes of two non-digits
    '2026-11-21T10:00:1Z', // seconds of one digit: '1Z' reads as 52
    '2026-11-21T10:00:--Z', // seconds of two non-digits
  ])('%s has something else where the form has digits: null', (text) => {
    expect(isoToDateTime64(text)).toBeNull();
  });

  // An impossible calendar day is not a time: Date would roll 2026-02-30 over to 2 March, and digits copied as
  // they are would store a day that does not exist. Leap years by the Gregorian rule (2024 yes, 2100 no, 2000 yes).
  it.each([
    '2026-02-29T00:00:00Z',
    '2100-02-29T12:00:00Z',
    '2026-02-30T10:00:07Z',
    '2026-04-31T10:00:07.5Z',
    '2026-13-01T10:00:07Z',
    '2026-00-10T10:00:07Z',
    '2026-01-00T10:00:07Z',
    '2026-01-01T24:00:00Z',
    '2026-01-01T23:60:00Z',
    '2026-01-01T23:59:60Z',
    '2026-02-30T10:00:07+05:30', // the Date path: an offset
    '2026-04-31T10:00', // the Date path: no zone
  ])('%s names no real day or time: null', (text) => {
    expect(isoToDateTime64(text)).toBeNull();
  });

  it.each([
    ['2024-02-29T23:59:59Z', '2024-02-29 23:59:59.000'],
    ['2000-02-29T00:00:00Z', '2000-02-29 00:00:00.000'],
    ['2026-12-31T23:59:59.999Z', '2026-12-31 23:59:59.999'],
    ['2026-04-30T23:30:00+05:30', '2026-04-30 18:00:00.000'],
  ])('the last day of a month is a day: %s is %s', (text, expected) => {
    expect(isoToDateTime64(text)).toBe(expected);
  });

  it('null and undefined are null', () => {
    expect(isoToDateTime64(null)).toBeNull();
    expect(isoToDateTime64(undefined)).toBeNull();
  });
});
