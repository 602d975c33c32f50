// Issue 43.2: one ISO 8601 date-time reader (isoToDateTime64 / parseIsoTimestamp in src/values.ts) for the drain's
// log lines, Faro items and the platform's fields. There were two, written by hand: values.ts (the platform's
// fields, through Date.parse past its fast path) and collectors/log-line.ts (the drain, Faro). On the 18 inputs
// below they disagreed on 8 (marked): values.ts refused a comma fraction, an hour-only offset and a space before
// `Z`, and took a date alone, years outside DateTime64's range (1900-2299), the expanded year and an RFC 2822 date.
// The expected column is worked out by hand from the rules in values.ts (ISO 8601's extended date-time forms,
// UTC when no zone, DateTime64(3)'s range, truncated to the millisecond), not from either implementation.
import { describe, expect, it } from 'vitest';
import { mapLine, type BatchContext } from '../../src/collectors/log-line.js';
import { parseFaroTimestamp } from '../../src/ingest/faro/map-items.js';
import { isoToDateTime64, parseIsoTimestamp } from '../../src/values.js';

const TABLE: Array<[input: string, expected: string | null]> = [
  ['2026-11-01T10:00:00Z', '2026-11-01 10:00:00.000'],
  ['2026-11-01T10:00:00.5Z', '2026-11-01 10:00:00.500'],
  ['2026-11-01T10:00:00.123456Z', '2026-11-01 10:00:00.123'],
  ['2026-11-01T10:00:00,5Z', '2026-11-01 10:00:00.500'], // disagreed
  ['2026-11-01 10:00:00Z', '2026-11-01 10:00:00.000'],
  ['2026-11-01t10:00z', '2026-11-01 10:00:00.000'],
  ['2026-11-01T10:00:00', '2026-11-01 10:00:00.000'],
  ['2026-11-01T10:00:00+0130', '2026-11-01 08:30:00.000'],
  ['2026-11-01T10:00:00+01', '2026-11-01 09:00:00.000'], // disagreed
  ['2026-11-01T10:00:00 Z', '2026-11-01 10:00:00.000'], // disagreed
  ['2026-11-01', null], // disagreed
  ['2026-02-29T10:00:00Z', null],
  ['2026-11-01T24:00:00Z', null],
  ['1899-12-31T23:59:59Z', null], // disagreed
  ['2300-01-01T00:00:00Z', null], // disagreed
  ['+002026-11-01T10:00:00Z', null], // disagreed
  ['Sun, 01 Nov 2026 10:00:00 GMT', null], // disagreed
  ['2026-11-01T10:00:00+24:00', null],
];

const batch: BatchContext = { receivedAt: '2026-11-01 10:00:00.000', batchId: '00000000-0000-4000-8000-000000000000' };

describe('the one ISO 8601 date-time reader', () => {
  it('has 18 rows, 8 of which the two old readers answered differently', () => {
    expect(TABLE).toHaveLength(18);
  });

  it.each(TABLE)('%s -> %s', (input, expected) => {
    expect(isoToDateTime64(input)).toBe(expected);
    expect(parseIsoTimestamp(input)).toBe(expected === null ? undefined : Date.parse(`${expected.replace(' ', 'T')}Z`));
    // The drain takes a line's timestamp through the same reader.
    const outcome = mapLine(JSON.stringify({ timestamp: input, message: 'm', level: 'info' }), 1, batch);
    expect(outcome.ok).toBe(expected !== null);
  });

  it('Faro takes the same instants, when the text names its zone (as HH:MM, HHMM or Z)', () => {
    expect(parseFaroTimestamp('2026-11-01T10:00:00,5+01:00')).toBeUndefined();
    expect(parseFaroTimestamp('2026-11-01T10:00:00.5+01:00')).toBe(Date.UTC(2026, 10, 1, 9, 0, 0, 500));
    expect(parseFaroTimestamp('2026-11-01T10:00:00')).toBeUndefined();
  });
});
