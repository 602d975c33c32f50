import { DateTime } from 'luxon';
import { z } from 'zod';
import type { JobContext } from './job.js';
import { platformPaths } from '../platform/index.js';
import { BILLABLE_UNITS_SCALE, requests, requestVersion, type RequestRow } from '../store/tables/requests.js';
import { isoToDateTime64, nextVersionMs, toDateTime64, toDecimalScale } from '../values.js';
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
    // The next page arrives while this one is mapped and encoded (bench collect: the sum of the two was the wall).
    prefetch: true,
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

export interface Collected {
  collectedAtMs: number;
  collectedAt: string;
}

export type RequestLine = { line: string; billed: boolean } | { reason: string };

const typeName = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
/** Text JSON writes as it is: no quote, backslash, control character or (possibly lone) surrogate. */
const PLAIN_TEXT = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;
/** A string as JSON; ids are plain text, which needs only its quotes (half JSON.stringify's time). */
const q = (s: string): string => (PLAIN_TEXT.test(s) ? '"' + s + '"' : JSON.stringify(s));

/**
 * One item of the list as a JSONEachRow line of `requests` (RequestRow), or the reason it cannot be stored.
 *
 * This is the hot path (the query API bench stores 10M requests), so the item is checked field by field against
 * the interface's record (required: request_id, endpoint_id, ended_at strings, status_code an integer, duration a
 * number; nullable or absent: gateway_request_id, started_at, sent_at, runner_id, billable_units; unknown fields
 * kept) and the line is written directly, rather than through a zod parse (which copies the object) and
 * JSON.stringify of an intermediate row: about half the CPU per request.
 * Timestamps and decimal text hold no characters JSON escapes, so they are quoted as they are.
 */
export function toRequestLine(raw: unknown, collected: Collected): RequestLine {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { reason: `(item): expected object, received ${typeName(raw)}` };
  const item = raw as Record<string, unknown>;
  const { request_id: requestId, endpoint_id: endpointId, ended_at: endedAtIso, status_code: status, duration } = item;
  if (typeof requestId !== 'string') return { reason: `request_id: expected string, received ${typeName(requestId)}` };
  if (typeof endpointId !== 'string') return { reason: `endpoint_id: expected string, received ${typeName(endpointId)}` };
  if (typeof endedAtIso !== 'string') return { reason: `ended_at: expected string, received ${typeName(endedAtIso)}` };
  const endedAt = isoToDateTime64(endedAtIso);
  if (endedAt === null) return { reason: `ended_at: not an ISO 8601 timestamp: ${q(endedAtIso)}` };
  const startedAt = optionalTime(item, 'started_at');
  if (startedAt !== null && startedAt.startsWith('!')) return { reason: startedAt.slice(1) };
  const sentAt = optionalTime(item, 'sent_at');
  if (sentAt !== null && sentAt.startsWith('!')) return { reason: sentAt.slice(1) };
  // Stryker disable next-line ConditionalExpression: Number.isInteger is false for every non-number, so the typeof test only saves work; the reason text is the same
  if (typeof status !== 'number' || !Number.isInteger(status)) {
    return { reason: `status_code: expected an integer, received ${typeof status === 'number' ? status : typeName(status)}` };
  }
  if (status < 0 || status > 65535) return { reason: `status_code: out of range: ${status}` };
  // Stryker disable next-line ConditionalExpression: Number.isFinite is false for every non-number, so the typeof test only saves work; the reason text is the same
  if (typeof duration !== 'number' || !Number.isFinite(duration)) return { reason: `duration: expected a number, received ${typeName(duration)}` };
  const runnerId = item.runner_id;
  if (runnerId != null && typeof runnerId !== 'string') return { reason: `runner_id: expected string, received ${typeName(runnerId)}` };
  const unitsValue = item.billable_units;
  // Stryker disable next-line ConditionalExpression: Number.isFinite is false for every non-number, so the typeof test only saves work; the reason text is the same
  if (unitsValue != null && (typeof unitsValue !== 'number' || !Number.isFinite(unitsValue))) {
    return { reason: `billable_units: expected a number, received ${typeName(unitsValue)}` };
  }
  const units = unitsValue == null ? null : toDecimalScale(unitsValue, BILLABLE_UNITS_SCALE);
  const gateway = item.gateway_request_id;
  let extra: Record<string, unknown> | null = null;
  for (const key in item) {
    if (KNOWN_FIELDS.has(key)) continue;
    extra ??= {};
    extra[key] = item[key];
  }
  // Every known field has a lossless column, so raw holds only what has none (10M rows: not the record twice).
  const rawText = extra === null ? '""' : q(JSON.stringify(extra));
  const line =
    '{"request_id":' + q(requestId) +
    ',"gateway_request_id":' + (gateway == null ? 'null' : q(typeof gateway === 'string' ? gateway : JSON.stringify(gateway))) +
    ',"endpoint_id":' + q(endpointId) +
    ',"started_at":' + (startedAt === null ? 'null' : '"' + startedAt + '"') +
    ',"sent_at":' + (sentAt === null ? 'null' : '"' + sentAt + '"') +
    ',"ended_at":"' + endedAt +
    '","status_code":' + status +
    ',"duration":' + JSON.stringify(duration) +
    ',"runner_id":' + (runnerId == null ? 'null' : q(runnerId as string)) +
    ',"billable_units":' + (units === null ? 'null' : '"' + units + '"') +
    ',"raw":' + rawText +
    ',"version":' + requestVersion(units !== null, collected.collectedAtMs) +
    ',"collected_at":"' + collected.collectedAt + '"}';
  // V8 keeps a string built with + as a rope of its pieces (~1.5 KB for this ~450-byte line, times 50,000 lines
  // a batch); reading a character flattens it in place.
  line.charCodeAt(0);
  return { line, billed: units !== null };
}

/** A nullable timestamp field as DateTime64 text, null, or '!' + the reason it is not one. */
function optionalTime(item: Record<string, unknown>, field: 'started_at' | 'sent_at'): string | null {
  const v = item[field];
  if (v == null) return null;
  if (typeof v !== 'string') return `!${field}: expected string, received ${typeName(v)}`;
  return isoToDateTime64(v) ?? `!${field}: not an ISO 8601 timestamp: ${q(v)}`;
}

/** One item as a `requests` row (the parsed line), or the reason it cannot be stored. */
export function toRequestRow(raw: unknown, collected: Collected): RequestRow | string {
  const r = toRequestLine(raw, collected);
  return 'reason' in r ? r.reason : (JSON.parse(r.line) as RequestRow);
}

/** Collection times strictly increase within the process, so a later copy of a request always outranks. */
export function nextCollected(): Collected {
  const collectedAtMs = nextVersionMs();
  return { collectedAtMs, collectedAt: toDateTime64(collectedAtMs) };
}

// ---- writing -----------------------------------------------------------------------------------------

/**
 * Hands rows to the writer in batches of WRITER_MAX_ROWS rows (or WRITER_MAX_BYTES) and keeps memory flat.
 *
 * Each page's lines are encoded once, into the sink's reusable buffers (the writer sends the chunks as they are: no
 * string kept per row, no second encoding; bench collect: peak heap 161 -> 41 MB) and handed over a whole batch at
 * a time: the writer flushes a table
 * continuously once it starts, so rows handed in page by page would go out as many small inserts (one per
 * insert's duration), each paying ClickHouse's per-insert cost. One batch may be committing while the next
 * is filled; before handing in a third, the sink waits for the first, so at most two are in memory and
 * fetching overlaps the store's work.
 */
/**
 * A promise this sink awaits later (the next hand-over, or finish()): marked handled now, so a store that refuses
 * the batch while the next page is fetched fails the chunk when it is awaited, not the process (an unhandled
 * rejection ends Node).
 */
function awaitedLater<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

/**
 * Bytes of one encoding buffer of a sink. A batch fills several; a page that may need more than one gets a buffer of
 * its own.
 */
export const SINK_BUFFER_BYTES = 1024 * 1024;
/** No buffer yet: the first page takes one. */
const NO_BUFFER = Buffer.alloc(0);

export class RequestSink {
  /** The batch being filled: views of the sink's buffers, each page's lines encoded once, as the writer sends them. */
  private chunks: Buffer[] = [];
  private rows = 0;
  private bytes = 0;
  /** The buffer pages are encoded into, how far it is written, and where the batch's view of it starts. */
  private current: Buffer = NO_BUFFER;
  private used = 0;
  private viewStart = 0;
  /** The buffers of the batch being filled, and of the batch in flight (free again once it is committed). */
  private filling: Buffer[] = [];
  // Stryker disable next-line ArrayDeclaration: never read: the first hand-over replaces it before a commit frees it
  private sending: Buffer[] = [];
  /**
   * Buffers of committed batches, written over by the next ones: an ArrayBuffer allocated per page (bench collect:
   * 120 MB per 256k requests) counts against V8's heap limit and set off a full collection every second or so.
   */
  private readonly spare: Buffer[] = [];
  private inFlight: Promise<WriteResult> | null = null;
  // Stryker disable next-line ArrayDeclaration: finish() only awaits the list with Promise.all, which passes a non-promise through
  private readonly rejectWrites: Array<Promise<WriteResult>> = [];
  private written = 0;
  private refused = 0;

  constructor(
    private readonly writer: BatchWriter,
    private readonly batchRows: number,
    private readonly batchBytes: number,
  ) {}

  /** `lines`: JSONEachRow lines of `requests` (toRequestLine). */
  async add(lines: string[], rejects: RejectRow[]): Promise<void> {
    if (rejects.length > 0) this.rejectWrites.push(awaitedLater(this.writer.reject(rejects)));
    if (lines.length > 0) {
      this.bytes += this.encode(lines.join('\n'));
      this.rows += lines.length;
    }
    if (this.rows >= this.batchRows || this.bytes >= this.batchBytes) await this.handOver();
  }

  /** Flushes and resolves once every row handed in is committed (or in ingest_rejects). */
  async finish(): Promise<{ written: number; refused: number }> {
    await this.handOver();
    await Promise.all([this.writer.flush(requests), this.writer.flush('ingest_rejects')]);
    if (this.inFlight) this.count(await this.inFlight);
    this.inFlight = null;
    await Promise.all(this.rejectWrites);
    return { written: this.written, refused: this.refused };
  }

  /** Appends `text` and a newline to the batch as UTF-8; returns the bytes written. */
  private encode(text: string): number {
    // UTF-8 takes at most 3 bytes per UTF-16 code unit (a surrogate pair: 4 for 2), the newline one more.
    const most = text.length * 3 + 1;
    if (most > SINK_BUFFER_BYTES) {
      this.closeView();
      const own = Buffer.from(`${text}\n`);
      this.chunks.push(own);
      return own.length;
    }
    if (this.current.length - this.used < most) {
      this.closeView();
      this.current = this.spare.pop() ?? Buffer.allocUnsafe(SINK_BUFFER_BYTES);
      this.filling.push(this.current);
      this.used = 0;
      this.viewStart = 0;
    }
    const n = this.current.write(text, this.used);
    this.current[this.used + n] = 0x0a;
    this.used += n + 1;
    return n + 1;
  }

  /** Ends the batch's view of the current buffer at what is written so far. */
  private closeView(): void {
    // Stryker disable next-line ConditionalExpression,EqualityOperator: an empty view adds no bytes to the batch
    if (this.used > this.viewStart) this.chunks.push(this.current.subarray(this.viewStart, this.used));
    this.viewStart = this.used;
  }

  private async handOver(): Promise<void> {
    const previous = this.inFlight;
    this.inFlight = null;
    if (previous) {
      this.count(await previous);
      // Committed: the writer has let go of the batch's bytes (it resolves only after its last retry or split).
      this.spare.push(...this.sending);
      // Stryker disable next-line ArrayDeclaration: never read: inFlight is null until the next hand-over replaces it
      this.sending = [];
    }
    if (this.rows === 0) return;
    this.closeView();
    const { chunks, rows } = this;
    this.sending = this.filling;
    this.filling = [];
    this.current = NO_BUFFER;
    this.used = 0;
    this.viewStart = 0;
    this.chunks = [];
    this.rows = 0;
    this.bytes = 0;
    this.inFlight = awaitedLater(this.writer.insertEncodedLines(requests, chunks, rows));
  }

  private count(r: WriteResult): void {
    this.written += r.written;
    this.refused += r.rejected;
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
  const { writer, config } = ctx.runtime;
  const sink = new RequestSink(writer, config.WRITER_MAX_ROWS, config.WRITER_MAX_BYTES);
  let received = 0;
  let billed = 0;
  let malformed = 0;
  for await (const items of requestPages(ctx, window)) {
    const lines: string[] = [];
    const rejects: RejectRow[] = [];
    for (const raw of items) {
      const r = toRequestLine(raw, collected);
      if ('reason' in r) rejects.push({ source: 'collector:requests', reason: r.reason, raw: JSON.stringify(raw) ?? String(raw) });
      else {
        lines.push(r.line);
        if (r.billed) billed++;
      }
    }
    received += items.length;
    malformed += rejects.length;
    await sink.add(lines, rejects);
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
  // Stryker disable next-line MethodExpression,ConditionalExpression: only `${a}/${b}` is looked up in the set, and no id of three or more parts equals one of two
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
  // Stryker disable next-line ObjectLiteral: end is only compared as an instant and returned as a Date; the loop stops once start reaches it, so its zone is never used
  const end = DateTime.fromJSDate(to, { zone: timezone });
  while (start < end) {
    const next = DateTime.min(start.startOf('day').plus({ days: 1 }), end);
    chunks.push({ from: start.toJSDate(), to: next.toJSDate() });
    start = next;
  }
  return chunks;
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
