import { describe, expect, it } from 'vitest';
import { isoToDateTime64, nextVersionMs } from '../../src/store/values.js';

describe('nextVersionMs', () => {
  it('never goes below the clock and strictly increases, even many times within one millisecond', () => {
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
