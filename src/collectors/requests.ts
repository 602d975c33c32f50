import { DateTime } from 'luxon';
import { z } from 'zod';
import type { JobContext } from '../jobs/job.js';
import { platformPaths, RequestItem } from '../platform/index.js';
import { requests, requestVersion, type RequestRow } from '../store/tables/requests.js';
import { toDateTime64, toDecimalString } from '../store/values.js';
import type { BatchWriter, RejectRow, WriteResult } from '../store/writer.js';

// Requests and their billable units: GET /v1/serverless/requests/by-endpoint?expand=billing, at most 50
// endpoint ids a call, always with an explicit start/end (the platform defaults to the last 24 h), in ended_at
// order, 100 a page. The platform pins the upper bound of a paged query when it issues the first cursor, so
// the pages of one window are exactly the requests of that window even while new ones arrive.
//
// Billing arrives late (billable_units is null until the platform records it, up to ~30 min after ended_at),
// so scheduled runs collect again the last REQUESTS_RECOLLECT_HOURS before their watermark; every copy is
// stored and the table keeps the best one (billed beats unbilled, then the latest: requestVersion).

/** The most items the platform returns per page. */
export const PAGE_LIMIT = 100;

/** Loose page envelope: each item is validated on its own, so one malformed item never costs its page. */
const RequestsPageLoose = z.looseObject({
  next_cursor: z.string().nullish(),
  has_more: z.boolean().nullish(),
  items: z.array(z.unknown()),
});

export interface RequestWindow {
  /** 1-50 endpoint ids (a bare `owner/app` covers its routes). */
  endpointIds: string[];
  /** On ended_at, inclusive. */
  from: Date;
  /** On ended_at, exclusive. */
  to: Date;
}

/** The raw items of a window, page by page (no validation beyond the envelope). */
export async function* requestPages(ctx: Pick<JobContext, 'platform' | 'call'>, window: RequestWindow): AsyncGenerator<unknown[]> {
  if (window.endpointIds.length === 0) return;
  for await (const page of ctx.platform.paginate(platformPaths.requestsByEndpoint, {
    query: {
      endpoint_id: window.endpointIds,
      start: window.from.toISOString(),
      end: window.to.toISOString(),
      expand: 'billing',
      sort_by: 'ended_at',
      limit: PAGE_LIMIT,
    },
    schema: RequestsPageLoose,
    ctx: ctx.call,
  })) {
    yield page.items;
  }
}

// ---- mapping ---------------------------------------------------------------------------------------

const KNOWN_FIELDS = new Set([
  'request_id',
  'gateway_request_id',
  'endpoint_id',
  'started_at',
  'sent_at',
  'ended_at',
  'status_code',
  'duration',
  'runner_id',
  'billable_units',
]);
const ISO_UTC = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(?:\.(\d{1,3}))?Z$/;

/** An ISO 8601 timestamp as DateTime64(3) UTC text; the platform's `...Z` form without a Date round trip. */
export function isoToDateTime64(value: string): string | null {
  const m = ISO_UTC.exec(value);
  if (m) return `${m[1]} ${m[2]}.${(m[3] ?? '').padEnd(3, '0')}`;
  // Anything else ISO-like (an offset, more digits): through Date. A time without a zone is read as UTC.
  const ms = Date.parse(/T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(value) ? `${value}Z` : value);
  return Number.isNaN(ms) ? null : toDateTime64(ms);
}

export interface Collected {
  collectedAtMs: number;
  collectedAt: string;
}

/** One item of the list as a row, or the reason it cannot be stored. */
export function toRequestRow(raw: unknown, collected: Collected): RequestRow | string {
  const parsed = RequestItem.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return `${issue.path.join('.') || '(item)'}: ${issue.message}`;
  }
  const item = parsed.data;
  const endedAt = isoToDateTime64(item.ended_at);
  if (endedAt === null) return `ended_at: not an ISO 8601 timestamp: ${JSON.stringify(item.ended_at)}`;
  const startedAt = item.started_at == null ? null : isoToDateTime64(item.started_at);
  if (item.started_at != null && startedAt === null) return `started_at: not an ISO 8601 timestamp: ${JSON.stringify(item.started_at)}`;
  const sentAt = item.sent_at == null ? null : isoToDateTime64(item.sent_at);
  if (item.sent_at != null && sentAt === null) return `sent_at: not an ISO 8601 timestamp: ${JSON.stringify(item.sent_at)}`;
  if (item.status_code < 0 || item.status_code > 65535) return `status_code: out of range: ${item.status_code}`;
  if (!Number.isFinite(item.duration)) return `duration: not a finite number`;
  const units = item.billable_units == null ? null : toDecimalString(item.billable_units);
  const gateway = (raw as Record<string, unknown>).gateway_request_id;
  let extra: Record<string, unknown> | null = null;
  for (const key of Object.keys(raw as object)) {
    if (KNOWN_FIELDS.has(key)) continue;
    extra ??= {};
    extra[key] = (raw as Record<string, unknown>)[key];
  }
  return {
    request_id: item.request_id,
    gateway_request_id: typeof gateway === 'string' ? gateway : gateway == null ? null : JSON.stringify(gateway),
    endpoint_id: item.endpoint_id,
    started_at: startedAt,
    sent_at: sentAt,
    ended_at: endedAt,
    status_code: item.status_code,
    duration: item.duration,
    runner_id: item.runner_id ?? null,
    billable_units: units,
    // Every known field has a lossless column, so raw holds only what has none (10M rows: not the record twice).
    raw: extra === null ? '' : JSON.stringify(extra),
    version: requestVersion(units !== null, collected.collectedAtMs),
    collected_at: collected.collectedAt,
  };
}

let lastCollectedMs = 0;
/** Collection times strictly increase within the process, so a later copy of a request always outranks. */
export function nextCollected(): Collected {
  lastCollectedMs = Math.max(Date.now(), lastCollectedMs + 1);
  return { collectedAtMs: lastCollectedMs, collectedAt: toDateTime64(lastCollectedMs) };
}

// ---- writing -----------------------------------------------------------------------------------------

/**
 * Hands rows to the writer page by page and keeps memory flat: once `batchRows` rows are outstanding it waits
 * for the batch handed in before them, so at most two batches are in memory and fetching overlaps the store's
 * work on the previous batch. The writer flushes a table by itself at WRITER_MAX_ROWS.
 */
export class RequestSink {
  private inFlight: Array<Promise<WriteResult>> = [];
  private current: Array<Promise<WriteResult>> = [];
  private currentRows = 0;
  private readonly rejectWrites: Array<Promise<WriteResult>> = [];
  private written = 0;
  private refused = 0;

  constructor(
    private readonly writer: BatchWriter,
    private readonly batchRows: number,
  ) {}

  async add(rows: RequestRow[], rejects: RejectRow[]): Promise<void> {
    if (rejects.length > 0) this.rejectWrites.push(this.writer.reject(rejects));
    if (rows.length === 0) return;
    this.current.push(this.writer.insert(requests.name, rows));
    this.currentRows += rows.length;
    if (this.currentRows >= this.batchRows) {
      const previous = this.inFlight;
      this.inFlight = this.current;
      this.current = [];
      this.currentRows = 0;
      this.count(await Promise.all(previous));
    }
  }

  /** Flushes and resolves once every row handed in is committed (or in ingest_rejects). */
  async finish(): Promise<{ written: number; refused: number }> {
    await Promise.all([this.writer.flush(requests.name), this.writer.flush('ingest_rejects')]);
    this.count(await Promise.all([...this.inFlight, ...this.current]));
    await Promise.all(this.rejectWrites);
    this.inFlight = [];
    this.current = [];
    return { written: this.written, refused: this.refused };
  }

  private count(results: WriteResult[]): void {
    for (const r of results) {
      this.written += r.written;
      this.refused += r.rejected;
    }
  }
}

export interface RequestChunkResult {
  /** Items received. */
  requests: number;
  /** Of those, with billable units. */
  billed: number;
  /** Malformed items (in ingest_rejects). */
  malformed: number;
  /** Rows committed to `requests`. */
  written: number;
  /** Rows the store refused (in ingest_rejects). */
  refused: number;
}

/**
 * Collects one window of at most 50 endpoint ids into `requests`; resolves once every row is committed, so the
 * caller may then save a checkpoint covering the window.
 */
export async function collectRequestWindow(ctx: JobContext, window: RequestWindow): Promise<RequestChunkResult> {
  const collected = nextCollected();
  const sink = new RequestSink(ctx.runtime.writer, ctx.runtime.config.WRITER_MAX_ROWS);
  let received = 0;
  let billed = 0;
  let malformed = 0;
  for await (const items of requestPages(ctx, window)) {
    const rows: RequestRow[] = [];
    const rejects: RejectRow[] = [];
    for (const raw of items) {
      const row = toRequestRow(raw, collected);
      if (typeof row === 'string') rejects.push({ source: 'collector:requests', reason: row, raw: JSON.stringify(raw) ?? String(raw) });
      else {
        rows.push(row);
        if (row.billable_units !== null) billed++;
      }
    }
    received += items.length;
    malformed += rejects.length;
    await sink.add(rows, rejects);
  }
  const { written, refused } = await sink.finish();
  if (malformed + refused > 0) {
    ctx.log.warn(
      { from: window.from.toISOString(), to: window.to.toISOString(), malformed, refused },
      'some requests were not stored; they are in ingest_rejects with the reason',
    );
  }
  ctx.addRows(written);
  return { requests: received, billed, malformed, written, refused };
}

// ---- planning ------------------------------------------------------------------------------------------

/**
 * The ids to ask for: a bare `owner/app` already returns every route of the app (each item carries its own
 * concrete endpoint_id, which is what is stored), so routes of an app whose bare id is listed are dropped
 * rather than fetched twice. Sorted, so groups of 50 are stable between runs.
 */
export function coveringEndpointIds(ids: readonly string[]): string[] {
  const unique = [...new Set(ids.map((s) => s.trim()).filter(Boolean))];
  const bare = new Set(unique.filter((id) => id.split('/').length === 2));
  return unique
    .filter((id) => {
      const parts = id.split('/');
      return parts.length <= 2 || !bare.has(`${parts[0]}/${parts[1]}`);
    })
    .sort();
}

/** [from, to) cut at midnights of `timezone`: the unit of work between two checkpoints. */
export function dayChunks(from: Date, to: Date, timezone = 'UTC'): Array<{ from: Date; to: Date }> {
  const chunks: Array<{ from: Date; to: Date }> = [];
  let start = DateTime.fromJSDate(from, { zone: timezone });
  const end = DateTime.fromJSDate(to, { zone: timezone });
  while (start < end) {
    const next = DateTime.min(start.startOf('day').plus({ days: 1 }), end);
    chunks.push({ from: start.toJSDate(), to: next.toJSDate() });
    start = next;
  }
  return chunks;
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** `--from`/`--to`: a date (midnight in `timezone`) or an ISO 8601 datetime (UTC when it has no zone). */
export function parseTimeArg(value: string, timezone: string, name: string): Date {
  const dt = DATE.test(value)
    ? DateTime.fromISO(value, { zone: timezone })
    : DateTime.fromISO(value, { zone: 'utc', setZone: /(Z|[+-]\d{2}(:?\d{2})?)$/i.test(value) });
  if (!dt.isValid) throw new Error(`${name} must be a date YYYY-MM-DD or an ISO 8601 datetime, got ${JSON.stringify(value)}`);
  return dt.toJSDate();
}

/** Runs `work` over `items` with at most `limit` at a time; the first failure rejects (the rest still settle). */
export async function forEachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (!failed && next < items.length) {
      const item = items[next++];
      try {
        await work(item);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  });
  const results = await Promise.allSettled(workers);
  const rejected = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (rejected) throw rejected.reason;
}
