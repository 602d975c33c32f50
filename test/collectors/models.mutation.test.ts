// Issue 31: src/collectors/models.ts without a store (test/collectors/fake-job.ts), so that mutation testing can
// afford it. The oracle is the platform notes' model usage rows worked through by hand: rows of one key summed
// (legacy rows, only `cost`, share the price key 'legacy'), the price key `unit_price|percent_discount`, the key
// label from auth_method or else the structured detail, tombstones for stored keys the platform no longer returns
// (none when a bucket could not be read), 90-day billing-event calls and groups of 50 endpoint ids.
import { describe, expect, it } from 'vitest';
import { collectModelBillingEvents, collectModelCatalogue, collectModelPrices, collectModelUsageChunk } from '../../src/collectors/models.js';
import { PlatformError } from '../../src/platform/index.js';
import { fakeJob } from './fake-job.js';

const legacy = (qty: number, cost: number) => ({
  endpoint_id: 'flux/dev',
  unit: 'image',
  quantity: qty,
  unit_price: null,
  percent_discount: null,
  cost_subtotal: null,
  cost_discount: null,
  cost_total: null,
  cost,
  currency: 'USD',
  auth_method: null,
  auth_method_structured: null,
});
const priced = {
  endpoint_id: 'flux/pro',
  unit: 'image',
  quantity: 3,
  unit_price: 0.05,
  percent_discount: 10,
  cost_subtotal: 0.15,
  cost_discount: 0.015,
  cost_total: 0.135,
  cost: 0.135,
  currency: 'USD',
  auth_method: 'ci key',
  auth_method_structured: { detail: 'detail text', api_key_id: 'k1', login_username: 'ann' },
};
const structuredOnly = { ...priced, quantity: 1, cost_subtotal: 0.05, cost_discount: 0.005, cost_total: null, cost: 0.045, auth_method: null };

const KEY_FIELDS = ['endpoint_id', 'unit', 'currency', 'api_key_id', 'login_username', 'price_key'] as const;
const pick = (r: Record<string, unknown>, fields: readonly string[]) => Object.fromEntries(fields.map((f) => [f, r[f]]));

function usageJob(opts: { series?: unknown[]; summary?: unknown[]; liveBuckets?: unknown[]; liveSummaries?: unknown[] } = {}) {
  return fakeJob({
    pages: (_path, query) =>
      String(query.expand).startsWith('time_series')
        ? [{ has_more: false, time_series: opts.series ?? [] }]
        : [{ has_more: false, summary: opts.summary ?? [] }],
    query: (sql) => (sql.includes('model_usage_buckets') ? (opts.liveBuckets ?? []) : (opts.liveSummaries ?? [])),
  });
}

describe('collectModelUsageChunk', () => {
  it('sums rows of one key, keys priced rows by price and discount, and labels keys', async () => {
    const job = usageJob({
      series: [
        { bucket: '2026-11-01T00:00:00Z', results: [legacy(4, 0.1), priced, legacy(2, 0.05)] },
        { bucket: '2026-11-02T00:00:00Z', results: [structuredOnly] },
      ],
      summary: [legacy(6, 0.15), priced],
    });
    const result = await collectModelUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-01', to: '2026-11-03' });
    expect(job.calls).toEqual([
      { path: '/v1/models/usage', query: { start: '2026-11-01', end: '2026-11-03', timezone: 'UTC', timeframe: 'day', endpoint_id: undefined, expand: 'time_series,auth_method,auth_method_structured' }, scope: 'admin' },
      { path: '/v1/models/usage', query: { start: '2026-11-01', end: '2026-11-03', timezone: 'UTC', timeframe: 'day', endpoint_id: undefined, expand: 'summary,auth_method,auth_method_structured' }, scope: 'admin' },
    ]);
    const buckets = job.rows.model_usage_buckets;
    expect(buckets.map((r) => pick(r, ['bucket', 'bucket_date', 'bucket_offset_minutes', 'timeframe', 'timezone', ...KEY_FIELDS, 'api_key_label', 'unit_price', 'percent_discount', 'quantity', 'cost_subtotal', 'cost_discount', 'cost_total', 'platform_rows', 'is_deleted']))).toEqual([
      {
        bucket: '2026-11-01 00:00:00.000', bucket_date: '2026-11-01', bucket_offset_minutes: 0, timeframe: 'day', timezone: 'UTC',
        endpoint_id: 'flux/dev', unit: 'image', currency: 'USD', api_key_id: '', login_username: '', price_key: 'legacy', api_key_label: '',
        unit_price: null, percent_discount: null, quantity: '6', cost_subtotal: null, cost_discount: null, cost_total: '0.15', platform_rows: 2, is_deleted: 0,
      },
      {
        bucket: '2026-11-01 00:00:00.000', bucket_date: '2026-11-01', bucket_offset_minutes: 0, timeframe: 'day', timezone: 'UTC',
        endpoint_id: 'flux/pro', unit: 'image', currency: 'USD', api_key_id: 'k1', login_username: 'ann', price_key: '0.05|10', api_key_label: 'ci key',
        unit_price: '0.05', percent_discount: '10', quantity: '3', cost_subtotal: '0.15', cost_discount: '0.015', cost_total: '0.135', platform_rows: 1, is_deleted: 0,
      },
      {
        bucket: '2026-11-02 00:00:00.000', bucket_date: '2026-11-02', bucket_offset_minutes: 0, timeframe: 'day', timezone: 'UTC',
        endpoint_id: 'flux/pro', unit: 'image', currency: 'USD', api_key_id: 'k1', login_username: 'ann', price_key: '0.05|10', api_key_label: 'detail text',
        unit_price: '0.05', percent_discount: '10', quantity: '1', cost_subtotal: '0.05', cost_discount: '0.005', cost_total: '0.045', platform_rows: 1, is_deleted: 0,
      },
    ]);
    // The summed row keeps both platform rows' text.
    expect(buckets[0].raw).toBe(`${JSON.stringify(legacy(4, 0.1))}\n${JSON.stringify(legacy(2, 0.05))}`);
    expect(buckets[1].raw).toBe(JSON.stringify(priced));
    const summaries = job.rows.model_usage_summaries;
    expect(summaries.map((r) => [r.range_start, r.range_end, r.price_key, r.quantity, r.cost_total, r.is_deleted])).toEqual([
      ['2026-11-01', '2026-11-03', 'legacy', '6', '0.15', 0],
      ['2026-11-01', '2026-11-03', '0.05|10', '3', '0.135', 0],
    ]);
    // The day evidence: 11-01 two rows worth 0.15 + 0.135, 11-02 one worth 0.045.
    expect(job.rows.cost_day_collections.map((r) => [r.product, r.day, r.row_count, r.cost_total])).toEqual([
      ['model_api', '2026-11-01', 2, '0.285'],
      ['model_api', '2026-11-02', 1, '0.045'],
    ]);
    expect(result).toEqual({ bucketRows: 3, summaryRows: 2, tombstones: 0, rejected: 0, endpoints: new Set(['flux/dev', 'flux/pro']) });
    expect(job.added).toEqual([3 + 2 + 2]);
  });

  it('sums subtotals only while both are known', async () => {
    const a = { ...priced, auth_method: 'x' };
    const b = { ...priced, auth_method: 'x', cost_subtotal: null };
    const job = usageJob({ series: [{ bucket: '2026-11-01T00:00:00Z', results: [a, b] }] });
    await collectModelUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-01', to: '2026-11-02' });
    expect(job.rows.model_usage_buckets.map((r) => [r.quantity, r.cost_subtotal, r.cost_discount, r.cost_total, r.platform_rows])).toEqual([['6', null, '0.03', '0.27', 2]]);
  });

  it('tombstones stored keys the platform no longer returns, in the bucket and summary they were in', async () => {
    const gone = { endpoint_id: 'flux/old', unit: 'image', currency: 'USD', api_key_id: 'k9', login_username: '', price_key: '0.01|' };
    const stillThere = { endpoint_id: 'flux/pro', unit: 'image', currency: 'USD', api_key_id: 'k1', login_username: 'ann', price_key: '0.05|10' };
    const job = usageJob({
      series: [{ bucket: '2026-11-01T00:00:00-04:00', results: [priced] }],
      summary: [priced],
      liveBuckets: [
        { bucket_text: '2026-11-01 04:00:00.000', ...stillThere },
        { bucket_text: '2026-11-02 05:00:00.000', ...gone },
        // The same key in another bucket is gone there.
        { bucket_text: '2026-11-02 05:00:00.000', ...stillThere },
      ],
      liveSummaries: [stillThere, gone],
    });
    const result = await collectModelUsageChunk(job.ctx, { timezone: 'America/New_York', from: '2026-11-01', to: '2026-11-03' });
    expect(job.queries.map((q) => q.params)).toEqual([
      { timezone: 'America/New_York', from: '2026-11-01 04:00:00.000', to: '2026-11-03 05:00:00.000' },
      { timezone: 'America/New_York', start: '2026-11-01', end: '2026-11-03' },
    ]);
    const tombstones = job.rows.model_usage_buckets.filter((r) => r.is_deleted === 1);
    expect(tombstones.map((r) => ({ ...pick(r, ['bucket', 'bucket_offset_minutes', 'bucket_date', 'timeframe', 'timezone', ...KEY_FIELDS, 'api_key_label', 'unit_price', 'quantity', 'cost_total', 'cost_subtotal', 'platform_rows', 'raw']) }))).toEqual([
      { bucket: '2026-11-02 05:00:00.000', bucket_offset_minutes: -300, bucket_date: '2026-11-02', timeframe: 'day', timezone: 'America/New_York', ...gone, api_key_label: '', unit_price: null, quantity: '0', cost_total: '0', cost_subtotal: null, platform_rows: 0, raw: '' },
      { bucket: '2026-11-02 05:00:00.000', bucket_offset_minutes: -300, bucket_date: '2026-11-02', timeframe: 'day', timezone: 'America/New_York', ...stillThere, api_key_label: '', unit_price: null, quantity: '0', cost_total: '0', cost_subtotal: null, platform_rows: 0, raw: '' },
    ]);
    const summaryTombstones = job.rows.model_usage_summaries.filter((r) => r.is_deleted === 1);
    expect(summaryTombstones.map((r) => [r.range_start, r.range_end, r.timezone, ...KEY_FIELDS.map((f) => r[f]), r.cost_total])).toEqual([
      ['2026-11-01', '2026-11-03', 'America/New_York', ...KEY_FIELDS.map((f) => gone[f]), '0'],
    ]);
    expect(result.tombstones).toBe(3);
    expect(tombstones[0].version).toBe(job.rows.model_usage_buckets[0].version);
  });

  it('with endpoints named: calls of at most 50 ids, no tombstones and no day evidence', async () => {
    const endpoints = Array.from({ length: 51 }, (_, i) => `m/e${String(i).padStart(2, '0')}`);
    const job = usageJob({ series: [{ bucket: '2026-11-01T00:00:00Z', results: [priced] }], liveBuckets: [{ bucket_text: '2026-11-01 00:00:00.000', endpoint_id: 'x', unit: 'u', currency: 'USD', api_key_id: '', login_username: '', price_key: 'legacy' }] });
    const result = await collectModelUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-01', to: '2026-11-02', endpoints });
    expect(job.calls.filter((c) => String(c.query.expand).startsWith('time_series')).map((c) => (c.query.endpoint_id as string[]).length)).toEqual([50, 1]);
    expect(job.queries).toEqual([]);
    expect(job.rows.cost_day_collections).toBeUndefined();
    // Each group's answer is the same row: summed over the two calls.
    expect(result).toEqual({ bucketRows: 1, summaryRows: 0, tombstones: 0, rejected: 0, endpoints: new Set(['flux/pro']) });
    expect(job.rows.model_usage_buckets.map((r) => [r.quantity, r.platform_rows])).toEqual([['6', 2]]);
  });

  it('an unreadable bucket stops bucket tombstones and the day evidence; a refused summary row stops summary tombstones', async () => {
    const gone = { endpoint_id: 'flux/old', unit: 'image', currency: 'USD', api_key_id: '', login_username: '', price_key: 'legacy' };
    const job = usageJob({
      series: [
        { bucket: 'yesterday', results: [priced] },
        { bucket: '2026-11-01T00:00:00Z', results: [priced] },
      ],
      summary: [{ ...priced, quantity: 'three' }],
      liveBuckets: [{ bucket_text: '2026-11-01 00:00:00.000', ...gone }],
      liveSummaries: [gone],
    });
    const result = await collectModelUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-01', to: '2026-11-02' });
    expect(job.rows.model_usage_buckets.filter((r) => r.is_deleted === 1)).toEqual([]);
    expect(job.rows.model_usage_summaries).toBeUndefined();
    expect(job.rows.cost_day_collections).toBeUndefined();
    expect(result).toMatchObject({ bucketRows: 1, summaryRows: 0, tombstones: 0, rejected: 2 });
    expect(job.rejects.map((r) => r.source)).toEqual(['collector:models', 'collector:models']);
  });

  it('a refused row keeps its bucket from tombstones, not the other buckets', async () => {
    const gone = { endpoint_id: 'flux/old', unit: 'image', currency: 'USD', api_key_id: '', login_username: '', price_key: 'legacy' };
    const job = usageJob({
      series: [
        { bucket: '2026-11-01T00:00:00Z', results: [{ ...priced, unit: 7 }] },
        { bucket: '2026-11-02T00:00:00Z', results: [priced] },
      ],
      liveBuckets: [
        { bucket_text: '2026-11-01 00:00:00.000', ...gone },
        { bucket_text: '2026-11-02 00:00:00.000', ...gone },
      ],
    });
    const result = await collectModelUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-01', to: '2026-11-03' });
    expect(job.rows.model_usage_buckets.filter((r) => r.is_deleted === 1).map((r) => r.bucket)).toEqual(['2026-11-02 00:00:00.000']);
    expect(job.rows.cost_day_collections).toBeUndefined();
    expect(result.rejected).toBe(1);
  });
});

describe('collectModelCatalogue', () => {
  it('stores each model with its metadata text, string tags and update time; returns the endpoint ids', async () => {
    const models = [
      { endpoint_id: 'flux/pro', metadata: { display_name: 'Flux Pro', category: 'image', description: 'd', status: 'live', tags: ['a', 3, 'b'], updated_at: '2026-11-01T10:00:00+01:00' } },
      { endpoint_id: 'flux/dev', metadata: { display_name: 5, tags: 'x', updated_at: 7 } },
      { endpoint_id: 'flux/old' },
    ];
    const job = fakeJob({ pages: () => [{ has_more: false, models }] });
    expect(await collectModelCatalogue(job.ctx)).toEqual(['flux/pro', 'flux/dev', 'flux/old']);
    expect(job.calls).toEqual([{ path: '/v1/models', query: { limit: 100 }, scope: undefined }]);
    expect(job.rows.models.map((r) => pick(r, ['endpoint_id', 'display_name', 'category', 'description', 'status', 'tags', 'updated_at']))).toEqual([
      { endpoint_id: 'flux/pro', display_name: 'Flux Pro', category: 'image', description: 'd', status: 'live', tags: ['a', 'b'], updated_at: '2026-11-01 09:00:00.000' },
      { endpoint_id: 'flux/dev', display_name: '', category: '', description: '', status: '', tags: [], updated_at: null },
      { endpoint_id: 'flux/old', display_name: '', category: '', description: '', status: '', tags: [], updated_at: null },
    ]);
    expect(job.rows.models[0].raw).toBe(JSON.stringify(models[0]));
  });
});

describe('collectModelPrices', () => {
  it('asks for prices 50 endpoint ids at a time and stores each observation at the run time', async () => {
    const endpoints = Array.from({ length: 51 }, (_, i) => `m/e${i}`);
    const job = fakeJob({
      pages: (_p, q) => [{ has_more: false, prices: (q.endpoint_id as string[]).slice(0, 1).map((e) => ({ endpoint_id: e, unit_price: 0.0000125, unit: 'image', currency: 'USD' })) }],
      now: new Date('2026-11-21T08:30:00Z'),
    });
    expect(await collectModelPrices(job.ctx, endpoints)).toBe(2);
    expect(job.calls.map((c) => [c.path, (c.query.endpoint_id as string[]).length])).toEqual([
      ['/v1/models/pricing', 50],
      ['/v1/models/pricing', 1],
    ]);
    expect(job.rows.model_prices).toEqual([
      { endpoint_id: 'm/e0', unit_price: '0.0000125', unit: 'image', currency: 'USD', observed_at: '2026-11-21 08:30:00.000' },
      { endpoint_id: 'm/e50', unit_price: '0.0000125', unit: 'image', currency: 'USD', observed_at: '2026-11-21 08:30:00.000' },
    ]);
  });
});

describe('collectModelBillingEvents', () => {
  const DAY = 86_400_000;
  const from = Date.parse('2026-08-01T00:00:00Z');
  const event = {
    request_id: 'q1', endpoint_id: 'flux/pro', timestamp: '2026-08-02T10:00:00Z', output_units: 2, unit_price: 0.05, percent_discount: 10,
    cost_subtotal: 0.1, cost_discount: 0.01, cost_total: 0.09, cost_estimate_nano_usd: 90_000_000.6,
  };

  it('calls 90 days at a time with an admin key, and stores each good event', async () => {
    const job = fakeJob({
      pages: (_p, q) => (q.start === '2026-08-01T00:00:00.000Z' ? [{ has_more: false, billing_events: [event, { ...event, request_id: 'q2', cost_estimate_nano_usd: null, cost_total: null }] }] : [{ has_more: false, billing_events: [] }]),
    });
    const result = await collectModelBillingEvents(job.ctx, ['flux/pro'], from, from + 100 * DAY);
    expect(result).toEqual({ served: true, value: 2 });
    expect(job.calls.map((c) => [c.path, c.query.start, c.query.end, c.query.limit, c.scope, c.query.endpoint_id])).toEqual([
      ['/v1/models/billing-events', '2026-08-01T00:00:00.000Z', '2026-10-30T00:00:00.000Z', 10_000, 'admin', ['flux/pro']],
      ['/v1/models/billing-events', '2026-10-30T00:00:00.000Z', '2026-11-09T00:00:00.000Z', 10_000, 'admin', ['flux/pro']],
    ]);
    expect(job.rows.model_billing_events.map((r) => pick(r, ['request_id', 'endpoint_id', 'timestamp', 'output_units', 'unit_price', 'percent_discount', 'cost_subtotal', 'cost_discount', 'cost_total', 'cost_estimate_nano_usd']))).toEqual([
      { request_id: 'q1', endpoint_id: 'flux/pro', timestamp: '2026-08-02 10:00:00.000', output_units: '2', unit_price: '0.05', percent_discount: '10', cost_subtotal: '0.1', cost_discount: '0.01', cost_total: '0.09', cost_estimate_nano_usd: 90_000_001 },
      { request_id: 'q2', endpoint_id: 'flux/pro', timestamp: '2026-08-02 10:00:00.000', output_units: '2', unit_price: '0.05', percent_discount: '10', cost_subtotal: '0.1', cost_discount: '0.01', cost_total: null, cost_estimate_nano_usd: null },
    ]);
  });

  it('refuses an event with a bad field or time on its own, with the reason', async () => {
    const job = fakeJob({ pages: () => [{ has_more: false, billing_events: [{ ...event, timestamp: 'noon' }, { ...event, request_id: 7 }, event] }] });
    expect(await collectModelBillingEvents(job.ctx, ['flux/pro'], from, from + DAY)).toEqual({ served: true, value: 1 });
    expect(job.rejects[0]).toEqual({ source: 'collector:models', reason: 'timestamp: not an ISO 8601 time: "noon"', raw: JSON.stringify({ ...event, timestamp: 'noon' }) });
    expect(job.rejects[1].reason).toContain('request_id');
    expect(job.rejects).toHaveLength(2);
  });

  it('a platform that does not serve the events (501) is noted, and nothing is stored', async () => {
    const notServed = new PlatformError({ message: 'no', status: 501, type: 'not_implemented', retryable: false, scope: 'admin', keyUsed: 'admin', method: 'GET', path: '/v1/models/billing-events' });
    const job = fakeJob({
      pages: () => {
        throw notServed;
      },
    });
    expect(await collectModelBillingEvents(job.ctx, ['flux/pro'], from, from + DAY)).toEqual({ served: false, status: 501 });
    expect(job.notes).toEqual(['/v1/models/billing-events not served (the platform answered 501): skipped']);
    expect(job.rows.model_billing_events).toBeUndefined();
  });

  it('a 404 the route answers again without endpoint ids is confirmed with one day up to the end, limit 1', async () => {
    const notFound = new PlatformError({ message: 'no', status: 404, type: 'not_found', retryable: false, scope: 'admin', keyUsed: 'admin', method: 'GET', path: '/v1/models/billing-events' });
    const job = fakeJob({
      pages: (_p, q) => {
        if (q.endpoint_id) throw notFound;
        return [{ has_more: false, billing_events: [] }];
      },
    });
    await expect(collectModelBillingEvents(job.ctx, ['flux/unknown'], from, from + DAY)).rejects.toBe(notFound);
    expect(job.calls[1]).toEqual({ path: '/v1/models/billing-events', query: { start: '2026-08-01T00:00:00.000Z', end: '2026-08-02T00:00:00.000Z', limit: 1 }, scope: 'admin' });
  });
});

describe('models collector: what the first mutation run left', () => {
  it('a priced row without a unit price or discount keys on what it has, and is not legacy', async () => {
    const noPrice = { ...priced, unit_price: null, auth_method: 'k' };
    const noDiscount = { ...priced, percent_discount: null, auth_method: 'k' };
    const job = usageJob({ series: [{ bucket: '2026-11-01T00:00:00Z', results: [noPrice, noDiscount] }] });
    await collectModelUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-01', to: '2026-11-02' });
    expect(job.rows.model_usage_buckets.map((r) => r.price_key)).toEqual(['|10', '0.05|']);
  });

  it('a subtotal after an unknown one stays unknown', async () => {
    const a = { ...priced, auth_method: 'x', cost_subtotal: null };
    const b = { ...priced, auth_method: 'x' };
    const job = usageJob({ series: [{ bucket: '2026-11-01T00:00:00Z', results: [a, b] }] });
    await collectModelUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-01', to: '2026-11-02' });
    expect(job.rows.model_usage_buckets.map((r) => r.cost_subtotal)).toEqual([null]);
  });

  it('refuses a range whose ends are not dates, naming which; an empty endpoint list asks for all', async () => {
    const job = usageJob();
    await expect(collectModelUsageChunk(job.ctx, { timezone: 'UTC', from: 'x', to: '2026-11-02' })).rejects.toThrow('from must be a date YYYY-MM-DD, got "x"');
    await expect(collectModelUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-01', to: 'y' })).rejects.toThrow('to must be a date YYYY-MM-DD, got "y"');
    const all = usageJob({ series: [{ bucket: '2026-11-01T00:00:00Z', results: [priced] }] });
    const result = await collectModelUsageChunk(all.ctx, { timezone: 'UTC', from: '2026-11-01', to: '2026-11-02', endpoints: [] });
    expect(all.calls.map((c) => c.query.endpoint_id)).toEqual([undefined, undefined]);
    expect(result.bucketRows).toBe(1);
  });

  it('a refused summary row alone leaves no day evidence', async () => {
    const job = usageJob({ series: [{ bucket: '2026-11-01T00:00:00Z', results: [priced] }], summary: [{ ...priced, quantity: 'x' }] });
    await collectModelUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-01', to: '2026-11-02' });
    expect(job.rows.cost_day_collections).toBeUndefined();
  });

  it('day evidence tells rows apart by quantity and total, not only by their text run together', async () => {
    const fingerprint = async (quantity: number, cost: number) => {
      const job = usageJob({ series: [{ bucket: '2026-11-01T00:00:00Z', results: [{ ...legacy(quantity, cost) }] }] });
      await collectModelUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-01', to: '2026-11-02' });
      return job.rows.cost_day_collections[0].fingerprint;
    };
    // 12 and 3 run together as 1 and 23 do; the totals differ too.
    expect(await fingerprint(12, 3)).not.toBe(await fingerprint(1, 23));
    expect(await fingerprint(12, 3)).not.toBe(await fingerprint(12, 4));
  });

  it('counts rows the store refused as rejected, and each part says what it was writing', async () => {
    const job = fakeJob({
      pages: (path, q) =>
        path === '/v1/models/usage'
          ? String(q.expand).startsWith('time_series')
            ? [{ time_series: [{ bucket: '2026-11-01T00:00:00Z', results: [priced, { ...priced, unit: 5 }] }] }]
            : [{ summary: [] }]
          : path === '/v1/models'
            ? [{ models: [{ endpoint_id: 'flux/pro' }] }]
            : path === '/v1/models/pricing'
              ? [{ prices: [{ endpoint_id: 'flux/pro', unit_price: 0.05, unit: 'image', currency: 'USD' }] }]
              : [{ billing_events: [{ request_id: 'q', endpoint_id: 'flux/pro', timestamp: '2026-11-01T00:00:00Z' }] }],
      refuse: ['model_usage_buckets', 'models', 'model_prices', 'model_billing_events'],
    });
    const result = await collectModelUsageChunk(job.ctx, { timezone: 'UTC', from: '2026-11-01', to: '2026-11-02' });
    expect(result.rejected).toBe(1 + 1);
    await collectModelCatalogue(job.ctx);
    await collectModelPrices(job.ctx, ['flux/pro']);
    await collectModelBillingEvents(job.ctx, ['flux/pro'], Date.parse('2026-11-01T00:00:00Z'), Date.parse('2026-11-02T00:00:00Z'));
    expect(job.warnings).toEqual([
      { fields: { timezone: 'UTC', from: '2026-11-01', to: '2026-11-02', malformed: 1, refused: 1 }, message: 'some records of collector:models were not stored; they are in ingest_rejects with the reason' },
      { fields: { part: 'catalogue', malformed: 0, refused: 1 }, message: 'some records of collector:models were not stored; they are in ingest_rejects with the reason' },
      { fields: { part: 'prices', malformed: 0, refused: 1 }, message: 'some records of collector:models were not stored; they are in ingest_rejects with the reason' },
      { fields: { part: 'billing-events', malformed: 0, refused: 1 }, message: 'some records of collector:models were not stored; they are in ingest_rejects with the reason' },
    ]);
  });

  it('billing events of exactly 90 days are one call', async () => {
    const job = fakeJob({ pages: () => [{ billing_events: [] }] });
    const from = Date.parse('2026-08-01T00:00:00Z');
    await collectModelBillingEvents(job.ctx, ['flux/pro'], from, from + 90 * 86_400_000);
    expect(job.calls.map((c) => [c.query.start, c.query.end])).toEqual([['2026-08-01T00:00:00.000Z', '2026-10-30T00:00:00.000Z']]);
  });
});

