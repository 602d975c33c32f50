// Issue 31: the pure parts of src/collectors/usage.ts (month chunks, the scheduled window, bucket timestamps, and the
// reading of the series and summary pages), tested without a store so that mutation testing can afford them.
// Expected values are worked by hand: Europe/Berlin is UTC+1 until 01:00Z on 2026-03-29 and UTC+2 after it;
// America/Los_Angeles is UTC-8 from 09:00Z on 2026-11-01.
import { describe, expect, it } from 'vitest';
import { collectUsageChunk, monthChunks, parseBucket, readSeriesAndSummary, scheduledWindow } from '../../src/collectors/usage.js';
import { collectorRejects } from '../../src/collectors/common.js';
import type { JobContext } from '../../src/collectors/job.js';
import { UsageRow } from '../../src/platform/index.js';
import { fakeJob } from './fake-job.js';

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
    // luxon's explanation of the failure, not its one-word reason.
    expect(parseBucket('21/11/2026', 'UTC')).toBe('not an ISO 8601 timestamp (the input "21/11/2026" can\'t be parsed as ISO 8601)');
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
    const rejects = collectorRejects('usage');
    const read = await readSeriesAndSummary(ctx, { path: '/p', query: {}, expand: '', timezone: 'UTC', schema: UsageRow, rejects });
    expect(read.buckets).toEqual([]);
    expect(read.summary).toEqual([]);
    expect(read.summaryRejected).toBe(false);
    expect(rejects.rows).toEqual([]);
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

/** A job whose platform answers the usage series and summary, and whose store holds these live keys. */
function usageJob(opts: { series?: unknown[]; summary?: unknown[]; liveBuckets?: unknown[]; liveSummaries?: unknown[] } = {}) {
  return fakeJob({
    pages: (_path, query) =>
      String(query.expand).startsWith('time_series') ? [{ has_more: false, time_series: opts.series ?? [] }] : [{ has_more: false, summary: opts.summary ?? [] }],
    query: (sql) => (sql.includes('usage_buckets') ? (opts.liveBuckets ?? []) : (opts.liveSummaries ?? [])),
  });
}

const discounted = {
  app: 'img',
  environment: null,
  machine_type: 'gpu-a100',
  unit: 'second',
  quantity: 120,
  unit_price: 0.001,
  percent_discount: 25,
  cost_subtotal: 0.12,
  cost_discount: 0.03,
  cost_total: 0.09,
  cost: 0.09,
  currency: 'USD',
  is_surge: true,
};
const costOnly = { ...usage('txt', 0), cost_total: null, cost: 0.4, quantity: 40, unit_price: 0.01 };

describe('collectUsageChunk', () => {
  it('stores each daily row with its bucket, the summary, and the evidence of each day read whole', async () => {
    const job = usageJob({
      series: [
        { bucket: '2026-11-01T00:00:00-04:00', results: [discounted, costOnly] },
        { bucket: '2026-11-02T00:00:00-05:00', results: [discounted] },
      ],
      summary: [discounted],
    });
    const result = await collectUsageChunk(job.ctx, { timezone: 'America/New_York', from: '2026-11-01', to: '2026-11-03' });
    expect(job.calls.map((c) => [c.path, c.query, c.scope])).toEqual([
      ['/v1/serverless/usage', { start: '2026-11-01', end: '2026-11-03', timezone: 'America/New_York', timeframe: 'day', app: undefined, expand: 'time_series' }, 'admin'],
      ['/v1/serverless/usage', { start: '2026-11-01', end: '2026-11-03', timezone: 'America/New_York', timeframe: 'day', app: undefined, expand: 'summary' }, 'admin'],
    ]);
    const { version, collected_at: _c, ...first } = job.rows.usage_buckets[0];
    expect(first).toEqual({
      timezone: 'America/New_York',
      timeframe: 'day',
      bucket: '2026-11-01 04:00:00.000',
      bucket_offset_minutes: -240,
      bucket_date: '2026-11-01',
      app: 'img',
      environment: '',
      machine_type: 'gpu-a100',
      is_surge: true,
      unit: 'second',
      quantity: '120',
      unit_price: '0.001',
      percent_discount: '25',
      cost_subtotal: '0.12',
      cost_discount: '0.03',
      cost_total: '0.09',
      currency: 'USD',
      raw: JSON.stringify(discounted),
      is_deleted: 0,
    });
    expect(typeof version).toBe('number');
    // A row with only `cost` keeps it as its total; unknown subtotal and discount stay NULL.
    expect(job.rows.usage_buckets.map((r) => [r.bucket, r.bucket_offset_minutes, r.app, r.cost_total, r.cost_subtotal, r.percent_discount])).toEqual([
      ['2026-11-01 04:00:00.000', -240, 'img', '0.09', '0.12', '25'],
      ['2026-11-01 04:00:00.000', -240, 'txt', '0.4', null, null],
      ['2026-11-02 05:00:00.000', -300, 'img', '0.09', '0.12', '25'],
    ]);
    expect(job.rows.usage_summaries.map((r) => [r.timezone, r.range_start, r.range_end, r.app, r.cost_total, r.is_deleted, r.version])).toEqual([
      ['America/New_York', '2026-11-01', '2026-11-03', 'img', '0.09', 0, version],
    ]);
    expect(job.rows.cost_day_collections.map((r) => [r.product, r.timezone, r.day, r.row_count, r.cost_total])).toEqual([
      ['serverless', 'America/New_York', '2026-11-01', 2, '0.49'],
      ['serverless', 'America/New_York', '2026-11-02', 1, '0.09'],
    ]);
    expect(job.queries.map((q) => q.params)).toEqual([
      { timezone: 'America/New_York', timeframe: 'day', from: '2026-11-01 04:00:00.000', to: '2026-11-03 05:00:00.000', apps: [] },
      { timezone: 'America/New_York', start: '2026-11-01', end: '2026-11-03', apps: [] },
    ]);
    expect(result).toEqual({ bucketRows: 3, summaryRows: 1, tombstones: 0, rejected: 0 });
  });

  it('two collections of a day with the same rows give the same evidence; another total gives other evidence', async () => {
    const collect = async (rows: unknown[]) => {
      const job = usageJob({ series: [{ bucket: '2026-11-21T00:00:00Z', results: rows }] });
      await collectUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-21', to: '2026-11-22' });
      return job.rows.cost_day_collections[0].fingerprint;
    };
    const a = await collect([discounted, costOnly]);
    expect(await collect([discounted, costOnly])).toBe(a);
    expect(await collect([discounted, { ...costOnly, cost: 0.41 }])).not.toBe(a);
    expect(await collect([discounted, { ...costOnly, quantity: 41 }])).not.toBe(a);
    expect(await collect([discounted, { ...costOnly, currency: 'EUR' }])).not.toBe(a);
    expect(await collect([discounted, { ...costOnly, is_surge: true }])).not.toBe(a);
  });

  it('tombstones stored rows the platform no longer returns, keyed by bucket, app, environment, machine and surge', async () => {
    const row = { ...discounted, environment: 'prod' };
    const job = usageJob({
      series: [{ bucket: '2026-11-21T00:00:00+05:30', results: [row] }],
      summary: [row],
      liveBuckets: [
        { bucket_text: '2026-11-20 18:30:00.000', app: 'img', environment: 'prod', machine_type: 'gpu-a100', is_surge: true },
        { bucket_text: '2026-11-20 18:30:00.000', app: 'img', environment: 'prod', machine_type: 'gpu-a100', is_surge: false },
        { bucket_text: '2026-11-20 18:30:00.000', app: 'img', environment: 'dev', machine_type: 'gpu-a100', is_surge: true },
        { bucket_text: '2026-11-20 18:30:00.000', app: 'img', environment: 'prod', machine_type: 'cpu', is_surge: true },
        { bucket_text: '2026-11-20 18:30:00.000', app: 'old', environment: 'prod', machine_type: 'gpu-a100', is_surge: true },
      ],
      liveSummaries: [
        { app: 'img', environment: 'prod', machine_type: 'gpu-a100', is_surge: true },
        { app: 'gone', environment: '', machine_type: 'cpu', is_surge: false },
      ],
    });
    const result = await collectUsageChunk(job.ctx, { timezone: 'Asia/Kolkata', from: '2026-11-21', to: '2026-11-22' });
    // Kolkata's midnight is 18:30 UTC the day before: the first stored key is the row read again; the 4 others
    // differ in one part each (surge, environment, machine, app) and get tombstones, as does the summary's 'gone'.
    expect(job.rows.usage_buckets.filter((r) => r.is_deleted === 1).map((r) => [r.bucket, r.app, r.environment, r.machine_type, r.is_surge])).toEqual([
      ['2026-11-20 18:30:00.000', 'img', 'prod', 'gpu-a100', false],
      ['2026-11-20 18:30:00.000', 'img', 'dev', 'gpu-a100', true],
      ['2026-11-20 18:30:00.000', 'img', 'prod', 'cpu', true],
      ['2026-11-20 18:30:00.000', 'old', 'prod', 'gpu-a100', true],
    ]);
    expect(job.rows.usage_summaries.filter((r) => r.is_deleted === 1).map((r) => r.app)).toEqual(['gone']);
    expect(result.tombstones).toBe(4 + 1);
  });

  it('writes tombstones with zero values at the new version, in the zone of the collection', async () => {
    const job = usageJob({
      series: [{ bucket: '2026-11-21T00:00:00+05:30', results: [discounted] }],
      summary: [discounted],
      liveBuckets: [{ bucket_text: '2026-11-19 18:30:00.000', app: 'old', environment: 'prod', machine_type: 'cpu', is_surge: false }],
      liveSummaries: [{ app: 'gone', environment: '', machine_type: 'cpu', is_surge: false }],
    });
    const result = await collectUsageChunk(job.ctx, { timezone: 'Asia/Kolkata', from: '2026-11-20', to: '2026-11-22' });
    const live = job.rows.usage_buckets[0];
    const { collected_at: _a, ...tomb } = job.rows.usage_buckets[1];
    expect(tomb).toEqual({
      timezone: 'Asia/Kolkata', timeframe: 'day', bucket: '2026-11-19 18:30:00.000', bucket_offset_minutes: 330, bucket_date: '2026-11-20',
      app: 'old', environment: 'prod', machine_type: 'cpu', is_surge: false, unit: 'second', quantity: '0', unit_price: '0', percent_discount: null,
      cost_subtotal: null, cost_discount: null, cost_total: '0', currency: '', raw: '', version: live.version, is_deleted: 1,
    });
    const { collected_at: _b, ...summaryTomb } = job.rows.usage_summaries[1];
    expect(summaryTomb).toEqual({
      timezone: 'Asia/Kolkata', range_start: '2026-11-20', range_end: '2026-11-22', app: 'gone', environment: '', machine_type: 'cpu', is_surge: false,
      unit: 'second', quantity: '0', unit_price: '0', percent_discount: null, cost_subtotal: null, cost_discount: null, cost_total: '0', currency: '', raw: '',
      version: live.version, is_deleted: 1,
    });
    expect(result).toEqual({ bucketRows: 1, summaryRows: 1, tombstones: 2, rejected: 0 });
  });

  it('asks for at most 50 apps a call and limits the stored keys to the apps asked for', async () => {
    const apps = Array.from({ length: 51 }, (_, i) => `app${String(i).padStart(2, '0')}`);
    const job = usageJob({ series: [{ bucket: '2026-11-21T00:00:00Z', results: [usage('app00', 1)] }] });
    const result = await collectUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-21', to: '2026-11-22', apps });
    expect(job.calls.filter((c) => c.query.expand === 'time_series').map((c) => (c.query.app as string[]).length)).toEqual([50, 1]);
    expect(job.queries.map((q) => q.params.apps)).toEqual([apps, apps]);
    // Each call answered the same row: both are kept as read.
    expect(result.bucketRows).toBe(2);
  });

  it('a refused row keeps its bucket from tombstones, but not the others', async () => {
    const job = usageJob({
      series: [
        { bucket: '2026-11-20T00:00:00Z', results: [{ ...discounted, quantity: 'lots' }] },
        { bucket: '2026-11-21T00:00:00Z', results: [discounted] },
      ],
      liveBuckets: [
        { bucket_text: '2026-11-20 00:00:00.000', app: 'old', environment: '', machine_type: 'cpu', is_surge: false },
        { bucket_text: '2026-11-21 00:00:00.000', app: 'old', environment: '', machine_type: 'cpu', is_surge: false },
      ],
    });
    const result = await collectUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-20', to: '2026-11-22' });
    expect(job.rows.usage_buckets.filter((r) => r.is_deleted === 1).map((r) => r.bucket)).toEqual(['2026-11-21 00:00:00.000']);
    expect(result).toEqual({ bucketRows: 1, summaryRows: 0, tombstones: 1, rejected: 1 });
    expect(job.rejects.map((r) => r.source)).toEqual(['collector:usage']);
  });

  it('an unreadable bucket stops every bucket tombstone; a refused summary row stops the summary tombstones', async () => {
    const job = usageJob({
      series: [
        { bucket: 'monday', results: [discounted] },
        { bucket: '2026-11-21T00:00:00Z', results: [discounted] },
      ],
      summary: [{ ...discounted, unit: null }],
      liveBuckets: [{ bucket_text: '2026-11-21 00:00:00.000', app: 'old', environment: '', machine_type: 'cpu', is_surge: false }],
      liveSummaries: [{ app: 'gone', environment: '', machine_type: 'cpu', is_surge: false }],
    });
    const result = await collectUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-21', to: '2026-11-22' });
    expect(result).toEqual({ bucketRows: 1, summaryRows: 0, tombstones: 0, rejected: 2 });
  });

  it('a collection that refused a row records no evidence for its days (a day is final only on whole reads)', async () => {
    // Two collections after the late-billing window that both refused the same row would otherwise record the same
    // (empty) fingerprint and mark the day final while a row of it was never stored.
    const refused = usageJob({ series: [{ bucket: '2026-11-21T00:00:00Z', results: [discounted, { ...discounted, app: 7 }] }] });
    await collectUsageChunk(refused.ctx, { timezone: 'UTC', from: '2026-11-21', to: '2026-11-22' });
    expect(refused.rows.cost_day_collections).toBeUndefined();
    const unreadable = usageJob({ series: [{ bucket: 'monday', results: [discounted] }] });
    await collectUsageChunk(unreadable.ctx, { timezone: 'UTC', from: '2026-11-21', to: '2026-11-22' });
    expect(unreadable.rows.cost_day_collections).toBeUndefined();
    // A bad bucket with no rows refuses nothing, and still is no whole read.
    const emptyBad = usageJob({ series: [{ bucket: 'monday', results: [] }, { bucket: '2026-11-21T00:00:00Z', results: [discounted] }] });
    await collectUsageChunk(emptyBad.ctx, { timezone: 'UTC', from: '2026-11-21', to: '2026-11-22' });
    expect(emptyBad.rows.cost_day_collections).toBeUndefined();
    const summaryOnly = usageJob({ series: [{ bucket: '2026-11-21T00:00:00Z', results: [discounted] }], summary: [{ ...discounted, cost: 'x' }] });
    await collectUsageChunk(summaryOnly.ctx, { timezone: 'UTC', from: '2026-11-21', to: '2026-11-22' });
    expect(summaryOnly.rows.cost_day_collections).toBeUndefined();
  });

  it('tombstones a key read in one bucket where it is stored in another bucket too', async () => {
    const job = usageJob({
      series: [{ bucket: '2026-11-21T00:00:00Z', results: [discounted] }],
      liveBuckets: [
        { bucket_text: '2026-11-21 00:00:00.000', app: 'img', environment: '', machine_type: 'gpu-a100', is_surge: true },
        { bucket_text: '2026-11-20 00:00:00.000', app: 'img', environment: '', machine_type: 'gpu-a100', is_surge: true },
      ],
    });
    const result = await collectUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-20', to: '2026-11-22' });
    expect(job.rows.usage_buckets.filter((r) => r.is_deleted === 1).map((r) => r.bucket)).toEqual(['2026-11-20 00:00:00.000']);
    expect(result.tombstones).toBe(1);
  });

  it('stores a row without an app under the empty name', async () => {
    const job = usageJob({ series: [{ bucket: '2026-11-21T00:00:00Z', results: [{ ...discounted, app: null }] }] });
    await collectUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-21', to: '2026-11-22' });
    expect(job.rows.usage_buckets.map((r) => [r.app, r.environment])).toEqual([['', '']]);
  });

  it('an empty list of apps asks for every app', async () => {
    const job = usageJob({ series: [{ bucket: '2026-11-21T00:00:00Z', results: [discounted] }] });
    const result = await collectUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-21', to: '2026-11-22', apps: [] });
    expect(job.calls.map((c) => [c.query.expand, c.query.app])).toEqual([
      ['time_series', undefined],
      ['summary', undefined],
    ]);
    expect(result.bucketRows).toBe(1);
  });

  it('refuses a range whose ends are not dates, naming which', async () => {
    const job = usageJob();
    await expect(collectUsageChunk(job.ctx, { timezone: 'UTC', from: 'monday', to: '2026-11-22' })).rejects.toThrow('from must be a date YYYY-MM-DD, got "monday"');
    await expect(collectUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-21', to: 'tuesday' })).rejects.toThrow('to must be a date YYYY-MM-DD, got "tuesday"');
  });

  it('keeps the parts of a day line apart in its fingerprint', async () => {
    const fingerprint = async (row: unknown) => {
      const job = usageJob({ series: [{ bucket: '2026-11-21T00:00:00Z', results: [row] }] });
      await collectUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-21', to: '2026-11-22' });
      return job.rows.cost_day_collections[0].fingerprint;
    };
    // 'ab' + '' and 'a' + 'b' are the same text run together.
    expect(await fingerprint({ ...discounted, app: 'ab', environment: '' })).not.toBe(await fingerprint({ ...discounted, app: 'a', environment: 'b' }));
  });

  it('counts rows the store refused as rejected, with malformed ones, and says which range', async () => {
    const job = fakeJob({
      pages: (_p, q) => (q.expand === 'time_series' ? [{ time_series: [{ bucket: '2026-11-21T00:00:00Z', results: [discounted, { ...discounted, app: 5 }] }] }] : [{ summary: [] }]),
      refuse: ['usage_buckets'],
    });
    const result = await collectUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-21', to: '2026-11-22' });
    expect(result.rejected).toBe(1 + 1);
    expect(job.warnings.map((w) => w.fields)).toEqual([{ timezone: 'UTC', from: '2026-11-21', to: '2026-11-22', malformed: 1, refused: 1 }]);
  });
});
