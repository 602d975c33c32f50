import { describe, expect, it } from 'vitest';
import { DEFAULT_DETECT_OPTIONS, detectSeries, describeFinding, findingId, robustCentre, type SeriesKey, type SeriesPoint } from '../../src/insights/anomalies.js';

// Every expected figure below is worked by hand from the module's documented rule (median and 1.4826 x MAD of the
// same weekday/hour of the trailing 4 weeks, floored), not taken from the code's output.
const DAY = 86_400_000;
const WEEK = 7 * DAY;
const t0 = Date.parse('2026-11-02T00:00:00Z'); // the judged bucket
const weeksBack = (values: number[], at = t0, requests?: number): SeriesPoint[] =>
  values.map((value, i) => ({ startMs: at - (values.length - i) * WEEK, value, requests }));

const cost: SeriesKey = { kind: 'app', id: 'acme/flux', measure: 'cost', grain: 'day', unit: 'USD' };
const volume: SeriesKey = { kind: 'endpoint', id: 'acme/flux/infer', measure: 'volume', grain: 'hour', unit: 'requests' };
const errors: SeriesKey = { kind: 'endpoint', id: 'acme/flux/infer', measure: 'error_rate', grain: 'hour', unit: 'ratio' };

describe('anomaly baseline (pure)', () => {
  it('median and 1.4826 x MAD: [10, 12, 11, 30] is 11.5 and 1.4826', () => {
    // sorted 10 11 12 30: median 11.5; deviations 1.5 0.5 0.5 18.5, sorted 0.5 0.5 1.5 18.5: MAD 1
    const c = robustCentre([10, 12, 11, 30]);
    expect(c.median).toBe(11.5);
    expect(c.spread).toBeCloseTo(1.4826, 10);
  });

  it('a daily cost of 150 against 100, 104, 96, 100 on the same weekday is a finding, 125 is not', () => {
    // median 100; MAD 2 -> 2.9652, below the 6% floor: spread 6. 150: score 50/6 = 8.33 >= 5; range 100 -+ 5 x 6
    const up = detectSeries(cost, [...weeksBack([100, 104, 96, 100]), { startMs: t0, value: 150 }], t0, t0 + DAY);
    expect(up).toHaveLength(1);
    expect(up[0]).toMatchObject({ startMs: t0, expected: 100, expectedLow: 70, expectedHigh: 130, actual: 150, direction: 'up' });
    expect(up[0].score).toBeCloseTo(50 / 6, 10);
    expect(describeFinding(up[0])).toBe('cost of app acme/flux on 2026-11-02: 150 USD, expected 100 (70.00-130), up, score 8.3');
    // 125: 25/6 = 4.17 < 5
    expect(detectSeries(cost, [...weeksBack([100, 104, 96, 100]), { startMs: t0, value: 125 }], t0, t0 + DAY)).toEqual([]);
  });

  it('a day with no usage after a history of usage is a downward finding (absent = 0 once the series began)', () => {
    const down = detectSeries(cost, weeksBack([100, 104, 96, 100]), t0, t0 + DAY);
    expect(down).toHaveLength(1);
    expect(down[0]).toMatchObject({ actual: 0, expected: 100, direction: 'down' });
    expect(down[0].score).toBeCloseTo(-100 / 6, 10);
  });

  it('a quiet hourly series does not alarm on a few requests (absolute floor 5), but does on 40', () => {
    // history 0 1 0 2: median 0.5, MAD 0.5 -> 0.74; floors 0.03, 5, sqrt(0.5) = 0.71: spread 5. 12: 11.5/5 = 2.3 < 5
    expect(detectSeries(volume, [...weeksBack([0, 1, 0, 2]), { startMs: t0, value: 12 }], t0, t0 + 3_600_000)).toEqual([]);
    // 40: 39.5 / 5 = 7.9 >= 5
    const f = detectSeries(volume, [...weeksBack([0, 1, 0, 2]), { startMs: t0, value: 40 }], t0, t0 + 3_600_000);
    expect(f.map((x) => [x.expected, x.score, x.direction])).toEqual([[0.5, 7.9, 'up']]);
  });

  it('an outage: 100 requests in an hour that had 990-1010 is a downward finding', () => {
    // median 1000, MAD 5 -> 7.4; floors 60 (6%), 5, sqrt(1000) = 31.6: spread 60; score -900/60 = -15
    const f = detectSeries(volume, [...weeksBack([1000, 1010, 990, 1000]), { startMs: t0, value: 100 }], t0, t0 + 3_600_000);
    expect(f.map((x) => [x.score, x.direction, x.expectedLow, x.expectedHigh])).toEqual([[-15, 'down', 700, 1300]]);
  });

  it('error rate: 20% of 100 requests against 2% is a finding (binomial floor); 10 requests are not judged; fewer errors never alarm', () => {
    // median 0.02, MAD 0; floors 0.0012, 0.01, sqrt(0.02 x 0.98 / 100) = 0.014: spread 0.014; rate score 0.18 / 0.014
    // = 12.9; bounded by the count: 20 errors where 2 were expected, 2 (sqrt(20.375) - sqrt(2.375)) = 5.95 >= 5
    const f = detectSeries(errors, [...weeksBack([0.02, 0.02, 0.02, 0.02], t0, 500), { startMs: t0, value: 0.2, requests: 100 }], t0, t0 + 3_600_000);
    expect(f).toHaveLength(1);
    expect(f[0].score).toBeCloseTo(2 * (Math.sqrt(20.375) - Math.sqrt(2.375)), 9);
    expect(detectSeries(errors, [...weeksBack([0.02, 0.02, 0.02, 0.02], t0, 500), { startMs: t0, value: 0.5, requests: 10 }], t0, t0 + 3_600_000)).toEqual([]);
    expect(detectSeries(errors, [...weeksBack([0.2, 0.2, 0.2, 0.2], t0, 500), { startMs: t0, value: 0, requests: 500 }], t0, t0 + 3_600_000)).toEqual([]);
  });

  it('3 errors in 30 requests against an error-free history is counting noise, not a finding', () => {
    // rate score: median 0, spread max(0, 0.01, 0) = 0.01: 0.1 / 0.01 = 10; count score 2 (sqrt(3.375) - sqrt(0.375)) = 2.45 < 5
    expect(detectSeries(errors, [...weeksBack([0, 0, 0, 0], t0, 500), { startMs: t0, value: 0.1, requests: 30 }], t0, t0 + 3_600_000)).toEqual([]);
  });

  it('needs 3 weeks of history: a new series, or one with 2 past weeks, is not judged', () => {
    expect(detectSeries(cost, [...weeksBack([100, 100]), { startMs: t0, value: 1000 }], t0, t0 + DAY)).toEqual([]);
    expect(detectSeries(cost, [{ startMs: t0, value: 1000 }], t0, t0 + DAY)).toEqual([]);
  });

  it('the finding id is stable for a series and bucket, and differs between buckets and series', () => {
    expect(findingId(cost, t0)).toBe(findingId({ ...cost }, t0));
    expect(findingId(cost, t0)).not.toBe(findingId(cost, t0 + DAY));
    expect(findingId(cost, t0)).not.toBe(findingId({ ...cost, id: 'acme/other' }, t0));
    expect(findingId(cost, t0)).toMatch(/^[0-9a-f]{32}$/);
    expect(DEFAULT_DETECT_OPTIONS.weeks).toBe(4);
  });
});
