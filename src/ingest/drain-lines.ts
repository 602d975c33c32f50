// One drain line -> one `logs` row (JSONEachRow text) or a reason it was refused. Pure and allocation-lean:
// this runs once per line on the request path, so rows are built as text rather than as objects to stringify.

/** Reason codes, also the first word of every reason text (the simulator names its malformed lines alike). */
export type LineRejectCode = 'not_json' | 'not_object' | 'missing_timestamp' | 'missing_message' | 'missing_level' | 'bad_timestamp';

export type LineOutcome = { ok: true; row: string } | { ok: false; code: LineRejectCode; reason: string };

/** The `svc_*` fields of the platform notes and the `logs` column each one fills. */
export const LABEL_COLUMNS = {
  svc_app_name: 'app',
  svc_app_id: 'app_id',
  svc_request_id: 'request_id',
  svc_job_id: 'job_id',
  svc_endpoint: 'endpoint',
  svc_node_id: 'node',
  svc_worker_id: 'worker',
  svc_source: 'source',
  svc_isolate_source: 'isolate_source',
} as const;

/** What every row of one batch shares. */
export interface BatchContext {
  /** DateTime64(3) text of the moment the request arrived. */
  receivedAt: string;
  /** The delivery's id (a UUID), shared by its rows and its rejects. */
  batchId: string;
}

// ISO 8601 date-time: a date, a time with at least minutes, an optional fraction and an optional offset.
// A date-time without an offset is taken as UTC (the platform stamps UTC; a local reading would depend on
// the receiver's zone).
const ISO_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;

// DateTime64(3)'s range.
const MIN_MS = Date.UTC(1900, 0, 1);
const MAX_MS = Date.UTC(2299, 11, 31, 23, 59, 59, 999);

/** The UTC instant of an ISO 8601 date-time, in ms, or undefined when the text is not one (or out of range). */
export function parseIsoTimestamp(text: string): number | undefined {
  const m = ISO_DATE_TIME.exec(text);
  if (!m) return undefined;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = Number(m[4]);
  const minute = Number(m[5]);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  if (day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return undefined;
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  let offsetMinutes = 0;
  const zone = m[8];
  if (zone !== undefined && zone !== 'Z' && zone !== 'z') {
    const sign = zone[0] === '-' ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2));
    const om = digits.length > 2 ? Number(digits.slice(2, 4)) : 0;
    if (oh > 23 || om > 59) return undefined;
    offsetMinutes = sign * (oh * 60 + om);
  }
  const ms = Date.UTC(year, month - 1, day, hour, minute, second, millis) - offsetMinutes * 60_000;
  if (year < 100) return undefined; // Date.UTC maps years 0-99 to 1900-1999
  return ms >= MIN_MS && ms <= MAX_MS ? ms : undefined;
}

/** 'YYYY-MM-DD HH:MM:SS.mmm' (UTC), what a DateTime64(3, 'UTC') column parses exactly. */
export function formatDateTime64(ms: number): string {
  const iso = new Date(ms).toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ within DateTime64's range
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}`;
}

const q = JSON.stringify;

/** A label or attribute value as text: strings as they are, anything else as its JSON. */
function asText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function describeType(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
}

/**
 * Maps one line of a drain batch. `text` is the line without its newline; `line` its 1-based number.
 * Rejects: not JSON, not an object, a missing (absent or null) timestamp/message/level, a timestamp that is
 * not an ISO 8601 date-time string within DateTime64's range. Non-string messages, levels and labels are kept
 * as their JSON text; keys other than the named ones go to `attributes`.
 */
export function mapLine(text: string, line: number, ctx: BatchContext): LineOutcome {
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch (err) {
    // V8 quotes a piece of the input in some messages ("...", "x" is not valid JSON): the reason keeps only the error.
    const message = (err as Error).message;
    const quoted = message.endsWith(' is not valid JSON') ? message.indexOf(', "') : -1;
    const detail = quoted > 0 ? message.slice(0, quoted) : message;
    return { ok: false, code: 'not_json', reason: `not_json: ${detail}` };
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
    return { ok: false, code: 'not_object', reason: `not_object: a line must be a JSON object, got ${describeType(obj)}` };
  }
  const o = obj as Record<string, unknown>;
  const timestamp = o.timestamp;
  if (timestamp === undefined || timestamp === null) {
    return { ok: false, code: 'missing_timestamp', reason: 'missing_timestamp: the line has no timestamp' };
  }
  if (o.message === undefined || o.message === null) {
    return { ok: false, code: 'missing_message', reason: 'missing_message: the line has no message' };
  }
  if (o.level === undefined || o.level === null) {
    return { ok: false, code: 'missing_level', reason: 'missing_level: the line has no level' };
  }
  if (typeof timestamp !== 'string') {
    return { ok: false, code: 'bad_timestamp', reason: `bad_timestamp: expected an ISO 8601 date-time string, got ${describeType(timestamp)}` };
  }
  const ms = parseIsoTimestamp(timestamp);
  if (ms === undefined) {
    return {
      ok: false,
      code: 'bad_timestamp',
      reason: 'bad_timestamp: not an ISO 8601 date-time between 1900 and 2299 (YYYY-MM-DDTHH:MM[:SS[.fff]][Z|±HH:MM])',
    };
  }

  let app = '';
  let appId = '';
  let requestId = '';
  let jobId = '';
  let endpoint = '';
  let node = '';
  let worker = '';
  let source = '';
  let isolate = '';
  let attributes = '';
  for (const key in o) {
    const value = o[key];
    switch (key) {
      case 'timestamp':
      case 'message':
      case 'level':
        continue;
      case 'svc_app_name':
        app = value === null ? '' : asText(value);
        continue;
      case 'svc_app_id':
        appId = value === null ? '' : asText(value);
        continue;
      case 'svc_request_id':
        requestId = value === null ? '' : asText(value);
        continue;
      case 'svc_job_id':
        jobId = value === null ? '' : asText(value);
        continue;
      case 'svc_endpoint':
        endpoint = value === null ? '' : asText(value);
        continue;
      case 'svc_node_id':
        node = value === null ? '' : asText(value);
        continue;
      case 'svc_worker_id':
        worker = value === null ? '' : asText(value);
        continue;
      case 'svc_source':
        source = value === null ? '' : asText(value);
        continue;
      case 'svc_isolate_source':
        isolate = value === null ? '' : asText(value);
        continue;
      default:
        if (value === undefined) continue;
        attributes += `${attributes ? ',' : ''}${q(key)}:${q(asText(value))}`;
    }
  }
  const row =
    `{"timestamp":"${formatDateTime64(ms)}","level":${q(asText(o.level))},"app":${q(app)},"app_id":${q(appId)}` +
    `,"request_id":${q(requestId)},"job_id":${q(jobId)},"endpoint":${q(endpoint)},"node":${q(node)}` +
    `,"worker":${q(worker)},"source":${q(source)},"isolate_source":${q(isolate)},"message":${q(asText(o.message))}` +
    `,"attributes":{${attributes}},"received_at":"${ctx.receivedAt}","batch_id":"${ctx.batchId}","line":${line}}`;
  return { ok: true, row };
}
