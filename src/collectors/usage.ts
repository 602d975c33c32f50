import { DateTime } from 'luxon';
import type { z } from 'zod';
import type { JobContext } from './job.js';
import { parseLocalDate } from './time-args.js';
import { chunk, platformPaths, SeriesPage, UsageRow } from '../platform/index.js';
import { liveUsageBucketKeys, USAGE_SCALES, usageBuckets, type UsageBucketRow } from '../store/tables/usage-buckets.js';
import { liveUsageSummaryKeys, usageSummaries, type UsageSummaryRow } from '../store/tables/usage-summaries.js';
import { nextVersionMs, toDateTime64, toDecimalOrNull, toDecimalScale } from '../values.js';
import { dayCollectionWrite } from './day-collections.js';
import { collectorRejects, commitRows, tableWrite, describeZodIssue, type CollectorRejects } from './common.js';

export interface UsageRange {
  timezone: string;
  /** Local date in `timezone`, inclusive. */
  from: string;
  /** Local date in `timezone`, exclusive (as the platform's `end`). */
  to: string;
  /** Only these apps (split into calls of at most 50 names); all apps when omitted. */
  apps?: string[];
}

export interface UsageChunkResult {
  bucketRows: number;
  summaryRows: number;
  tombstones: number;
  rejected: number;
}

/** Splits [from, to) at calendar-month boundaries: the platform's summary for a chunk is then a month (to date). */
export function monthChunks(from: string, to: string, timezone: string): Array<{ from: string; to: string }> {
  let start = parseLocalDate(from, timezone, '--from');
  const end = parseLocalDate(to, timezone, '--to');
  if (end <= start) throw new Error(`--to (${to}) must be after --from (${from}); --to is exclusive`);
  const chunks: Array<{ from: string; to: string }> = [];
  while (start < end) {
    const next = DateTime.min(start.plus({ months: 1 }).startOf('month'), end);
    chunks.push({ from: start.toISODate()!, to: next.toISODate()! });
    start = next;
  }
  return chunks;
}

/**
 * The window a scheduled run collects: from the 1st of the month `recollectDays` days ago, to today. Whole
 * months, because the summary the finance report reconciles with is [month start, end): a month that just ended
 * is collected again (summary included) while its last days still change.
 */
export function scheduledWindow(now: Date, timezone: string, recollectDays: number): { from: string; to: string } {
  const today = DateTime.fromJSDate(now, { zone: timezone }).startOf('day');
  const from = today.minus({ days: recollectDays }).startOf('month');
  return { from: from.toISODate()!, to: today.plus({ days: 1 }).toISODate()! };
}

function keyOf(r: { bucket?: string; app: string; environment: string; machine_type: string; is_surge: boolean }): string {
  // Stryker disable next-line StringLiteral: summary keys have no bucket on either side (read or stored), so any stand-in text compares equal
  return JSON.stringify([r.bucket ?? '', r.app, r.environment, r.machine_type, r.is_surge]);
}

/**
 * Collects one chunk (at most a calendar month) of usage in one timezone: the daily time series into
 * usage_buckets and the platform's summary for the same range into usage_summaries. Resolves once every
 * row is committed. Rows the platform no longer returns get tombstones, so a re-collection replaces the
 * range exactly.
 */
export async function collectUsageChunk(ctx: JobContext, range: UsageRange): Promise<UsageChunkResult> {
  const { timezone } = range;
  const start = parseLocalDate(range.from, timezone, 'from');
  const end = parseLocalDate(range.to, timezone, 'to');
  const version = nextVersionMs();
  const collectedAt = toDateTime64(Date.now());
  const appGroups = range.apps && range.apps.length > 0 ? chunk(range.apps, 50) : [undefined];
  const rejects = collectorRejects('usage');
  const buckets: UsageBucketRow[] = [];
  const summaries: UsageSummaryRow[] = [];
  // A row refused this time is not taken for gone: its stored version stays until a collection reads it.
  const bucketsWithRejects = new Set<string>();
  let unreadableBucket = false;
  let summaryRejected = false;

  for (const apps of appGroups) {
    const read = await readSeriesAndSummary(ctx, {
      path: platformPaths.serverlessUsage,
      query: { start: range.from, end: range.to, timezone, timeframe: 'day', app: apps },
      expand: '',
      timezone,
      schema: UsageRow,
      rejects,
    });
    for (const { bucket, row, raw } of read.buckets) {
      buckets.push({
        timezone,
        timeframe: 'day',
        bucket: bucket.utc,
        bucket_offset_minutes: bucket.offsetMinutes,
        bucket_date: bucket.localDate,
        ...usageColumns(row, raw),
        version,
        is_deleted: 0,
        collected_at: collectedAt,
      });
    }
    for (const { row, raw } of read.summary) {
      summaries.push({ timezone, range_start: range.from, range_end: range.to, ...usageColumns(row, raw), version, is_deleted: 0, collected_at: collectedAt });
    }
    for (const b of read.bucketsWithRejects) bucketsWithRejects.add(b);
    unreadableBucket ||= read.unreadableBucket;
    summaryRejected ||= read.summaryRejected;
  }

  // Rows stored by an earlier collection of this range that the platform no longer returns.
  const appFilter = range.apps ?? [];
  const seenBuckets = new Set(buckets.map(keyOf));
  const liveBuckets = await liveUsageBucketKeys(ctx.runtime.store, {
    timezone,
    timeframe: 'day',
    from: toDateTime64(start.toJSDate()),
    to: toDateTime64(end.toJSDate()),
    apps: appFilter,
  });
  const bucketTombstones: UsageBucketRow[] = (unreadableBucket ? [] : liveBuckets)
    .filter((k) => !bucketsWithRejects.has(k.bucket_text) && !seenBuckets.has(keyOf({ ...k, bucket: k.bucket_text })))
    .map((k) => tombstoneBucket(k, timezone, version, collectedAt));
  const seenSummaries = new Set(summaries.map(keyOf));
  const liveSummaries = await liveUsageSummaryKeys(ctx.runtime.store, {
    timezone,
    start: range.from,
    end: range.to,
    apps: appFilter,
  });
  const summaryTombstones: UsageSummaryRow[] = (summaryRejected ? [] : liveSummaries)
    .filter((k) => !seenSummaries.has(keyOf(k)))
    .map((k) => ({
      timezone,
      range_start: range.from,
      range_end: range.to,
      ...k,
      ...tombstoneColumns(version, collectedAt),
    }));

  const malformed = rejects.rows.length;
  // What this collection read of each day, when it read every row (the evidence a day is final: src/insights/finality.ts).
  // Stryker disable next-line ConditionalExpression: a bucket is marked only beside a reject row (readSeriesAndSummary), so malformed === 0 already implies it
  const readWhole = malformed === 0 && bucketsWithRejects.size === 0 && !unreadableBucket;
  const dayRows = buckets.map((r) => ({ day: r.bucket_date, costTotal: r.cost_total, line: [r.app, r.environment, r.machine_type, r.is_surge, r.currency, r.quantity, r.cost_total].join('|') }));
  const { refused } = await commitRows(
    ctx,
    [
      tableWrite(usageBuckets, [...buckets, ...bucketTombstones]),
      tableWrite(usageSummaries, [...summaries, ...summaryTombstones]),
      // Only a whole read is evidence (sql/026): an empty one would let two reads that refused a row agree.
      ...(readWhole ? [dayCollectionWrite('serverless', range, dayRows, ctx.now())] : []),
    ],
    rejects,
    { timezone, from: range.from, to: range.to },
  );
  return {
    bucketRows: buckets.length,
    summaryRows: summaries.length,
    tombstones: bucketTombstones.length + summaryTombstones.length,
    rejected: malformed + refused,
  };
}

function usageColumns(row: UsageRow, raw: unknown) {
  return {
    app: row.app ?? '',
    environment: row.environment ?? '',
    machine_type: row.machine_type,
    is_surge: row.is_surge,
    unit: row.unit,
    quantity: toDecimalScale(row.quantity, USAGE_SCALES.quantity),
    unit_price: toDecimalScale(row.unit_price, USAGE_SCALES.unit_price),
    percent_discount: toDecimalOrNull(row.percent_discount, USAGE_SCALES.percent_discount),
    cost_subtotal: toDecimalOrNull(row.cost_subtotal, USAGE_SCALES.cost),
    cost_discount: toDecimalOrNull(row.cost_discount, USAGE_SCALES.cost),
    cost_total: toDecimalScale(row.cost_total ?? row.cost, USAGE_SCALES.cost),
    currency: row.currency,
    raw: JSON.stringify(raw),
  };
}

function tombstoneBucket(
  k: { bucket_text: string; app: string; environment: string; machine_type: string; is_surge: boolean },
  timezone: string,
  version: number,
  collectedAt: string,
): UsageBucketRow {
  const utc = DateTime.fromSQL(k.bucket_text, { zone: 'utc' });
  const local = utc.setZone(timezone);
  return {
    timezone,
    timeframe: 'day',
    bucket: toDateTime64(utc.toJSDate()),
    bucket_offset_minutes: local.offset,
    bucket_date: local.toISODate()!,
    app: k.app,
    environment: k.environment,
    machine_type: k.machine_type,
    is_surge: k.is_surge,
    ...tombstoneColumns(version, collectedAt),
  };
}

/** The value columns of a tombstone: the row vanished from the platform's answer at this version. */
function tombstoneColumns(version: number, collectedAt: string) {
  return {
    unit: 'second',
    quantity: '0',
    unit_price: '0',
    percent_discount: null,
    cost_subtotal: null,
    cost_discount: null,
    cost_total: '0',
    currency: '',
    raw: '',
    version,
    is_deleted: 1 as const,
    collected_at: collectedAt,
  };
}

/** A bucket timestamp with its offset: the UTC instant, the offset, and the local date. */
export function parseBucket(
  value: unknown,
  timezone: string,
): { utc: string; offsetMinutes: number; localDate: string } | string {
  if (typeof value !== 'string') return 'not a string';
  const dt = DateTime.fromISO(value, { setZone: true });
  if (!dt.isValid) return `not an ISO 8601 timestamp (${dt.invalidExplanation ?? dt.invalidReason})`;
  const inZone = dt.setZone(timezone);
  if (inZone.offset !== dt.offset) {
    return `offset ${dt.toFormat('ZZ')} is not the offset of ${timezone} at that time (${inZone.toFormat('ZZ')})`;
  }
  return { utc: toDateTime64(dt.toJSDate()), offsetMinutes: dt.offset, localDate: dt.toISODate()! };
}

/** What readSeriesAndSummary gives back: parsed rows with their bucket, and what could not be read. */
export interface SeriesRead<T> {
  buckets: Array<{ bucket: { utc: string; offsetMinutes: number; localDate: string }; row: T; raw: unknown }>;
  summary: Array<{ row: T; raw: unknown }>;
  /** Buckets with a refused row: their stored rows are not taken for gone. */
  bucketsWithRejects: Set<string>;
  /** A bucket timestamp could not be read: no tombstones at all this time. */
  unreadableBucket: boolean;
  summaryRejected: boolean;
}

/**
 * Pages a usage-shaped endpoint (serverless or model usage) twice, for the daily time series and for the summary
 * of the same range, parsing each row on its own: a refused row goes to `rejects` with its reason and never costs
 * its page.
 */
export async function readSeriesAndSummary<T>(
  ctx: JobContext,
  o: { path: string; query: Record<string, unknown>; expand: string; timezone: string; schema: z.ZodType<T>; rejects: CollectorRejects },
): Promise<SeriesRead<T>> {
  const out: SeriesRead<T> = { buckets: [], summary: [], bucketsWithRejects: new Set(), unreadableBucket: false, summaryRejected: false };
  const pages = (expand: string) =>
    ctx.platform.paginate(o.path, { query: { ...o.query, expand: `${expand}${o.expand}` }, scope: 'admin', schema: SeriesPage, ctx: ctx.call });
  for await (const page of pages('time_series')) {
    for (const series of page.time_series ?? []) {
      const bucket = parseBucket(series.bucket, o.timezone);
      if (typeof bucket === 'string') {
        out.unreadableBucket = true;
        for (const raw of series.results) o.rejects.add(raw, `bad bucket ${JSON.stringify(series.bucket)}: ${bucket}`);
        continue;
      }
      for (const raw of series.results) {
        const parsed = o.schema.safeParse(raw);
        if (!parsed.success) {
          out.bucketsWithRejects.add(bucket.utc);
          o.rejects.add(raw, describeZodIssue(parsed.error));
          continue;
        }
        out.buckets.push({ bucket, row: parsed.data, raw });
      }
    }
  }
  for await (const page of pages('summary')) {
    for (const raw of page.summary ?? []) {
      const parsed = o.schema.safeParse(raw);
      if (!parsed.success) {
        out.summaryRejected = true;
        o.rejects.add(raw, describeZodIssue(parsed.error));
        continue;
      }
      out.summary.push({ row: parsed.data, raw });
    }
  }
  return out;
}

