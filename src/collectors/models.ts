// Model-API spend: usage per timezone (time series and summary, per key), the catalogue, the caller's prices
// and the per-call billing events. The usage part follows collectors/usage.ts: month chunks, versions and
// tombstones, so a re-collection replaces a range exactly.
import { DateTime } from 'luxon';
import type { JobContext } from './job.js';
import { parseLocalDate } from './time-args.js';
import {
  chunk,
  ModelBillingEvent,
  ModelBillingEventsPage,
  ModelPricesPage,
  ModelsPage,
  ModelUsageRow,
  platformPaths,
} from '../platform/index.js';
import {
  liveModelBucketKeys,
  liveModelSummaryKeys,
  MODEL_SCALES,
  modelBillingEvents,
  modelCatalogue,
  modelPrices,
  modelUsageBuckets,
  modelUsageSummaries,
  type ModelBillingEventRow,
  type ModelCatalogueRow,
  type ModelPriceRow,
  type ModelRowKey,
  type ModelUsageBucketRow,
  type ModelUsageSummaryRow,
} from '../store/tables/model-usage.js';
import { addDecimals, isoToDateTime64, nextVersionMs, toDateTime64, toDecimalOrNull, toDecimalScale } from '../values.js';
import { collectorRejects, commitRows, describeZodIssue, tableWrite } from './common.js';
import { whenServed, type OptionalResult } from './optional-endpoint.js';
import { dayCollectionWrite } from './day-collections.js';
import { readSeriesAndSummary, type UsageRange } from './usage.js';

const USAGE_EXPAND = 'auth_method,auth_method_structured';
/** The platform serves at most 90 days of billing events per call. */
const BILLING_EVENTS_MAX_DAYS = 90;

type ValueColumns = Omit<ModelUsageBucketRow, 'timezone' | 'timeframe' | 'bucket' | 'bucket_offset_minutes' | 'bucket_date' | 'version' | 'is_deleted' | 'collected_at'>;

const rowKeyText = (k: ModelRowKey & { bucket?: string }): string =>
  // Stryker disable next-line StringLiteral: summary keys have no bucket on either side (read or stored), so any stand-in text compares equal
  JSON.stringify([k.bucket ?? '', k.endpoint_id, k.unit, k.currency, k.api_key_id, k.login_username, k.price_key]);

/** The columns of one platform row; legacy rows (only `cost`) share the price key 'legacy'. */
function modelColumns(row: ModelUsageRow, raw: unknown): ValueColumns {
  const legacy = row.cost_total == null && row.unit_price == null;
  const structured = row.auth_method_structured;
  const unitPrice = toDecimalOrNull(row.unit_price, MODEL_SCALES.unit_price);
  const discount = toDecimalOrNull(row.percent_discount, MODEL_SCALES.percent_discount);
  return {
    endpoint_id: row.endpoint_id,
    unit: row.unit,
    currency: row.currency,
    api_key_id: structured?.api_key_id ?? '',
    login_username: structured?.login_username ?? '',
    api_key_label: row.auth_method ?? structured?.detail ?? '',
    price_key: legacy ? 'legacy' : `${unitPrice ?? ''}|${discount ?? ''}`,
    unit_price: unitPrice,
    percent_discount: discount,
    quantity: toDecimalScale(row.quantity, MODEL_SCALES.quantity),
    cost_subtotal: toDecimalOrNull(row.cost_subtotal, MODEL_SCALES.cost),
    cost_discount: toDecimalOrNull(row.cost_discount, MODEL_SCALES.cost),
    cost_total: toDecimalScale(row.cost_total ?? row.cost, MODEL_SCALES.cost),
    platform_rows: 1,
    raw: JSON.stringify(raw),
  };
}

/**
 * Rows with the same key are summed, never overwritten: legacy rows of one key at different discounts (or
 * prices) carry nothing that tells them apart, and each is part of the bill.
 */
function sumSameKey<R extends ValueColumns>(rows: R[], keyOf: (r: R) => string): R[] {
  const byKey = new Map<string, R>();
  for (const r of rows) {
    const k = keyOf(r);
    const prev = byKey.get(k);
    if (!prev) {
      byKey.set(k, r);
      continue;
    }
    const sum = (a: string | null, b: string | null) => (a === null || b === null ? null : addDecimals([a, b], MODEL_SCALES.cost));
    byKey.set(k, {
      ...prev,
      quantity: addDecimals([prev.quantity, r.quantity], MODEL_SCALES.quantity),
      cost_subtotal: sum(prev.cost_subtotal, r.cost_subtotal),
      cost_discount: sum(prev.cost_discount, r.cost_discount),
      cost_total: addDecimals([prev.cost_total, r.cost_total], MODEL_SCALES.cost),
      platform_rows: prev.platform_rows + r.platform_rows,
      raw: `${prev.raw}\n${r.raw}`,
    });
  }
  return [...byKey.values()];
}

export interface ModelUsageChunkResult {
  bucketRows: number;
  summaryRows: number;
  tombstones: number;
  rejected: number;
  endpoints: Set<string>;
}

/** One chunk (at most a calendar month) of model usage in one timezone, with the platform's summary for it. */
export async function collectModelUsageChunk(ctx: JobContext, range: UsageRange & { endpoints?: string[] }): Promise<ModelUsageChunkResult> {
  const { timezone } = range;
  const start = parseLocalDate(range.from, timezone, 'from');
  const end = parseLocalDate(range.to, timezone, 'to');
  const version = nextVersionMs();
  const collectedAt = toDateTime64(Date.now());
  const groups = range.endpoints && range.endpoints.length > 0 ? chunk(range.endpoints, 50) : [undefined];
  const rejects = collectorRejects('models');
  let buckets: ModelUsageBucketRow[] = [];
  let summaries: ModelUsageSummaryRow[] = [];
  const bucketsWithRejects = new Set<string>();
  let unreadableBucket = false;
  let summaryRejected = false;

  for (const endpoints of groups) {
    const read = await readSeriesAndSummary(ctx, {
      path: platformPaths.modelsUsage,
      query: { start: range.from, end: range.to, timezone, timeframe: 'day', endpoint_id: endpoints },
      expand: `,${USAGE_EXPAND}`,
      timezone,
      schema: ModelUsageRow,
      rejects,
    });
    for (const { bucket, row, raw } of read.buckets) {
      buckets.push({
        timezone,
        timeframe: 'day',
        bucket: bucket.utc,
        bucket_offset_minutes: bucket.offsetMinutes,
        bucket_date: bucket.localDate,
        ...modelColumns(row, raw),
        version,
        is_deleted: 0,
        collected_at: collectedAt,
      });
    }
    for (const { row, raw } of read.summary) {
      summaries.push({ timezone, range_start: range.from, range_end: range.to, ...modelColumns(row, raw), version, is_deleted: 0, collected_at: collectedAt });
    }
    for (const b of read.bucketsWithRejects) bucketsWithRejects.add(b);
    unreadableBucket ||= read.unreadableBucket;
    summaryRejected ||= read.summaryRejected;
  }
  buckets = sumSameKey(buckets, (r) => rowKeyText(r));
  summaries = sumSameKey(summaries, (r) => rowKeyText(r));

  const seenBuckets = new Set(buckets.map((r) => rowKeyText(r)));
  const liveBuckets = range.endpoints ? [] : await liveModelBucketKeys(ctx.runtime.store, {
    timezone,
    from: toDateTime64(start.toJSDate()),
    to: toDateTime64(end.toJSDate()),
  });
  const bucketTombstones: ModelUsageBucketRow[] = (unreadableBucket ? [] : liveBuckets)
    .filter((k) => !bucketsWithRejects.has(k.bucket_text) && !seenBuckets.has(rowKeyText({ ...k, bucket: k.bucket_text })))
    .map((k) => {
      const utc = DateTime.fromSQL(k.bucket_text, { zone: 'utc' });
      const local = utc.setZone(timezone);
      return {
        timezone,
        timeframe: 'day',
        bucket: toDateTime64(utc.toJSDate()),
        bucket_offset_minutes: local.offset,
        bucket_date: local.toISODate()!,
        ...tombstoneColumns(k, version, collectedAt),
      };
    });
  const seenSummaries = new Set(summaries.map((r) => rowKeyText(r)));
  const liveSummaries = range.endpoints ? [] : await liveModelSummaryKeys(ctx.runtime.store, { timezone, start: range.from, end: range.to });
  const summaryTombstones: ModelUsageSummaryRow[] = (summaryRejected ? [] : liveSummaries)
    .filter((k) => !seenSummaries.has(rowKeyText(k)))
    .map((k) => ({ timezone, range_start: range.from, range_end: range.to, ...tombstoneColumns(k, version, collectedAt) }));

  const malformed = rejects.rows.length;
  const { refused } = await commitRows(
    ctx,
    [
      tableWrite(modelUsageBuckets, [...buckets, ...bucketTombstones]),
      tableWrite(modelUsageSummaries, [...summaries, ...summaryTombstones]),
      // What this collection read of each day (all endpoints, every row read): the evidence a day is final.
      ...(range.endpoints || malformed > 0 || bucketsWithRejects.size > 0 || unreadableBucket
        ? []
        : [dayCollectionWrite('model_api', range, buckets.map((r) => ({ day: r.bucket_date, costTotal: String(r.cost_total), line: [rowKeyText(r), r.quantity, r.cost_total].join('|') })), ctx.now())]),
    ],
    rejects,
    { timezone, from: range.from, to: range.to },
  );
  return {
    bucketRows: buckets.length,
    summaryRows: summaries.length,
    tombstones: bucketTombstones.length + summaryTombstones.length,
    rejected: malformed + refused,
    endpoints: new Set(buckets.map((b) => b.endpoint_id)),
  };
}

function tombstoneColumns(k: ModelRowKey, version: number, collectedAt: string) {
  return {
    ...k,
    api_key_label: '',
    unit_price: null,
    percent_discount: null,
    quantity: '0',
    cost_subtotal: null,
    cost_discount: null,
    cost_total: '0',
    platform_rows: 0,
    raw: '',
    version,
    is_deleted: 1 as const,
    collected_at: collectedAt,
  };
}

/** The model catalogue (display name, category, status) into `models`; returns the endpoint ids. */
export async function collectModelCatalogue(ctx: JobContext): Promise<string[]> {
  const version = nextVersionMs();
  const collectedAt = toDateTime64(Date.now());
  const rows: ModelCatalogueRow[] = [];
  for await (const page of ctx.platform.paginate(platformPaths.models, { query: { limit: 100 }, schema: ModelsPage, itemsField: 'models', ctx: ctx.call })) {
    for (const m of page.models) {
      const meta = (m.metadata ?? {}) as Record<string, unknown>;
      const text = (v: unknown) => (typeof v === 'string' ? v : '');
      rows.push({
        endpoint_id: m.endpoint_id,
        display_name: text(meta.display_name),
        category: text(meta.category),
        description: text(meta.description),
        status: text(meta.status),
        tags: Array.isArray(meta.tags) ? meta.tags.filter((t): t is string => typeof t === 'string') : [],
        updated_at: typeof meta.updated_at === 'string' ? isoToDateTime64(meta.updated_at) : null,
        raw: JSON.stringify(m),
        version,
        collected_at: collectedAt,
      });
    }
  }
  await commitRows(ctx, [tableWrite(modelCatalogue, rows)], collectorRejects('models'), { part: 'catalogue' });
  return rows.map((r) => r.endpoint_id);
}

/** The caller's current price of each endpoint, one observation each (API scope). */
export async function collectModelPrices(ctx: JobContext, endpoints: string[]): Promise<number> {
  const observedAt = toDateTime64(ctx.now());
  const rows: ModelPriceRow[] = [];
  for (const group of chunk(endpoints, 50)) {
    for await (const page of ctx.platform.paginate(platformPaths.modelsPricing, { query: { endpoint_id: group }, schema: ModelPricesPage, ctx: ctx.call })) {
      for (const p of page.prices) {
        rows.push({ endpoint_id: p.endpoint_id, unit_price: toDecimalScale(p.unit_price, MODEL_SCALES.unit_price), unit: p.unit, currency: p.currency, observed_at: observedAt });
      }
    }
  }
  await commitRows(ctx, [tableWrite(modelPrices, rows)], collectorRejects('models'), { part: 'prices' });
  return rows.length;
}

/**
 * Prices where the platform serves them: GET /v1/models/pricing is only in the platform notes (rule 3: optional), so
 * a 404 or 501 is noted once for the run and the job goes on to the billing events (issue 50.2: on a platform
 * serving only the interface the models job failed every run at this step).
 */
export function collectModelPricesWhenServed(ctx: JobContext, endpoints: string[]): Promise<OptionalResult<number>> {
  return whenServed(ctx, platformPaths.modelsPricing, () => collectModelPrices(ctx, endpoints));
}

/**
 * Billing events of [fromMs, toMs) (split into 90-day calls), one row per request id: the latest wins. Where the
 * platform does not serve them (404, 501), nothing is written and the run notes it (optional-endpoint.ts): usage,
 * prices and the catalogue are the bill; the events only itemise it.
 */
export function collectModelBillingEvents(ctx: JobContext, endpoints: string[], fromMs: number, toMs: number): Promise<OptionalResult<number>> {
  return whenServed(ctx, platformPaths.modelsBillingEvents, () => readModelBillingEvents(ctx, endpoints, fromMs, toMs), {
    // The endpoint ids passed the pricing call just before; a 404 that the route answers again without them is
    // the route's own.
    confirm: async () => {
      const query = { start: new Date(toMs - 86_400_000).toISOString(), end: new Date(toMs).toISOString(), limit: 1 };
      for await (const page of ctx.platform.paginate(platformPaths.modelsBillingEvents, { query, scope: 'admin', schema: ModelBillingEventsPage, ctx: ctx.call })) {
        return page;
      }
    },
  });
}

async function readModelBillingEvents(ctx: JobContext, endpoints: string[], fromMs: number, toMs: number): Promise<number> {
  const version = nextVersionMs();
  const collectedAt = toDateTime64(Date.now());
  const rejects = collectorRejects('models');
  const rows: ModelBillingEventRow[] = [];
  for (let a = fromMs; a < toMs; a += BILLING_EVENTS_MAX_DAYS * 86_400_000) {
    const b = Math.min(toMs, a + BILLING_EVENTS_MAX_DAYS * 86_400_000);
    for (const group of chunk(endpoints, 50)) {
      for await (const page of ctx.platform.paginate(platformPaths.modelsBillingEvents, {
        query: { endpoint_id: group, start: new Date(a).toISOString(), end: new Date(b).toISOString(), limit: 10_000 },
        scope: 'admin',
        schema: ModelBillingEventsPage,
        ctx: ctx.call,
      })) {
        for (const raw of page.billing_events) {
          const parsed = ModelBillingEvent.safeParse(raw);
          const timestamp = parsed.success ? isoToDateTime64(parsed.data.timestamp) : null;
          if (!parsed.success || !timestamp) {
            rejects.add(raw, parsed.success ? `timestamp: not an ISO 8601 time: ${JSON.stringify(parsed.data.timestamp)}` : describeZodIssue(parsed.error));
            continue;
          }
          const e = parsed.data;
          rows.push({
            request_id: e.request_id,
            endpoint_id: e.endpoint_id,
            timestamp,
            output_units: toDecimalOrNull(e.output_units, MODEL_SCALES.quantity),
            unit_price: toDecimalOrNull(e.unit_price, MODEL_SCALES.unit_price),
            percent_discount: toDecimalOrNull(e.percent_discount, MODEL_SCALES.percent_discount),
            cost_subtotal: toDecimalOrNull(e.cost_subtotal, MODEL_SCALES.cost),
            cost_discount: toDecimalOrNull(e.cost_discount, MODEL_SCALES.cost),
            cost_total: toDecimalOrNull(e.cost_total, MODEL_SCALES.cost),
            cost_estimate_nano_usd: e.cost_estimate_nano_usd == null ? null : Math.round(e.cost_estimate_nano_usd),
            raw: JSON.stringify(raw),
            version,
            collected_at: collectedAt,
          });
        }
      }
    }
  }
  await commitRows(ctx, [tableWrite(modelBillingEvents, rows)], rejects, { part: 'billing-events' });
  return rows.length;
}
