import { describe, expect, it } from 'vitest';
import { DEFAULT_DETECT_OPTIONS, detectSeries, describeFinding, findingId, robustCentre, type SeriesKey, type SeriesPoint } from '../../src/insights/anomalies.js';

// Error rate keeps the rule of issue 32 (median and 1.4826 x MAD of the same weekday/hour of the trailing 4 weeks,
// floored); every expected figure below is worked by hand from it. Cost, volume and latency have the calibrated
// baseline of issue 46 (test/insights/anomaly-baseline.test.ts).
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

  it('the finding id is stable for a series and bucket, and differs between buckets and series', () => {
    expect(findingId(cost, t0)).toBe(findingId({ ...cost }, t0));
    expect(findingId(cost, t0)).not.toBe(findingId(cost, t0 + DAY));
    expect(findingId(cost, t0)).not.toBe(findingId({ ...cost, id: 'acme/other' }, t0));
    expect(findingId(cost, t0)).toMatch(/^[0-9a-f]{32}$/);
    expect(DEFAULT_DETECT_OPTIONS.weeks).toBe(4);
  });
});
