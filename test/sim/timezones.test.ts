// Acceptance 3 and 4: DST days of 23 and 25 hours, +05:30 buckets, summary = Σ buckets, surge rows separate.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import { call, pageAll, qs } from './helpers.js';

const HOUR = 3_600_000;

async function usage(sim: Sim, q: Record<string, string | number>): Promise<{ summary: any[]; series: any[]; buckets: string[] }> {
  const pages = await pageAll(sim.url, `/v1/serverless/usage?${qs({ limit: 1000, ...q })}`, { key: sim.keys.admin });
  const buckets: string[] = [];
  const series: any[] = [];
  for (const p of pages) {
    for (const b of p.time_series ?? []) {
      if (buckets[buckets.length - 1] !== b.bucket) buckets.push(b.bucket);
      for (const r of b.results) series.push({ bucket: b.bucket, ...r });
    }
  }
  return { summary: pages.flatMap((p) => p.summary ?? []), series, buckets };
}

describe('America/New_York DST', () => {
  let spring: Sim;
  let autumn: Sim;
  beforeAll(async () => {
    spring = await startSim({ seed: 11, now: '2026-03-10T12:00:00Z', days: 5, apps: 12 });
    autumn = await startSim({ seed: 11, now: '2026-11-03T12:00:00Z', days: 5, apps: 12 });
  });
  afterAll(async () => {
    await spring.close();
    await autumn.close();
  });

  it('2026-03-08 is a 23-hour daily bucket', async () => {
    const { buckets, series } = await usage(spring, { start: '2026-03-07', end: '2026-03-10', timezone: 'America/New_York', timeframe: 'day', expand: 'time_series' });
    expect(buckets).toEqual(['2026-03-07T00:00:00-05:00', '2026-03-08T00:00:00-05:00', '2026-03-09T00:00:00-04:00']);
    expect(Date.parse(buckets[2]) - Date.parse(buckets[1])).toBe(23 * HOUR);
    expect(Date.parse(buckets[1]) - Date.parse(buckets[0])).toBe(24 * HOUR);
    const hourly = spring.truth.usage({ from: '2026-03-08', to: '2026-03-09', timezone: 'America/New_York', timeframe: 'hour' });
    expect(new Set(hourly.map((r) => r.bucket)).size).toBe(23);
    // The day's quantity per row key is the sum of its 23 hours.
    const day = series.filter((r) => r.bucket === buckets[1]);
    expect(day.length).toBeGreaterThan(3);
    for (const r of day) {
      const hours = hourly.filter((h) => h.app === r.app && h.machine_type === r.machine_type && h.is_surge === r.is_surge);
      expect(hours.reduce((a, h) => a + h.quantity, 0)).toBe(r.quantity);
    }
  });

  it('2026-11-01 is a 25-hour daily bucket with two 01:00 hours', async () => {
    const { buckets } = await usage(autumn, { start: '2026-10-31', end: '2026-11-03', timezone: 'America/New_York', timeframe: 'day', expand: 'time_series' });
    expect(buckets).toEqual(['2026-10-31T00:00:00-04:00', '2026-11-01T00:00:00-04:00', '2026-11-02T00:00:00-05:00']);
    expect(Date.parse(buckets[2]) - Date.parse(buckets[1])).toBe(25 * HOUR);
    const hourly = autumn.truth.usage({ from: '2026-11-01', to: '2026-11-02', timezone: 'America/New_York', timeframe: 'hour' });
    const labels = [...new Set(hourly.map((r) => r.bucket))];
    expect(labels).toHaveLength(25);
    expect(labels).toContain('2026-11-01T01:00:00-04:00');
    expect(labels).toContain('2026-11-01T01:00:00-05:00');
  });

  it('truth request days follow the zone: a 23-hour local day holds the requests of 23 UTC hours', () => {
    const days = spring.truth.requests({ from: '2026-03-08', to: '2026-03-09', timezone: 'America/New_York' });
    const total = days.reduce((a, d) => a + d.request_count, 0);
    expect(new Set(days.map((d) => d.day))).toEqual(new Set(['2026-03-08']));
    const utc = spring.truth.requests({ from: '2026-03-08T05:00:00Z', to: '2026-03-09T04:00:00Z', timezone: 'UTC' });
    expect(utc.reduce((a, d) => a + d.request_count, 0)).toBe(total);
  });
});

describe('Asia/Kolkata and summary = Σ buckets', () => {
  let sim: Sim;
  beforeAll(async () => {
    sim = await startSim({ seed: 5, apps: 20 });
  });
  afterAll(async () => {
    await sim.close();
  });

  it('hour and day buckets start at +05:30', async () => {
    const hourly = await usage(sim, { start: '2026-11-20T00:00:00+05:30', end: '2026-11-20T06:00:00+05:30', timezone: 'Asia/Kolkata', timeframe: 'hour', expand: 'time_series' });
    expect(hourly.buckets).toHaveLength(6);
    for (const b of hourly.buckets) {
      expect(b).toMatch(/^2026-11-20T0\d:00:00\+05:30$/);
      expect(Date.parse(b) % HOUR).toBe(HOUR / 2); // on the half hour in UTC
    }
    const daily = await usage(sim, { start: '2026-11-18', end: '2026-11-20', timezone: 'Asia/Kolkata', timeframe: 'day', expand: 'time_series' });
    expect(daily.buckets).toEqual(['2026-11-18T00:00:00+05:30', '2026-11-19T00:00:00+05:30']);
    expect(new Date(daily.buckets[0]).toISOString()).toBe('2026-11-17T18:30:00.000Z');
  });

  it('summary quantity equals the sum of the time-series buckets exactly, cost within rounding', async () => {
    const q = { start: '2026-11-01', end: '2026-11-21', timezone: 'Asia/Kolkata', timeframe: 'day', expand: 'summary,time_series' };
    const { summary, series, buckets } = await usage(sim, q);
    expect(buckets.length).toBe(20);
    expect(summary.length).toBeGreaterThan(10);
    const key = (r: any) => `${r.app}|${r.environment}|${r.machine_type}|${r.is_surge}`;
    const nanos = (x: number) => Math.round(x * 1e9);
    for (const s of summary) {
      const rows = series.filter((r) => key(r) === key(s));
      expect(rows.reduce((a, r) => a + r.quantity, 0)).toBe(s.quantity);
      const sumSub = rows.reduce((a, r) => a + nanos(r.cost_subtotal), 0);
      expect(nanos(s.cost_subtotal)).toBe(sumSub); // no discount rounding in the subtotal
      const sumTotal = rows.reduce((a, r) => a + nanos(r.cost_total), 0);
      expect(Math.abs(nanos(s.cost_total) - sumTotal)).toBeLessThanOrEqual(rows.length);
      expect(nanos(s.cost_total)).toBe(nanos(s.cost_subtotal) - nanos(s.cost_discount));
    }
    // Summary rows carry the discount rounded half up from their own quantity.
    const discounted = summary.find((s) => s.percent_discount !== null)!;
    const sub = BigInt(discounted.quantity) * BigInt(Math.round(discounted.unit_price * 1e9));
    const pctMilli = BigInt(Math.round(discounted.percent_discount * 1000));
    expect(BigInt(nanos(discounted.cost_discount))).toBe((sub * pctMilli + 50_000n) / 100_000n);
  });

  it('money is printed as exact decimals with at most 9 places', async () => {
    const r = await call(sim.url, `/v1/serverless/usage?${qs({ start: '2026-11-10', end: '2026-11-21', timeframe: 'day', expand: 'summary', limit: 1000 })}`, { key: sim.keys.admin });
    const numbers = [...r.text.matchAll(/"(?:unit_price|cost_subtotal|cost_discount|cost_total|cost)":(-?[0-9.eE+-]+)/g)].map((m) => m[1]);
    expect(numbers.length).toBeGreaterThan(50);
    for (const n of numbers) expect(n).toMatch(/^\d+(\.\d{1,9})?$/);
    expect(r.text).toMatch(/"unit_price":0\.000575[,}]/);
  });

  it('surge and non-surge usage of one app and machine type come back as two rows', async () => {
    const { series } = await usage(sim, { start: '2026-11-01', end: '2026-11-21', timeframe: 'day', expand: 'time_series' });
    const surge = series.filter((r) => r.is_surge);
    expect(surge.length).toBeGreaterThan(0);
    const s = surge[0];
    const plain = series.find((r) => r.bucket === s.bucket && r.app === s.app && r.machine_type === s.machine_type && !r.is_surge);
    expect(plain).toBeDefined();
    expect(Math.round(s.unit_price * 1e9)).toBe((Math.round(plain.unit_price * 1e9) * 3) / 2);
    expect(s.quantity).toBeGreaterThan(0);
    const truth = sim.truth.usage({ from: '2026-11-01', to: '2026-11-21', timeframe: 'day' }).filter((t) => t.bucket === s.bucket && t.app === s.app && t.machine_type === s.machine_type);
    expect(truth.map((t) => [t.is_surge, t.quantity]).sort()).toEqual([[false, plain.quantity], [true, s.quantity]].sort());
  });

  it('week buckets start on Monday; unbound ranges give partial first and last buckets', async () => {
    const weekly = await usage(sim, { start: '2026-11-04', end: '2026-11-20', timeframe: 'week', expand: 'time_series' });
    expect(weekly.buckets).toEqual(['2026-11-02T00:00:00+00:00', '2026-11-09T00:00:00+00:00', '2026-11-16T00:00:00+00:00']);
    const bound = await usage(sim, { start: '2026-11-20T10:30:00Z', end: '2026-11-20T12:30:00Z', timeframe: 'hour', expand: 'summary' });
    const unbound = await usage(sim, { start: '2026-11-20T10:30:00Z', end: '2026-11-20T12:30:00Z', timeframe: 'hour', expand: 'summary,time_series', bound_to_timeframe: 'false' });
    expect(unbound.buckets).toEqual(['2026-11-20T10:00:00+00:00', '2026-11-20T11:00:00+00:00', '2026-11-20T12:00:00+00:00']);
    const q = (rows: any[]) => rows.reduce((a, r) => a + r.quantity, 0);
    expect(q(unbound.summary)).toBeLessThan(q(bound.summary));
    expect(q(unbound.summary)).toBe(q(unbound.series));
  });
});
