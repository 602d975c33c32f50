// One drain line -> one `logs` row (TabSeparated text) or a reason it was refused. Pure and allocation-lean:
// this runs once per line on the request path. Rows are TabSeparated rather than JSON because the store parses
// TSV about 1.5 times faster than JSONEachRow, and the line was already parsed here (to validate it).
import { isoToDateTime64 } from '../values.js';
import { MAX_NESTING_DEPTH, nestingDepth } from '../json-nesting.js';

/** Reason codes, also the first word of every reason text (the simulator names its malformed lines alike). */
export type LineRejectCode =
  | 'not_json'
  | 'not_object'
  | 'missing_timestamp'
  | 'missing_message'
  | 'missing_level'
  | 'bad_timestamp'
  | 'too_deep'
  | 'unmappable';

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

/** The columns of a row, in the order mapLine writes them (INSERT INTO logs (...) FORMAT TabSeparated). */
export const LOG_ROW_COLUMNS = [
  'timestamp',
  'level',
  'app',
  'app_id',
  'request_id',
  'job_id',
  'endpoint',
  'node',
  'worker',
  'source',
  'isolate_source',
  'message',
  'attributes',
  'received_at',
  'batch_id',
  'line',
] as const;

/** What every row of one batch shares. */
export interface BatchContext {
  /** DateTime64(3) text of the moment the request arrived. */
  receivedAt: string;
  /** The delivery's id (a UUID), shared by its rows and its rejects. */
  batchId: string;
}

// TabSeparated escaping: a tab, newline or backslash inside a value would end or corrupt the field.
const TSV_SPECIAL = /[\t\n\r\0\\]/;
const TSV_SPECIAL_ALL = /[\t\n\r\0\\]/g;
// Inside a quoted Map key or value, the quote as well.
const QUOTED_SPECIAL = /[\t\n\r\0\\']/;
const QUOTED_SPECIAL_ALL = /[\t\n\r\0\\']/g;
const ESCAPES: Record<string, string> = { '\t': '\\t', '\n': '\\n', '\r': '\\r', '\0': '\\0', '\\': '\\\\', "'": "\\'" };
const escapeChar = (c: string): string => ESCAPES[c];

/** A String field of a TabSeparated row. */
export function tsvField(value: string): string {
  return TSV_SPECIAL.test(value) ? value.replace(TSV_SPECIAL_ALL, escapeChar) : value;
}

const TSV_UNESCAPES: Record<string, string> = { t: '\t', n: '\n', r: '\r', '0': '\0', '\\': '\\', "'": "'" };

/** The value of a TabSeparated String field, as the store reads it back (the inverse of tsvField). */
export function unescapeTsvField(field: string): string {
  // Stryker disable next-line StringLiteral: includes('') is true, and replacing escapes in a field without a backslash changes nothing
  return field.includes('\\') ? field.replace(/\\(.)/g, (_, c: string) => TSV_UNESCAPES[c] ?? c) : field;
}

const plain = (value: string): string => value;

/** A quoted string inside a TabSeparated Map field: no raw tab or newline either, so the TSV field stays whole. */
function quoted(value: string): string {
  return `'${QUOTED_SPECIAL.test(value) ? value.replace(QUOTED_SPECIAL_ALL, escapeChar) : value}'`;
}

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
 * as their JSON text; keys other than the named ones go to `attributes`. The row is TabSeparated, in the
 * order of LOG_ROW_COLUMNS.
 */
export function mapLine(text: string, line: number, ctx: BatchContext): LineOutcome {
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch (err) {
    // V8 quotes a piece of the input in some messages ("...", "x" is not valid JSON): the reason keeps only the error.
    const message = (err as Error).message;
    const quotedAt = message.endsWith(' is not valid JSON') ? message.indexOf(', "') : -1;
    const detail = quotedAt > 0 ? message.slice(0, quotedAt) : message;
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
  const at = isoToDateTime64(timestamp);
  if (at === null) {
    return {
      ok: false,
      code: 'bad_timestamp',
      reason: 'bad_timestamp: not an ISO 8601 date-time between 1900 and 2299 (YYYY-MM-DDTHH:MM[:SS[.fff]][Z|±HH:MM])',
    };
  }

  // A JSON text without a backslash has no escape sequence, so none of its strings holds a tab, newline, NUL or
  // backslash: its fields need no TSV escaping (the common case, and a third of the work).
  // Stryker disable next-line StringLiteral: tsvField returns a value with nothing to escape unchanged; the choice is speed only
  const field = text.includes('\\') ? tsvField : plain;
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
        app = value === null ? '' : field(asText(value));
        continue;
      case 'svc_app_id':
        appId = value === null ? '' : field(asText(value));
        continue;
      case 'svc_request_id':
        requestId = value === null ? '' : field(asText(value));
        continue;
      case 'svc_job_id':
        jobId = value === null ? '' : field(asText(value));
        continue;
      case 'svc_endpoint':
        endpoint = value === null ? '' : field(asText(value));
        continue;
      case 'svc_node_id':
        node = value === null ? '' : field(asText(value));
        continue;
      case 'svc_worker_id':
        worker = value === null ? '' : field(asText(value));
        continue;
      case 'svc_source':
        source = value === null ? '' : field(asText(value));
        continue;
      case 'svc_isolate_source':
        isolate = value === null ? '' : field(asText(value));
        continue;
      default:
        if (value === undefined) continue;
        attributes += `${attributes ? ',' : ''}${quoted(key)}:${quoted(asText(value))}`;
    }
  }
  const row =
    `${at}\t${field(asText(o.level))}\t${app}\t${appId}\t${requestId}\t${jobId}\t${endpoint}\t${node}\t${worker}` +
    `\t${source}\t${isolate}\t${field(asText(o.message))}\t{${attributes}}\t${ctx.receivedAt}\t${ctx.batchId}\t${line}`;
  return { ok: true, row };
}

/**
 * mapLine, and whatever it throws as that line's reject (CONTRIBUTING.md rule 7: one line never fails its
 * neighbours). A value nested thousands deep overflows the stack when its JSON text is rebuilt for
 * `attributes`; the reason then says so.
 */
export function mapLineSafely(text: string, line: number, ctx: BatchContext): LineOutcome {
  try {
    return mapLine(text, line, ctx);
  } catch (err) {
    const depth = nestingDepth(text);
    if (depth > MAX_NESTING_DEPTH) {
      return { ok: false, code: 'too_deep', reason: `too_deep: nested ${depth} levels deep; at most ${MAX_NESTING_DEPTH} can be stored` };
    }
    // Stryker disable next-line OptionalChaining: what mapLine throws is the engine's own error (RangeError), never null or undefined
    return { ok: false, code: 'unmappable', reason: `unmappable: the line could not be turned into a row (${(err as Error)?.name ?? 'error'})` };
  }
}
