// The benches' stable-ratio helper (bench/repeat.ts): quartiles and spread computed by hand here.
import { describe, expect, it } from 'vitest';
import { quantile, ratioStats, repeatRatio, reportRatio } from '../../bench/repeat.js';

describe('bench/repeat.ts', () => {
  it('quartiles interpolate between sorted values', () => {
    expect(quantile([1, 2, 3, 4], 0.5)).toBe(2.5);
    expect(quantile([1, 2, 3, 4, 5], 0.25)).toBe(2);
    expect(ratioStats([4, 1, 3, 2, 5])).toEqual({ median: 3, q1: 2, q3: 4, spread: 2 / 3 });
  });

  it('stops once the spread is small, or at the round limit, and judges the goal on the median', async () => {
    const steady = [5.2, 5.1, 5.3, 5.2, 5.25];
    let i = 0;
    const a = await repeatRatio(() => steady[i++]);
    expect(a.rounds).toBe(5);
    expect(a.stable).toBe(true);
    expect(reportRatio(a, { atLeast: 5 }).goal_met).toBe(true);
    let n = 0;
    const noisy = await repeatRatio(() => (n++ % 2 === 0 ? 2 : 8), { maxRounds: 9 });
    expect(noisy.rounds).toBe(9);
    expect(noisy.stable).toBe(false);
    expect(reportRatio(noisy, { atLeast: 5 })).toMatchObject({ ratio_median: 2, goal_met: false });
  });
});
