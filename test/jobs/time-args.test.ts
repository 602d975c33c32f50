import { describe, expect, it } from 'vitest';
import { parseLocalDate, parseTimeArg, timeRange } from '../../src/collectors/time-args.js';

// Expected instants derived by hand from the zones' rules (offsets in the comments).
const at = (value: string, zone: string) => new Date(parseTimeArg(value, zone, '--from')).toISOString();

describe('parseTimeArg', () => {
  it('reads a date as the start of that day in the zone', () => {
    expect(at('2026-11-21', 'UTC')).toBe('2026-11-21T00:00:00.000Z');
    expect(at('2026-11-21', 'Europe/Berlin')).toBe('2026-11-20T23:00:00.000Z'); // CET, +01:00
    expect(at('2026-07-01', 'Asia/Kolkata')).toBe('2026-06-30T18:30:00.000Z'); // +05:30, no DST
  });

  it('the days around a DST change start at their own offsets', () => {
    // New York springs forward on 2026-03-08 at 02:00: that day starts at EST (-05), the next at EDT (-04).
    expect(at('2026-03-08', 'America/New_York')).toBe('2026-03-08T05:00:00.000Z');
    expect(at('2026-03-09', 'America/New_York')).toBe('2026-03-09T04:00:00.000Z');
    // London: GMT until 2026-03-29 01:00 UTC, then BST (+01).
    expect(at('2026-03-29', 'Europe/London')).toBe('2026-03-29T00:00:00.000Z');
    expect(at('2026-03-30', 'Europe/London')).toBe('2026-03-29T23:00:00.000Z');
  });

  it('a day whose midnight is skipped starts when the clocks resume', () => {
    // Santiago moves from -04 to -03 at 00:00 on 2026-09-06: the day begins at 01:00 -03.
    expect(at('2026-09-06', 'America/Santiago')).toBe('2026-09-06T04:00:00.000Z');
  });

  it('a day whose midnight happens twice starts at the first one', () => {
    // Havana sets 01:00 -04 back to 00:00 -05 on 2026-11-01: midnight is 04:00Z and again 05:00Z.
    expect(at('2026-11-01', 'America/Havana')).toBe('2026-11-01T04:00:00.000Z');
    expect(parseLocalDate('2026-11-01', 'America/Havana', '--from').toMillis()).toBe(Date.parse('2026-11-01T04:00:00Z'));
  });

  it('reads a datetime without a zone as a wall-clock time in the zone', () => {
    expect(at('2026-11-03T12:00', 'UTC')).toBe('2026-11-03T12:00:00.000Z');
    expect(at('2026-11-03T12:00:00', 'Europe/Berlin')).toBe('2026-11-03T11:00:00.000Z');
    // Skipped by the spring change (02:00 EST -> 03:00 EDT): moves forward by the hour, to 03:30 EDT.
    expect(at('2026-03-08T02:30', 'America/New_York')).toBe('2026-03-08T07:30:00.000Z');
    // Repeated by the autumn change (02:00 EDT -> 01:00 EST): the first 01:30 is EDT (-04), whatever today's offset.
    expect(at('2026-11-01T01:30', 'America/New_York')).toBe('2026-11-01T05:30:00.000Z');
  });

  it('a datetime that names its zone or offset is that instant in any zone', () => {
    expect(at('2026-11-03T12:00:00Z', 'America/New_York')).toBe('2026-11-03T12:00:00.000Z');
    expect(at('2026-11-03T12:00:00+05:30', 'America/New_York')).toBe('2026-11-03T06:30:00.000Z');
    // The second 01:30 of New York's autumn change, named by its instant: not moved to the first.
    expect(at('2026-11-01T06:30:00Z', 'America/New_York')).toBe('2026-11-01T06:30:00.000Z');
    expect(at('2026-11-01T01:30:00-05:00', 'America/New_York')).toBe('2026-11-01T06:30:00.000Z');
  });

  it('refuses what is not a date or an ISO 8601 datetime, naming the option', () => {
    for (const bad of ['11/03/2026', '2026-02-30', '2026-W01', '2026-11-03T25:00', '', 'yesterday']) {
      expect(() => parseTimeArg(bad, 'UTC', '--to')).toThrow(`--to must be a date YYYY-MM-DD or an ISO 8601 datetime, got ${JSON.stringify(bad)}`);
    }
  });
});

describe('parseLocalDate', () => {
  it('takes only a date', () => {
    expect(parseLocalDate('2026-02-28', 'Asia/Tokyo', '--from').toISO()).toBe('2026-02-28T00:00:00.000+09:00');
    expect(() => parseLocalDate('2026-02-28T10:00', 'UTC', '--from')).toThrow('--from must be a date YYYY-MM-DD, got "2026-02-28T10:00"');
  });
});

describe('timeRange', () => {
  it('keeps the text as typed and reads it in each zone asked', () => {
    const range = timeRange('2026-11-01', '2026-11-02');
    expect([range.from, range.to]).toEqual(['2026-11-01', '2026-11-02']);
    expect(range.instants('UTC')).toEqual({ fromMs: Date.parse('2026-11-01T00:00:00Z'), toMs: Date.parse('2026-11-02T00:00:00Z') });
    // New York's 2026-11-01 is 25 hours long (EDT -04 at its start, EST -05 at the next midnight).
    expect(range.instants('America/New_York')).toEqual({
      fromMs: Date.parse('2026-11-01T04:00:00Z'),
      toMs: Date.parse('2026-11-02T05:00:00Z'),
    });
  });
});
