import { describe, expect, it } from 'vitest';
import { chunk, MAX_VALUES_PER_PARAM } from '../../src/platform/chunk.js';
import { appendQuery } from '../../src/platform/query.js';

describe('chunk', () => {
  it('splits 120 names into 50, 50 and 20, in order', () => {
    const names = Array.from({ length: 120 }, (_, i) => `app-${i}`);
    const groups = chunk(names);
    expect(groups.map((g) => g.length)).toEqual([50, 50, 20]);
    expect(groups[0][0]).toBe('app-0');
    expect(groups[0][49]).toBe('app-49');
    expect(groups[1][0]).toBe('app-50');
    expect(groups[2][19]).toBe('app-119');
    expect(groups.flat()).toEqual(names);
    expect(MAX_VALUES_PER_PARAM).toBe(50);
  });

  it('handles exact multiples, empty input and other sizes', () => {
    expect(chunk(Array.from({ length: 100 }, (_, i) => i)).map((g) => g.length)).toEqual([50, 50]);
    expect(chunk([])).toEqual([]);
    expect(chunk(['a', 'b', 'c'], 2)).toEqual([['a', 'b'], ['c']]);
  });

  it('refuses a size that is not a positive integer', () => {
    expect(() => chunk(['a'], 0)).toThrow(RangeError);
    expect(() => chunk(['a'], 1.5)).toThrow(RangeError);
  });
});

describe('appendQuery', () => {
  it('repeats list values by default and skips undefined', () => {
    const url = new URL('http://h/v1/serverless/usage');
    appendQuery(url, { app: ['a', 'b'], start: '2026-03-01', limit: 100, bound_to_timeframe: false, search: undefined });
    expect(url.search).toBe('?app=a&app=b&start=2026-03-01&limit=100&bound_to_timeframe=false');
  });

  it('joins list values with commas in comma mode', () => {
    const url = new URL('http://h/x');
    appendQuery(url, { expand: ['time_series', 'summary'] }, 'comma');
    expect(url.searchParams.get('expand')).toBe('time_series,summary');
    expect(() => appendQuery(new URL('http://h/x'), { app: ['a,b'] }, 'comma')).toThrow(/comma/);
  });

  it('refuses more than 50 values, an empty list and a non-finite number', () => {
    const many = Array.from({ length: 51 }, (_, i) => `a${i}`);
    expect(() => appendQuery(new URL('http://h/x'), { app: many })).toThrow(/51 values.*at most 50/);
    expect(() => appendQuery(new URL('http://h/x'), { app: [] })).toThrow(/empty list/);
    expect(() => appendQuery(new URL('http://h/x'), { limit: Number.NaN })).toThrow(/finite/);
  });
});
