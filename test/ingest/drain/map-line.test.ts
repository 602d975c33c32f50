import { describe, expect, it } from 'vitest';
import { toDateTime64 } from '../../../src/values.js';
import { LOG_ROW_COLUMNS, mapLine } from '../../../src/collectors/log-line.js';
import { isoToDateTime64, parseIsoTimestamp } from '../../../src/values.js';

/** The drain's reading of a timestamp: the one ISO 8601 reader (src/values.ts), undefined for none. */
const toDateTime64Text = (text: string): string | undefined => isoToDateTime64(text) ?? undefined;
import { BatchParser } from '../../../src/ingest/drain/parse-body.js';
import { BodyFormatError, JsonArraySplitter, NdjsonSplitter, SniffingSplitter, wholeCharacters, type LongLineHandler, type Splitter } from '../../../src/ingest/drain/split-lines.js';

const ctx = { receivedAt: '2026-11-21 12:00:00.000', batchId: '0b8e7a6c-1f7e-4d64-9a54-3c1b7d1f2e11' };

const UNESCAPE: Record<string, string> = { t: '\t', n: '\n', r: '\r', '0': '\0', '\\': '\\', "'": "'" };
const unescape = (s: string) => s.replace(/\\(.)/g, (_, c: string) => UNESCAPE[c] ?? c);

/** Reads a TabSeparated row back (as ClickHouse would): fields, and the Map literal of `attributes`. */
function decodeRow(tsv: string): Record<string, unknown> {
  const fields = tsv.split('\t');
  expect(fields).toHaveLength(LOG_ROW_COLUMNS.length);
  const out: Record<string, unknown> = {};
  LOG_ROW_COLUMNS.forEach((c, i) => (out[c] = unescape(fields[i])));
  const map = fields[LOG_ROW_COLUMNS.indexOf('attributes')];
  const attributes: Record<string, string> = {};
  const pair = /'((?:[^'\\]|\\.)*)':'((?:[^'\\]|\\.)*)'(,|\}$)/gy;
  pair.lastIndex = 1;
  expect(map.startsWith('{') && map.endsWith('}')).toBe(true);
  for (let m = pair.exec(map); m; m = pair.exec(map)) attributes[unescape(m[1])] = unescape(m[2]);
  out.attributes = attributes;
  out.line = Number(out.line);
  return out;
}

function row(text: string, line = 1): Record<string, unknown> {
  const r = mapLine(text, line, ctx);
  if (!r.ok) throw new Error(r.reason);
  expect(r.row).not.toMatch(/\n/);
  return decodeRow(r.row);
}

function reject(text: string): { code: string; reason: string } {
  const r = mapLine(text, 1, ctx);
  if (r.ok) throw new Error('accepted');
  return { code: r.code, reason: r.reason };
}

describe('parseIsoTimestamp', () => {
  it('reads ISO 8601 date-times as UTC instants', () => {
    expect(parseIsoTimestamp('2026-11-21T10:00:00Z')).toBe(Date.UTC(2026, 10, 21, 10));
    expect(parseIsoTimestamp('2026-11-21T10:00:00.123456Z')).toBe(Date.UTC(2026, 10, 21, 10, 0, 0, 123));
    expect(parseIsoTimestamp('2026-11-21T10:00:00.1Z')).toBe(Date.UTC(2026, 10, 21, 10, 0, 0, 100));
    expect(parseIsoTimestamp('2026-11-21T12:30:00+02:30')).toBe(Date.UTC(2026, 10, 21, 10));
    expect(parseIsoTimestamp('2026-11-21T05:00:00-0500')).toBe(Date.UTC(2026, 10, 21, 10));
    expect(parseIsoTimestamp('2026-11-21 10:00')).toBe(Date.UTC(2026, 10, 21, 10));
    // No offset: UTC, whatever the receiver's zone.
    expect(parseIsoTimestamp('2026-11-21T10:00:00')).toBe(Date.UTC(2026, 10, 21, 10));
  });

  it('refuses what is not one, impossible dates and what DateTime64 cannot hold', () => {
    for (const text of ['yesterday at noon', '2026-11-21', '2026-02-30T00:00:00Z', '2026-13-01T00:00:00Z', '2026-11-21T24:00:00Z',
      '1899-12-31T23:59:59Z', '2300-01-01T00:00:00Z', '0099-01-01T00:00:00Z', 'Sat, 21 Nov 2026 10:00:00 GMT', '1700000000']) {
      expect(parseIsoTimestamp(text), text).toBeUndefined();
    }
    expect(parseIsoTimestamp('2024-02-29T00:00:00Z')).toBe(Date.UTC(2024, 1, 29));
  });

  it('formats DateTime64(3) text, directly from the platform form', () => {
    expect(toDateTime64(Date.UTC(2026, 10, 21, 10, 0, 0, 7))).toBe('2026-11-21 10:00:00.007');
    expect(toDateTime64Text('2026-11-21T10:00:00.123Z')).toBe('2026-11-21 10:00:00.123');
    expect(toDateTime64Text('2026-11-21T10:00:00.1234567Z')).toBe('2026-11-21 10:00:00.123');
    expect(toDateTime64Text('2026-11-21T10:00Z')).toBe('2026-11-21 10:00:00.000');
    expect(toDateTime64Text('2026-11-21T00:30:00+01:00')).toBe('2026-11-20 23:30:00.000');
    expect(toDateTime64Text('2299-12-31T23:59:59.999Z')).toBe('2299-12-31 23:59:59.999');
  });
});

describe('mapLine', () => {
  it('maps the svc_* fields to columns and every other key to attributes (values as text)', () => {
    const r = row(
      JSON.stringify({
        timestamp: '2026-11-21T10:00:00.5+01:00',
        message: 'Request completed in 1.2s',
        level: 'INFO',
        svc_app_name: 'flux',
        svc_app_id: 'app-1',
        svc_request_id: 'req-1',
        svc_job_id: 'job-1',
        svc_endpoint: 'acme/flux',
        svc_node_id: 'node-7',
        svc_worker_id: 'runner-3',
        svc_source: 'runner',
        svc_isolate_source: 'stderr',
        svc_region: 'us-east',
        trace_id: 'abc',
        count: 3,
        nested: { a: [1, 'x'] },
        flag: false,
        nothing: null,
        'quote"key': 'v"al',
      }),
      7,
    );
    expect(r).toEqual({
      timestamp: '2026-11-21 09:00:00.500',
      level: 'INFO',
      app: 'flux',
      app_id: 'app-1',
      request_id: 'req-1',
      job_id: 'job-1',
      endpoint: 'acme/flux',
      node: 'node-7',
      worker: 'runner-3',
      source: 'runner',
      isolate_source: 'stderr',
      message: 'Request completed in 1.2s',
      attributes: { svc_region: 'us-east', trace_id: 'abc', count: '3', nested: '{"a":[1,"x"]}', flag: 'false', nothing: 'null', 'quote"key': 'v"al' },
      received_at: ctx.receivedAt,
      batch_id: ctx.batchId,
      line: 7,
    });
  });

  it('keeps the required fields only, with empty labels, and multi-line messages intact (escaped in the row)', () => {
    const r = row(JSON.stringify({ timestamp: '2026-11-21T10:00:00Z', message: 'Traceback:\n  line 1\n\tx = "é" \\ \r\0', level: 'ERROR' }));
    expect(r.message).toBe('Traceback:\n  line 1\n\tx = "é" \\ \r\0');
    expect([r.app, r.request_id, r.worker]).toEqual(['', '', '']);
    expect(r.attributes).toEqual({});
    // Non-string message and level are kept as their JSON.
    expect(row(JSON.stringify({ timestamp: '2026-11-21T10:00:00Z', message: { a: 1 }, level: 30 }))).toMatchObject({ message: '{"a":1}', level: '30' });
  });

  it('rejects each malformed kind with a reason that starts with its code', () => {
    const base = { timestamp: '2026-11-21T10:00:00Z', message: 'm', level: 'INFO' };
    const cases: Array<[string, string]> = [
      ['{"timestamp": "2026-11-21T10:00:00Z", "mess', 'not_json'],
      ['', 'not_json'],
      [JSON.stringify([base.timestamp, base.level, base.message]), 'not_object'],
      ['"just a string"', 'not_object'],
      ['null', 'not_object'],
      [JSON.stringify({ message: 'm', level: 'INFO' }), 'missing_timestamp'],
      [JSON.stringify({ ...base, timestamp: null }), 'missing_timestamp'],
      [JSON.stringify({ timestamp: base.timestamp, level: 'INFO' }), 'missing_message'],
      [JSON.stringify({ timestamp: base.timestamp, message: 'm' }), 'missing_level'],
      [JSON.stringify({ ...base, timestamp: 'yesterday at noon' }), 'bad_timestamp'],
      [JSON.stringify({ ...base, timestamp: 1_700_000_000_000 }), 'bad_timestamp'],
    ];
    for (const [text, code] of cases) {
      const r = reject(text);
      expect(r.code, text).toBe(code);
      expect(r.reason.startsWith(`${code}: `), r.reason).toBe(true);
    }
  });

  it('does not quote the line in a not_json reason', () => {
    const r = reject('secret-looking text that is not JSON');
    expect(r.reason).toBe("not_json: Unexpected token 's'");
  });
});

/** The lines handed on; a line over the limit as `[n, 'too long: <bytes> <head>']`. */
function collect(make: (max: number, on: (t: string, n: number) => void, long: LongLineHandler) => Splitter, chunks: Array<string | Buffer>, max = 1024) {
  const out: Array<[number, string]> = [];
  const s = make(max, (t, n) => out.push([n, t]), (n, head, bytes) => out.push([n, `too long: ${bytes} ${head.toString()}`]));
  for (const c of chunks) s.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
  s.end();
  return out;
}

type Make = (max: number, on: (t: string, n: number) => void, long: LongLineHandler) => Splitter;
const ndjson: Make = (max, on, long) => new NdjsonSplitter(max, on, long);
const array: Make = (max, on, long) => new JsonArraySplitter(max, on, long);
const sniff: Make = (max, on, long) => new SniffingSplitter(max, on, long);

describe('NDJSON splitting', () => {
  it('numbers lines across chunk boundaries, drops CR and blank lines, keeps a last line without newline', () => {
    const text = '{"a":1}\r\n\n  \n{"b":"é"}\n{"c":3}';
    const expected: Array<[number, string]> = [[1, '{"a":1}'], [4, '{"b":"é"}'], [5, '{"c":3}']];
    expect(collect(ndjson, [text])).toEqual(expected);
    // Every split point, including inside the two-byte é.
    const bytes = Buffer.from(text);
    for (let i = 1; i < bytes.length; i++) {
      expect(collect(ndjson, [bytes.subarray(0, i), bytes.subarray(i)]), `split at ${i}`).toEqual(expected);
    }
    expect(collect(ndjson, [...bytes].map((b) => Buffer.from([b])))).toEqual(expected);
  });

  it('skips a blank CRLF line whose \\r and \\n arrive in different chunks', () => {
    const bytes = Buffer.from('{"a":1}\r\n\r\n{"b":2}\r\n\r\n');
    const expected: Array<[number, string]> = [[1, '{"a":1}'], [3, '{"b":2}']];
    for (let i = 1; i < bytes.length; i++) {
      expect(collect(ndjson, [bytes.subarray(0, i), bytes.subarray(i)]), `split at ${i}`).toEqual(expected);
    }
    expect(collect(ndjson, [...bytes].map((x) => Buffer.from([x])))).toEqual(expected);
  });

  it('a line over the limit is handed on alone as too long (its length, its start); the lines after it go on', () => {
    const long = 'x'.repeat(100);
    const cases: string[][] = [
      [`{"a":1}\n${long}\n{"b":2}\n`],
      [`{"a":1}\n${long.slice(0, 60)}`, `${long.slice(60)}\n{"b":2}\n`],
      [`{"a":1}\n${long.slice(0, 30)}`, long.slice(30, 60), `${long.slice(60)}\r`, '\n{"b":2}'],
      [`{"a":1}\n${long}\r\n{"b":2}`],
    ];
    for (const chunks of cases) {
      expect(collect(ndjson, chunks, 50), chunks.join('|')).toEqual([[1, '{"a":1}'], [2, 'too long: 100 ' + long], [3, '{"b":2}']]);
    }
    // The last line, unterminated.
    expect(collect(ndjson, [`{"a":1}\n${long}`], 50)).toEqual([[1, '{"a":1}'], [2, 'too long: 100 ' + long]]);
    // Exactly at the limit is fine, with or without CR, whatever the chunking.
    expect(collect(ndjson, [`${'y'.repeat(50)}\n`], 50)).toEqual([[1, 'y'.repeat(50)]]);
    expect(collect(ndjson, [`${'y'.repeat(50)}\r`, '\n'], 50)).toEqual([[1, 'y'.repeat(50)]]);
    expect(collect(ndjson, ['y'.repeat(25), `${'y'.repeat(25)}\r\n`], 50)).toEqual([[1, 'y'.repeat(50)]]);
  });

  it('keeps at most 64 KiB of a too-long line, cut at a character boundary', () => {
    const heads: Buffer[] = [];
    const lines: number[] = [];
    const s = new NdjsonSplitter(1024 * 1024, (_t, n) => lines.push(n), (n, head, bytes) => (heads.push(head), lines.push(-bytes)));
    // 2 MiB of 'é' (2 bytes each) after one ASCII byte: byte 65,536 is the first half of an 'é'.
    const long = Buffer.from(`a${'é'.repeat(1024 * 1024)}`);
    for (let i = 0; i < long.length; i += 10_000) s.push(long.subarray(i, i + 10_000));
    s.push(Buffer.from('\n{"ok":1}\n'));
    s.end();
    expect(lines).toEqual([-(1 + 2 * 1024 * 1024), 2]);
    expect(heads[0].length).toBe(64 * 1024 - 1);
    expect(heads[0].toString()).toBe(`a${'é'.repeat(32 * 1024 - 1)}`);
    expect(wholeCharacters(Buffer.from('aé€😀'))).toEqual(Buffer.from('aé€😀'));
    expect(wholeCharacters(Buffer.from('a😀').subarray(0, 4))).toEqual(Buffer.from('a'));
    expect(wholeCharacters(Buffer.from('a€').subarray(0, 3))).toEqual(Buffer.from('a'));
  });
});

describe('JSON array splitting', () => {
  it('hands on each element, with strings, escapes and nesting, across any chunking', () => {
    const elements = ['{"a":"x,]}"}', '{"b":[1,{"c":"\\"],"}]}', '"str"', '42', '{}'];
    const text = ` [ ${elements.join(' ,\n')} ] \n`;
    const got = collect(array, [text]).map(([n, t]) => [n, t.trim()]);
    expect(got).toEqual(elements.map((e, i) => [i + 1, e]));
    const bytes = Buffer.from(text);
    for (let i = 1; i < bytes.length; i++) {
      expect(collect(array, [bytes.subarray(0, i), bytes.subarray(i)]).map(([n, t]) => [n, t.trim()]), `split at ${i}`).toEqual(got);
    }
  });

  it('an empty array has no lines; an empty element and an unterminated one are handed on (and rejected later)', () => {
    expect(collect(array, ['[]'])).toEqual([]);
    expect(collect(array, ['[{"a":1},,{"b":2}]']).map(([n, t]) => [n, t])).toEqual([[1, '{"a":1}'], [2, ''], [3, '{"b":2}']]);
    expect(collect(array, ['[{"a":1}, {"b":"unterminated']).map(([n]) => n)).toEqual([1, 2]);
  });

  it('refuses a body that is not an array, or data after it', () => {
    expect(() => collect(array, ['{"a":1}'])).toThrow(BodyFormatError);
    expect(() => collect(array, ['[1] [2]'])).toThrow(/after the end of the JSON array/);
  });

  it('hands on an element over the limit alone as too long; the elements after it go on', () => {
    const long = `{"a":"${'x'.repeat(100)}"}`;
    const text = `[{"a":1},${long},{"b":2}]`;
    const expected = [[1, '{"a":1}'], [2, `too long: 108 ${long}`], [3, '{"b":2}']];
    expect(collect(array, [text], 50)).toEqual(expected);
    const bytes = Buffer.from(text);
    for (let i = 1; i < bytes.length; i++) {
      expect(collect(array, [bytes.subarray(0, i), bytes.subarray(i)], 50), `split at ${i}`).toEqual(expected);
    }
    // Unterminated, the last one.
    expect(collect(array, [`[{"a":1},${long}`], 50)).toEqual(expected.slice(0, 2));
  });

  it('application/json: an array is split by element, anything else is read as NDJSON', () => {
    expect(collect(sniff, ['\n ', ' [{"a":1},{"b":2}]']).map(([n]) => n)).toEqual([1, 2]);
    expect(collect(sniff, ['\n', '{"a":1}\n{"b":2}\n'])).toEqual([[2, '{"a":1}'], [3, '{"b":2}']]);
  });
});

describe('a body, per line', () => {
  const deep = `{"timestamp":"2026-11-21T10:00:00Z","level":"INFO","message":"deep","x":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
  const good = (n: number) => JSON.stringify({ timestamp: '2026-11-21T10:00:00Z', level: 'INFO', message: `m${n}` });
  const text = `${good(1)}\r\n\r\n${deep}\r\n${good(4)}\r\nnot json\r\n\r\n${good(7)}`;

  function parse(chunks: Buffer[]) {
    const rows: string[] = [];
    const rejects: string[] = [];
    const parser = new BatchParser(
      { json: false, ctx, maxLineBytes: 1024 * 1024 },
      { onRows: (buf) => rows.push(buf.toString()), onRejects: (buf) => rejects.push(buf.toString()) },
    );
    for (const c of chunks) parser.push(c);
    const summary = parser.end();
    return { summary, rows: rows.join(''), rejects: rejects.join('').split('\n').filter(Boolean).map((r) => JSON.parse(r) as { line: number; reason: string }) };
  }

  it('rejects a line nested 100,000 deep with its reason; its neighbours are accepted', () => {
    const { summary, rows, rejects } = parse([Buffer.from(text)]);
    expect(summary).toEqual({
      accepted: 3,
      rejected: 2,
      errors: [
        { line: 3, reason: 'too_deep: nested 100001 levels deep; at most 1000 can be stored' },
        { line: 5, reason: expect.stringMatching(/^not_json: /) },
      ],
    });
    expect(rows.split('\n').filter(Boolean).map((r) => decodeRow(r).message)).toEqual(['m1', 'm4', 'm7']);
    expect(rejects.map((r) => [r.line, r.reason.split(':')[0]])).toEqual([[3, 'too_deep'], [5, 'not_json']]);
  });

  it('gives the same answer and rows whatever the chunk boundaries', () => {
    const bytes = Buffer.from(text);
    const whole = parse([bytes]);
    // Every split point around the CRLF blank lines and the short lines; a few inside the deep one.
    const points = [...Array.from({ length: 40 }, (_, i) => i + 40), ...Array.from({ length: 40 }, (_, i) => bytes.length - 60 + i), 150_000];
    for (const i of points) {
      expect(parse([bytes.subarray(0, i), bytes.subarray(i)]), `split at ${i}`).toEqual(whole);
    }
  });
});
