import { describe, expect, it } from 'vitest';
import { nonEmpty, nonZero } from '../support/truth.js';

describe('the non-empty truth guard', () => {
  it('passes a collection with entries through unchanged', () => {
    const m = new Map([['a', 1n]]);
    expect(nonEmpty(m, 'm')).toBe(m);
    expect(nonEmpty([1], 'list')).toEqual([1]);
    expect(nonZero([0, 2], 'list', (v) => v)).toEqual([0, 2]);
    expect(nonZero(m, 'm', ([, v]) => v)).toBe(m);
  });

  it('fails an empty array, map or set, and a truth of zeros, naming it', () => {
    expect(() => nonEmpty([], 'usage in October')).toThrow(/the truth is empty: usage in October/);
    expect(() => nonEmpty(new Map(), 'map')).toThrow(/the truth is empty: map/);
    expect(() => nonEmpty(new Set(), 'set')).toThrow(/the truth is empty: set/);
    expect(() => nonZero(new Map([['a', 0n]]), 'costs', ([, v]) => v)).toThrow(/the truth is all zeros: costs/);
  });
});
