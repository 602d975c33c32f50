import { describe, expect, it } from 'vitest';
import { fitBaseline, studentTail, tQuantileAtZ, DEFAULT_BASELINE_OPTIONS } from '../../src/insights/anomaly-baseline.js';
import { detectSeries, type SeriesKey, type SeriesPoint } from '../../src/insights/anomalies.js';

// The calibrated baseline (issue 46.1). Expected figures are worked by hand from the rules in the module comment or
// taken from printed tables (Student's t), never from the code's output. Latency series are used where a figure is
// worked on the log scale: their offset is 0, so the scale is ln(value) exactly.
const DAY = 86_400_000;
const start = Date.parse('2026-10-05T00:00:00Z'); // a Monday
const days = (values: number[], from = start): SeriesPoint[] => values.map((value, i) => ({ startMs: from + i * DAY, value, requests: 1000 }));
const latency: SeriesKey = { kind: 'endpoint', id: 'acme/flux/infer', measure: 'p95_latency', grain: 'day', unit: 'seconds' };
const cost: SeriesKey = { kind: 'app', id: 'acme/flux', measure: 'cost', grain: 'day', unit: 'USD' };
const flagged = (key: SeriesKey, points: SeriesPoint[], fromDay: number, toDay: number, prior?: number) =>
  detectSeries(key, points, start + fromDay * DAY, start + toDay * DAY, undefined, prior).map((f) => Math.round((f.startMs - start) / DAY));

describe('Student t tail (printed tables)', () => {
  it('t(0.975) is 2.776 at 4 degrees of freedom and 2.228 at 10; at 1e7 it is the normal 1.96', () => {
    expect(studentTail(2.776, 4)).toBeCloseTo(0.025, 4);
    expect(studentTail(2.228, 10)).toBeCloseTo(0.025, 4);
    expect(studentTail(1.96, 1e7)).toBeCloseTo(0.025, 4);
    // the same tail as 4 normal sigmas needs a wider quantile on fewer degrees of freedom, and tends to 4
    expect(tQuantileAtZ(4, 10)).toBeGreaterThan(tQuantileAtZ(4, 30));
    expect(tQuantileAtZ(4, 1e6)).toBeCloseTo(4, 2);
  });
});

describe('calibrated baseline (pure)', () => {
  it('a short history widens the band: 3 days at 100 against 28, with a peer noise of 0.1', () => {
    // no spread of its own: pooled = sqrt(w x 0.1^2 / (n + w)), w = 14: n = 3 -> sqrt(0.14 / 17) = 0.0907; n = 28 -> sqrt(0.14 / 42) = 0.0577
    const young = fitBaseline('cost', 'day', days([100, 100, 100]), 0.1)!;
    const old = fitBaseline('cost', 'day', days(Array(28).fill(100)), 0.1)!;
    expect(DEFAULT_BASELINE_OPTIONS.priorWeight).toBe(14);
    expect(young.info.scale).toBeCloseTo(Math.sqrt(0.14 / 17), 10);
    expect(old.info.scale).toBeCloseTo(Math.sqrt(0.14 / 42), 10);
    expect(young.expected(start + 3 * DAY)).toBeCloseTo(100, 9);
    const wy = young.band(start + 3 * DAY);
    const wo = old.band(start + 28 * DAY);
    expect(wy.high - wy.low).toBeGreaterThan(wo.high - wo.low);
    // with no prior a series needs 2 x 3 buckets
    expect(fitBaseline('cost', 'day', days([100, 100, 100, 100, 100]), undefined)).toBeUndefined();
  });

  it('a level shift is one run of findings, then learnt: latency 2 s for 28 days, then 4 s', () => {
    // ln 4 - ln 2 = 0.69 against the floor spread 0.04: far out. Days 28-31 are judged against the old level (a new
    // level is learnt once 4 days of it are history); on day 32 the history starts at day 28 (4 points, under the 6 a
    // series without peers needs: not judged), from day 34 it is judged against 4 s and nothing is found.
    const points = days([...Array(28).fill(2), ...Array(14).fill(4)]);
    expect(flagged(latency, points, 28, 42)).toEqual([28, 29, 30, 31]);
    const fit = fitBaseline('p95_latency', 'day', points.slice(0, 34), undefined)!;
    expect(fit.info.shiftAtMs).toBe(start + 28 * DAY);
    expect(fit.expected(start + 34 * DAY)).toBeCloseTo(4, 6);
  });

  it('one past spike does not widen the band; two ordinary spikes older than a week do', () => {
    // flat 2 s (spread: the floor 0.04) with spikes of 10 s (ln 5 = 1.61). 3 s (ln 1.5 = 0.41, ~10 spreads) is found
    // after one spike; after two (days 5 and 13), the band reaches 1.61 + 4 x 0.04 = 1.77: 3 s and 10 s are ordinary,
    // 20 s (ln 10 = 2.30) is not.
    const oneSpike = Array(28).fill(2);
    oneSpike[5] = 10;
    expect(flagged(latency, days([...oneSpike, 3]), 28, 29)).toEqual([28]);
    const twoSpikes = [...oneSpike];
    twoSpikes[13] = 10; // another weekday: two Saturdays at 10 s would be a weekly pattern
    expect(flagged(latency, days([...twoSpikes, 3]), 28, 29)).toEqual([]);
    expect(flagged(latency, days([...twoSpikes, 10]), 28, 29)).toEqual([]);
    expect(flagged(latency, days([...twoSpikes, 20]), 28, 29)).toEqual([28]);
    const fit = fitBaseline('p95_latency', 'day', days(twoSpikes), undefined)!;
    expect(fit.band(start + 28 * DAY).high).toBeCloseTo(2 * Math.exp(Math.log(5) + 4 * 0.04), 6);
  });

  it('weekly seasonality where the data shows it: weekends at half the weekdays', () => {
    // 4 weeks of weekdays at 2 s and weekends at 1 s: a Saturday at 1 s is ordinary, a Saturday at 2 s is not
    const week = [2, 2, 2, 2, 2, 1, 1];
    const history = [...week, ...week, ...week, ...week];
    expect(flagged(latency, days([...history, 2, 2, 2, 2, 2, 1]), 28, 34)).toEqual([]);
    expect(flagged(latency, days([...history, 2, 2, 2, 2, 2, 2]), 28, 34)).toEqual([33]);
    expect(fitBaseline('p95_latency', 'day', days(history), undefined)!.info.weekly).toBe(true);
    expect(fitBaseline('p95_latency', 'day', days(Array(28).fill(2)), undefined)!.info.weekly).toBe(false);
  });

  it('an intermittent series: a day without usage is never a finding, a day ten times its usage is', () => {
    // used every other day at 100 USD: half the days are 0 (>= 20%), so the fit is of the days with usage
    const history = Array.from({ length: 28 }, (_, i) => (i % 2 ? 0 : 100));
    expect(flagged(cost, days([...history, 0, 0, 0]), 28, 31)).toEqual([]);
    expect(flagged(cost, days([...history, 100, 0, 1000]), 28, 31)).toEqual([30]);
    expect(fitBaseline('cost', 'day', days(history), undefined)!.info.intermittent).toBe(true);
  });

  it('a trend where there is one: +2% a day for 6 weeks is ordinary growth, a flat day after it is a drop', () => {
    // ln values rise 0.02 a day: the Theil-Sen slope is 0.02 exactly (every pair), and day 42 is expected at 2 e^0.84
    const grow = Array.from({ length: 42 }, (_, i) => 2 * Math.exp(0.02 * i));
    const fit = fitBaseline('p95_latency', 'day', days(grow), undefined)!;
    expect(fit.info.slopePerDay).toBeCloseTo(0.02, 9);
    expect(fit.expected(start + 42 * DAY)).toBeCloseTo(2 * Math.exp(0.84), 6);
    expect(flagged(latency, days([...grow, 2 * Math.exp(0.84)]), 42, 43)).toEqual([]);
    expect(flagged(latency, days([...grow, 2 * Math.exp(0.84 + 0.5)]), 42, 43)).toEqual([42]);
  });
});
