// Issue 31: src/collectors/time.ts (the bucket arithmetic the runners and analytics collectors chunk their windows
// with) had no test of its own. Every expected value is a literal worked out by hand from the zone's rules:
// Europe/Berlin moves from UTC+1 to UTC+2 at 01:00Z on 2026-03-29 (a 23-hour day) and back at 01:00Z on
// 2026-10-25 (a 25-hour day); Asia/Kolkata is UTC+5:30 all year.
import { describe, expect, it } from 'vitest';
import { bucketChunks, bucketStart, TIMEFRAMES } from '../../src/collectors/time.js';

const ms = (iso: string) => Date.parse(iso);
const iso = (chunks: Array<{ startMs: number; endMs: number }>) =>
  chunks.map((c) => [new Date(c.startMs).toISOString(), new Date(c.endMs).toISOString()]);

describe('bucketStart', () => {
  it('lists the platform timeframes, smallest first', () => {
    expect(TIMEFRAMES).toEqual(['minute', 'hour', 'day']);
  });

  it('rounds down to the minute, hour and day of the zone', () => {
    const t = ms('2026-03-29T01:30:45.678Z'); // 03:30:45.678 in Berlin (summer time began at 01:00Z)
    expect(new Date(bucketStart(t, 'minute', 'Europe/Berlin')).toISOString()).toBe('2026-03-29T01:30:00.000Z');
    expect(new Date(bucketStart(t, 'hour', 'Europe/Berlin')).toISOString()).toBe('2026-03-29T01:00:00.000Z');
    // Berlin's midnight of 03-29 was still winter time: 23:00Z the day before.
    expect(new Date(bucketStart(t, 'day', 'Europe/Berlin')).toISOString()).toBe('2026-03-28T23:00:00.000Z');
    expect(new Date(bucketStart(t, 'day', 'UTC')).toISOString()).toBe('2026-03-29T00:00:00.000Z');
    // Kolkata's hours begin on the half hour of UTC.
    expect(new Date(bucketStart(t, 'hour', 'Asia/Kolkata')).toISOString()).toBe('2026-03-29T01:30:00.000Z');
    expect(new Date(bucketStart(t, 'day', 'Asia/Kolkata')).toISOString()).toBe('2026-03-28T18:30:00.000Z');
  });

  it('keeps a time already on a boundary', () => {
    expect(bucketStart(ms('2026-11-21T00:00:00Z'), 'day', 'UTC')).toBe(ms('2026-11-21T00:00:00Z'));
  });
});

describe('bucketChunks', () => {
  it('splits days across both daylight-saving changes into 23-, 24- and 25-hour chunks', () => {
    expect(iso(bucketChunks(ms('2026-03-28T23:00:00Z'), ms('2026-03-30T22:00:00Z'), 'day', 'Europe/Berlin', { days: 1 }))).toEqual([
      ['2026-03-28T23:00:00.000Z', '2026-03-29T22:00:00.000Z'], // 23 hours
      ['2026-03-29T22:00:00.000Z', '2026-03-30T22:00:00.000Z'],
    ]);
    expect(iso(bucketChunks(ms('2026-10-24T22:00:00Z'), ms('2026-10-26T23:00:00Z'), 'day', 'Europe/Berlin', { days: 1 }))).toEqual([
      ['2026-10-24T22:00:00.000Z', '2026-10-25T23:00:00.000Z'], // 25 hours
      ['2026-10-25T23:00:00.000Z', '2026-10-26T23:00:00.000Z'],
    ]);
  });

  it('starts on the bucket holding the start and clips the last chunk at the end', () => {
    // 10:17 UTC lies in the 10:00 hour; the end 16:45 cuts the third 3-hour chunk short.
    expect(iso(bucketChunks(ms('2026-11-21T10:17:00Z'), ms('2026-11-21T16:45:00Z'), 'hour', 'UTC', { hours: 3 }))).toEqual([
      ['2026-11-21T10:00:00.000Z', '2026-11-21T13:00:00.000Z'],
      ['2026-11-21T13:00:00.000Z', '2026-11-21T16:00:00.000Z'],
      ['2026-11-21T16:00:00.000Z', '2026-11-21T16:45:00.000Z'],
    ]);
  });

  it('rounds a chunk that does not end on a bucket boundary down to one', () => {
    // 36 hours from a UTC midnight ends at noon: the chunk ends at the day's start, so chunks are whole days.
    expect(iso(bucketChunks(ms('2026-11-20T00:00:00Z'), ms('2026-11-23T00:00:00Z'), 'day', 'UTC', { hours: 36 }))).toEqual([
      ['2026-11-20T00:00:00.000Z', '2026-11-21T00:00:00.000Z'],
      ['2026-11-21T00:00:00.000Z', '2026-11-22T00:00:00.000Z'],
      ['2026-11-22T00:00:00.000Z', '2026-11-23T00:00:00.000Z'],
    ]);
  });

  it('chunks minutes in the zone of the half-hour offset', () => {
    expect(iso(bucketChunks(ms('2026-11-21T10:00:30Z'), ms('2026-11-21T10:02:00Z'), 'minute', 'Asia/Kolkata', { minutes: 1 }))).toEqual([
      ['2026-11-21T10:00:00.000Z', '2026-11-21T10:01:00.000Z'],
      ['2026-11-21T10:01:00.000Z', '2026-11-21T10:02:00.000Z'],
    ]);
  });

  it('returns nothing for an empty window', () => {
    expect(bucketChunks(ms('2026-11-21T10:00:00Z'), ms('2026-11-21T10:00:00Z'), 'hour', 'UTC', { hours: 1 })).toEqual([]);
  });
});
