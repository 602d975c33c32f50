// A Faro payload (@grafana/faro-core's TransportBody) → one faro_items row per item, or a reject with its reason
// per bad item (its neighbours are kept, CONTRIBUTING.md rule 7). The payload's meta (app, session, user, page)
// goes on every row. Each item is checked in turn: depth, size, its own fields, its timestamp (strict ISO 8601
// with a zone, within retention and not in the future), then mapped; whatever throws rejects that item alone.
import type { EventEvent, ExceptionEvent, LogEvent, MeasurementEvent, Meta, TransportBody } from '@grafana/faro-core';
import { toDateTime64 } from '../../values.js';
import { MAX_REJECT_RAW_BYTES, truncateUtf8 } from '../../store/writer.js';
import type { FaroItemRow } from '../../store/tables/faro-items.js';
import { parseIsoTimestamp } from '../../values.js';
import { boundedJson, MAX_NESTING_DEPTH, valueDepth } from '../../json-nesting.js';

/** A platform request id: a UUID (the queue's ids are UUIDs). */
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/i;
/** A queue URL naming a request: .../requests/<id>[/status|/response|/cancel]. */
const QUEUE_REQUEST_URL = /\/requests\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/i;
const REQUEST_ID_KEYS = new Set(['request_id', 'requestId', 'svc_request_id']);
const MAX_FIELD_CHARS = 16 * 1024;
/** One item's JSON (its `raw`) beyond this is refused (too_large); the body's own limit is FARO_MAX_BODY_BYTES. */
export const MAX_ITEM_BYTES = 1024 * 1024;
/**
 * An item stamped further ahead of the receiver's clock than this is refused: a browser clock a little fast is
 * common, an hour is not, and a future time would sort the item away from its session for good.
 */
export const MAX_FUTURE_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** ISO 8601 date-time with a zone: date, T, hours and minutes (seconds and a fraction optional), Z or an offset. */
const ISO_WITH_ZONE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})$/i;

export interface MappedItems {
  rows: FaroItemRow[];
  rejects: Array<{ reason: string; raw: string; index: number }>;
}

export interface MapOptions {
  app: string;
  sessionHeader: string | undefined;
  receivedAtMs: number;
  /** FARO_RETENTION_DAYS: an item older than this would be dropped by the table's TTL as soon as it is stored. */
  retentionDays: number;
  /**
   * Walk each item for its depth. The receiver sets it when its pre-scan of the body's text found nesting past
   * MAX_NESTING_DEPTH; otherwise no item can be that deep and the walk is skipped.
   */
  checkDepth?: boolean;
}

type Kind = 'log' | 'exception' | 'measurement' | 'event';

/** A field as text, at most MAX_FIELD_CHARS (built without recursion: any depth is safe here). */
function text(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v.length > MAX_FIELD_CHARS ? v.slice(0, MAX_FIELD_CHARS) : v;
  return boundedJson(v, MAX_FIELD_CHARS);
}

/** The start of an item's JSON for its reject record (any depth). */
const rejectRaw = (item: unknown): string => truncateUtf8(boundedJson(item, MAX_REJECT_RAW_BYTES), MAX_REJECT_RAW_BYTES);

/** The UTC instant of a strict ISO 8601 date-time with a zone, or undefined. */
export function parseFaroTimestamp(value: string): number | undefined {
  return ISO_WITH_ZONE.test(value) ? parseIsoTimestamp(value) : undefined;
}

function stringMap(v: unknown): Record<string, string> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return {};
  return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, text(x)]));
}

/** The platform request id an item mentions: an attribute named request_id (or requestId), else a queue URL. */
export function requestIdOf(attributes: Record<string, string>, ...texts: string[]): string {
  for (const [k, v] of Object.entries(attributes)) if (REQUEST_ID_KEYS.has(k) && UUID.test(v)) return UUID.exec(v)![0].toLowerCase();
  for (const t of [...Object.values(attributes), ...texts]) {
    const m = QUEUE_REQUEST_URL.exec(t);
    if (m) return m[1].toLowerCase();
  }
  return '';
}

/** Checks an item's own fields; a string is the reason it is refused. */
function check(kind: Kind, item: unknown): string | undefined {
  if (!item || typeof item !== 'object' || Array.isArray(item)) return `${kind}: expected an object`;
  const o = item as Record<string, unknown>;
  switch (kind) {
    case 'log':
      return typeof o.message === 'string' ? undefined : 'log: message must be a string';
    case 'exception':
      return typeof o.type === 'string' && typeof o.value === 'string' ? undefined : 'exception: type and value must be strings';
    case 'measurement':
      if (typeof o.type !== 'string') return 'measurement: type must be a string';
      if (!o.values || typeof o.values !== 'object' || Object.values(o.values).some((v) => typeof v !== 'number' || !Number.isFinite(v))) {
        return 'measurement: values must be an object of finite numbers';
      }
      return undefined;
    case 'event':
      return typeof o.name === 'string' ? undefined : 'event: name must be a string';
  }
}

/** Why an item's own time refuses it (not a strict ISO 8601 time, past retention, in the future), or its instant. */
function timeOf(kind: Kind, timestamp: unknown, opts: MapOptions): { ms: number } | { problem: string } {
  if (timestamp === undefined) return { ms: opts.receivedAtMs };
  const ms = typeof timestamp === 'string' ? parseFaroTimestamp(timestamp) : undefined;
  if (ms === undefined) return { problem: `${kind}: timestamp is not an ISO 8601 date-time with a zone (like 2026-11-21T10:00:00.000Z)` };
  if (ms < opts.receivedAtMs - opts.retentionDays * DAY_MS) {
    return { problem: `${kind}: timestamp is older than the ${opts.retentionDays}-day retention (FARO_RETENTION_DAYS): it would be dropped as soon as stored` };
  }
  if (ms > opts.receivedAtMs + MAX_FUTURE_MS) return { problem: `${kind}: timestamp is more than ${MAX_FUTURE_MS / 60_000} minutes ahead of the receiver's clock` };
  return { ms };
}

export function mapItems(body: TransportBody, opts: MapOptions): MappedItems {
  const meta: Partial<Meta> = body.meta && typeof body.meta === 'object' ? body.meta : {};
  const receivedAt = toDateTime64(opts.receivedAtMs);
  const sessionAttributes = stringMap(meta.session?.attributes);
  const common = {
    received_at: receivedAt,
    app: opts.app,
    app_namespace: text(meta.app?.namespace),
    release: text(meta.app?.release),
    app_version: text(meta.app?.version),
    environment: text(meta.app?.environment),
    session_id: text(meta.session?.id) || (opts.sessionHeader ?? ''),
    user_id: text(meta.user?.id),
    page_url: text(meta.page?.url),
  };
  const out: MappedItems = { rows: [], rejects: [] };
  let index = 0;
  const each = <T>(kind: Kind, list: unknown, build: (item: T) => Omit<FaroItemRow, keyof typeof common | 'timestamp' | 'raw' | 'request_id'> & { timestamp?: string }) => {
    if (list === undefined) return;
    if (!Array.isArray(list)) {
      out.rejects.push({ reason: `${kind}s: expected an array`, raw: text(list), index: index++ });
      return;
    }
    for (const item of list) {
      const reject = (reason: string, raw?: string) => out.rejects.push({ reason, raw: raw ?? rejectRaw(item), index });
      try {
        const depth = opts.checkDepth === false ? 0 : valueDepth(item);
        if (depth > MAX_NESTING_DEPTH) {
          reject(`${kind}: too_deep: nested ${depth} levels deep; at most ${MAX_NESTING_DEPTH} can be stored`);
          continue;
        }
        // Stryker disable next-line StringLiteral: an item of a parsed JSON body is never undefined or a function, the only values JSON.stringify answers undefined for
        const raw = JSON.stringify(item) ?? 'null';
        const bytes = Buffer.byteLength(raw);
        if (bytes > MAX_ITEM_BYTES) {
          reject(`${kind}: too_large: ${bytes} bytes, over the ${MAX_ITEM_BYTES}-byte item limit`, truncateUtf8(raw, MAX_REJECT_RAW_BYTES));
          continue;
        }
        const problem = check(kind, item);
        const time = problem === undefined ? timeOf(kind, (item as { timestamp?: unknown }).timestamp, opts) : { problem };
        if ('problem' in time) {
          reject(time.problem, truncateUtf8(raw, MAX_REJECT_RAW_BYTES));
          continue;
        }
        const row = build(item as T);
        const attributes = { ...sessionAttributes, ...row.attributes };
        out.rows.push({
          ...common,
          ...row,
          attributes,
          timestamp: toDateTime64(time.ms),
          request_id: requestIdOf(attributes, row.message, common.page_url),
          raw,
        });
      } catch (err) {
        // Whatever a mapping throws (CONTRIBUTING.md rule 7): this item's reject, never its neighbours' loss.
        reject(`${kind}: unmappable: ${(err as Error)?.name ?? 'error'}`);
      } finally {
        index++;
      }
    }
  };
  const trace = (t: { trace_id?: string; span_id?: string } | undefined) => ({ trace_id: text(t?.trace_id), span_id: text(t?.span_id) });
  each<LogEvent>('log', body.logs, (l) => ({
    kind: 'log', level: text(l.level), message: text(l.message), domain: '', values: {}, attributes: stringMap(l.context), timestamp: l.timestamp, ...trace(l.trace),
  }));
  each<ExceptionEvent>('exception', body.exceptions, (e) => ({
    kind: 'exception', level: 'error', message: `${e.type}: ${e.value}`, domain: '', values: {},
    attributes: { ...stringMap(e.context), ...(e.stacktrace ? { stacktrace: text(e.stacktrace) } : {}) }, timestamp: e.timestamp, ...trace(e.trace),
  }));
  each<MeasurementEvent>('measurement', body.measurements, (m) => ({
    kind: 'measurement', level: '', message: text(m.type), domain: '', values: { ...m.values }, attributes: stringMap(m.context), timestamp: m.timestamp, ...trace(m.trace),
  }));
  each<EventEvent>('event', body.events, (e) => ({
    kind: 'event', level: '', message: text(e.name), domain: text(e.domain), values: {}, attributes: stringMap(e.attributes), timestamp: e.timestamp, ...trace(e.trace),
  }));
  const traceDepth = body.traces !== undefined && opts.checkDepth !== false ? valueDepth(body.traces) : 0;
  if (traceDepth > MAX_NESTING_DEPTH) {
    // Stryker disable next-line UpdateOperator: the traces come last, so no item reads index after this one
    out.rejects.push({ reason: `traces: too_deep: nested ${traceDepth} levels deep; at most ${MAX_NESTING_DEPTH} can be stored`, raw: rejectRaw(body.traces), index: index++ });
  } else if (body.traces !== undefined) {
    // Stryker disable next-line StringLiteral: traces of a parsed JSON body, defined here, are never undefined or a function
    const raw = JSON.stringify(body.traces) ?? 'null';
    out.rows.push({
      ...common, kind: 'traces', level: '', message: '', domain: '', values: {}, attributes: sessionAttributes,
      trace_id: '', span_id: '', timestamp: receivedAt, request_id: '', raw: raw.length > 1024 * 1024 ? raw.slice(0, 1024 * 1024) : raw,
    });
  }
  return out;
}
