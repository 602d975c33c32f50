// Issue 31: the pure parts of src/collectors/usage.ts (month chunks, the scheduled window, bucket timestamps, and the
// reading of the series and summary pages), tested without a store so that mutation testing can afford them.
// Expected values are worked by hand: Europe/Berlin is UTC+1 until 01:00Z on 2026-03-29 and UTC+2 after it;
// America/Los_Angeles is UTC-8 from 09:00Z on 2026-11-01.
import { describe, expect, it } from 'vitest';
import { monthChunks, parseBucket, readSeriesAndSummary, scheduledWindow } from '../../src/collectors/usage.js';
import { collectorRejects } from '../../src/collectors/common.js';
import type { JobContext } from '../../src/jobs/job.js';
import { UsageRow } from '../../src/platform/index.js';

describe('monthChunks', () => {
  it('splits at the first of each month and keeps the ends as given', () => {
    expect(monthChunks('2026-01-15', '2026-03-10', 'UTC')).toEqual([
      { from: '2026-01-15', to: '2026-02-01' },
      { from: '2026-02-01', to: '2026-03-01' },
      { from: '2026-03-01', to: '2026-03-10' },
    ]);
  });

  it('gives one chunk for a range inside a month, and one per month for whole months', () => {
    expect(monthChunks('2026-11-02', '2026-11-03', 'Europe/Berlin')).toEqual([{ from: '2026-11-02', to: '2026-11-03' }]);
    expect(monthChunks('2026-02-01', '2026-04-01', 'America/Los_Angeles')).toEqual([
      { from: '2026-02-01', to: '2026-03-01' },
      { from: '2026-03-01', to: '2026-04-01' },
    ]);
  });

  it('refuses an empty or reversed range, naming both ends', () => {
    expect(() => monthChunks('2026-03-01', '2026-03-01', 'UTC')).toThrow('--to (2026-03-01) must be after --from (2026-03-01); --to is exclusive');
    expect(() => monthChunks('2026-03-02', '2026-03-01', 'UTC')).toThrow('--to (2026-03-01) must be after --from (2026-03-02); --to is exclusive');
  });

  it('refuses a date that is not YYYY-MM-DD, naming the option', () => {
    expect(() => monthChunks('2026-3-1', '2026-04-01', 'UTC')).toThrow('--from must be a date YYYY-MM-DD, got "2026-3-1"');
    expect(() => monthChunks('2026-03-01', 'april', 'UTC')).toThrow('--to must be a date YYYY-MM-DD, got "april"');
  });
});

describe('scheduledWindow', () => {
  it('runs from the 1st of the month recollectDays ago to tomorrow, in the zone', () => {
    // 05:00Z on 11-03 is 21:00 on 11-02 in Los Angeles.
    const now = new Date('2026-11-03T05:00:00Z');
    expect(scheduledWindow(now, 'America/Los_Angeles', 2)).toEqual({ from: '2026-10-01', to: '2026-11-03' });
    expect(scheduledWindow(now, 'UTC', 2)).toEqual({ from: '2026-11-01', to: '2026-11-04' });
    expect(scheduledWindow(now, 'UTC', 3)).toEqual({ from: '2026-10-01', to: '2026-11-04' });
    expect(scheduledWindow(now, 'UTC', 0)).toEqual({ from: '2026-11-01', to: '2026-11-04' });
  });
});

describe('parseBucket', () => {
  it('reads the instant, its offset and the local date', () => {
    expect(parseBucket('2026-03-29T00:00:00+01:00', 'Europe/Berlin')).toEqual({ utc: '2026-03-28 23:00:00.000', offsetMinutes: 60, localDate: '2026-03-29' });
    expect(parseBucket('2026-03-30T00:00:00+02:00', 'Europe/Berlin')).toEqual({ utc: '2026-03-29 22:00:00.000', offsetMinutes: 120, localDate: '2026-03-30' });
    expect(parseBucket('2026-11-21T00:00:00Z', 'UTC')).toEqual({ utc: '2026-11-21 00:00:00.000', offsetMinutes: 0, localDate: '2026-11-21' });
  });

  it('refuses an offset the zone does not have at that time, naming both', () => {
    expect(parseBucket('2026-03-30T00:00:00+01:00', 'Europe/Berlin')).toBe('offset +01:00 is not the offset of Europe/Berlin at that time (+02:00)');
    expect(parseBucket('2026-11-21T00:00:00Z', 'Asia/Kolkata')).toBe('offset +00:00 is not the offset of Asia/Kolkata at that time (+05:30)');
  });

  it('refuses what is not an ISO 8601 string', () => {
    expect(parseBucket(1_700_000_000, 'UTC')).toBe('not a string');
    expect(parseBucket(null, 'UTC')).toBe('not a string');
    expect(parseBucket('21/11/2026', 'UTC')).toMatch(/^not an ISO 8601 timestamp \(.+\)$/);
  });
});

/** A usage row as the platform notes show it. */
function usage(app: string, costTotal: number) {
  return {
    app,
    environment: 'main',
    machine_type: 'gpu-a100',
    unit: 'second',
    quantity: 10,
    unit_price: costTotal / 10,
    percent_discount: null,
    cost_subtotal: null,
    cost_discount: null,
    cost_total: costTotal,
    cost: costTotal,
    currency: 'USD',
    is_surge: false,
  };
}

/** A job context whose platform answers `paginate` with the given pages per `expand`, recording each call. */
function fakeContext(pages: Record<string, unknown[]>) {
  const calls: Array<{ path: string; query: Record<string, unknown>; scope: unknown }> = [];
  const ctx = {
    call: undefined,
    platform: {
      async *paginate(path: string, opts: { query: Record<string, unknown>; scope: unknown }) {
        calls.push({ path, query: opts.query, scope: opts.scope });
        for (const page of pages[String(opts.query.expand)] ?? []) yield page;
      },
    },
  } as unknown as JobContext;
  return { ctx, calls };
}

describe('readSeriesAndSummary', () => {
  it('reads the series and the summary with an admin key, keeping each row with its bucket', async () => {
    const a = usage('a', 1.5);
    const b = usage('b', 2.25);
    const { ctx, calls } = fakeContext({
      'time_series,x': [
        { has_more: true, next_cursor: 'c1', time_series: [{ bucket: '2026-11-20T00:00:00Z', results: [a] }] },
        { has_more: false, time_series: [{ bucket: '2026-11-21T00:00:00Z', results: [a, b] }] },
      ],
      'summary,x': [{ has_more: false, summary: [b] }],
    });
    const rejects = collectorRejects('usage');
    const read = await readSeriesAndSummary(ctx, { path: '/p', query: { start: '2026-11-20' }, expand: ',x', timezone: 'UTC', schema: UsageRow, rejects });
    expect(calls).toEqual([
      { path: '/p', query: { start: '2026-11-20', expand: 'time_series,x' }, scope: 'admin' },
      { path: '/p', query: { start: '2026-11-20', expand: 'summary,x' }, scope: 'admin' },
    ]);
    expect(read.buckets.map((r) => [r.bucket.utc, (r.row as { app: string }).app, r.raw])).toEqual([
      ['2026-11-20 00:00:00.000', 'a', a],
      ['2026-11-21 00:00:00.000', 'a', a],
      ['2026-11-21 00:00:00.000', 'b', b],
    ]);
    expect(read.summary.map((r) => [(r.row as { cost_total: number }).cost_total, r.raw])).toEqual([[2.25, b]]);
    expect(read.bucketsWithRejects.size).toBe(0);
    expect(read.unreadableBucket).toBe(false);
    expect(read.summaryRejected).toBe(false);
    expect(rejects.rows).toEqual([]);
  });

  it('treats missing series and summary lists as empty', async () => {
    const { ctx } = fakeContext({ time_series: [{ has_more: false }], summary: [{ has_more: false, summary: null }] });
    const read = await readSeriesAndSummary(ctx, { path: '/p', query: {}, expand: '', timezone: 'UTC', schema: UsageRow, rejects: collectorRejects('usage') });
    expect(read.buckets).toEqual([]);
    expect(read.summary).toEqual([]);
  });

  it('refuses a bad row alone, marking its bucket; a bad bucket refuses its rows and marks the read unreadable', async () => {
    const good = usage('a', 1);
    const bad = { ...usage('b', 2), quantity: 'ten' };
    const { ctx } = fakeContext({
      time_series: [
        {
          time_series: [
            { bucket: '2026-11-20T00:00:00Z', results: [bad, good] },
            { bucket: 42, results: [good, good] },
          ],
        },
      ],
      summary: [{ summary: [bad, good] }],
    });
    const rejects = collectorRejects('usage');
    const read = await readSeriesAndSummary(ctx, { path: '/p', query: {}, expand: '', timezone: 'UTC', schema: UsageRow, rejects });
    expect(read.buckets.map((r) => [r.bucket.utc, (r.row as { app: string }).app])).toEqual([['2026-11-20 00:00:00.000', 'a']]);
    expect([...read.bucketsWithRejects]).toEqual(['2026-11-20 00:00:00.000']);
    expect(read.unreadableBucket).toBe(true);
    expect(read.summaryRejected).toBe(true);
    expect(read.summary.map((r) => (r.row as { app: string }).app)).toEqual(['a']);
    expect(rejects.rows.map((r) => [r.source, r.reason.startsWith('bad bucket 42: not a string') || r.reason, JSON.parse(r.raw).app])).toEqual([
      ['collector:usage', rejects.rows[0].reason, 'b'],
      ['collector:usage', true, 'a'],
      ['collector:usage', true, 'a'],
      ['collector:usage', rejects.rows[3].reason, 'b'],
    ]);
    // The bad rows' reasons name the field.
    expect(rejects.rows[0].reason).toContain('quantity');
    expect(rejects.rows[3].reason).toContain('quantity');
  });

  it('marks a bucket whose offset is wrong for the zone as unreadable', async () => {
    const { ctx } = fakeContext({ time_series: [{ time_series: [{ bucket: '2026-11-21T00:00:00Z', results: [usage('a', 1)] }] }], summary: [] });
    const rejects = collectorRejects('usage');
    const read = await readSeriesAndSummary(ctx, { path: '/p', query: {}, expand: '', timezone: 'Asia/Kolkata', schema: UsageRow, rejects });
    expect(read.unreadableBucket).toBe(true);
    expect(read.buckets).toEqual([]);
    expect(rejects.rows.map((r) => r.reason)).toEqual(['bad bucket "2026-11-21T00:00:00Z": offset +00:00 is not the offset of Asia/Kolkata at that time (+05:30)']);
  });
});
