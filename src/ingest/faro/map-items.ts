// A Faro payload (@grafana/faro-core's TransportBody) → one faro_items row per item, or a reject with its reason
// per bad item (its neighbours are kept). The payload's meta (app, session, user, page) goes on every row.
import type { EventEvent, ExceptionEvent, LogEvent, MeasurementEvent, Meta, TransportBody } from '@grafana/faro-core';
import { toDateTime64 } from '../../store/values.js';
import type { FaroItemRow } from '../../store/tables/faro-items.js';

/** A platform request id: a UUID (the queue's ids are UUIDs). */
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/i;
/** A queue URL naming a request: .../requests/<id>[/status|/response|/cancel]. */
const QUEUE_REQUEST_URL = /\/requests\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b/i;
const REQUEST_ID_KEYS = new Set(['request_id', 'requestId', 'svc_request_id']);
const MAX_FIELD_CHARS = 16 * 1024;

export interface MappedItems {
  rows: FaroItemRow[];
  rejects: Array<{ reason: string; raw: string; index: number }>;
}

type Kind = 'log' | 'exception' | 'measurement' | 'event';

function text(v: unknown): string {
  if (v === undefined || v === null) return '';
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > MAX_FIELD_CHARS ? s.slice(0, MAX_FIELD_CHARS) : s;
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
  if (o.timestamp !== undefined && (typeof o.timestamp !== 'string' || Number.isNaN(Date.parse(o.timestamp)))) return `${kind}: timestamp is not an ISO 8601 time`;
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

export function mapItems(body: TransportBody, opts: { app: string; sessionHeader: string | undefined; receivedAtMs: number }): MappedItems {
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
      const raw = JSON.stringify(item) ?? 'null';
      const problem = check(kind, item);
      if (problem) {
        out.rejects.push({ reason: problem, raw, index: index++ });
        continue;
      }
      try {
        const row = build(item as T);
        const ts = row.timestamp ? Date.parse(row.timestamp) : opts.receivedAtMs;
        const attributes = { ...sessionAttributes, ...row.attributes };
        out.rows.push({
          ...common,
          ...row,
          attributes,
          timestamp: toDateTime64(ts),
          request_id: requestIdOf(attributes, row.message, common.page_url),
          raw,
        });
      } catch (err) {
        out.rejects.push({ reason: `${kind}: ${(err as Error).message}`, raw, index });
      }
      index++;
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
  if (body.traces !== undefined) {
    const raw = JSON.stringify(body.traces) ?? 'null';
    out.rows.push({
      ...common, kind: 'traces', level: '', message: '', domain: '', values: {}, attributes: sessionAttributes,
      trace_id: '', span_id: '', timestamp: receivedAt, request_id: '', raw: raw.length > 1024 * 1024 ? raw.slice(0, 1024 * 1024) : raw,
    });
  }
  return out;
}
