// mapLine and its timestamp rules (src/collectors/log-line.ts), at their edges (issue 31: the mutants
// map-line.test.ts left alive). Every expected row and instant is written out by hand: the TabSeparated row in the
// column order of the `logs` insert, DateTime64(3) text worked out from the ISO text and its offset, the calendar
// (30-day months, leap years by the Gregorian rule), and DateTime64's range 1900-01-01 .. 2299-12-31 23:59:59.999.
import { describe, expect, it } from 'vitest';
import { mapLine, mapLineSafely, tsvField, unescapeTsvField } from '../../../src/collectors/log-line.js';
import { isoToDateTime64 } from '../../../src/values.js';

/** The drain's reading of a timestamp: the one ISO 8601 reader (src/values.ts), undefined for none. */
const toDateTime64Text = (text: string): string | undefined => isoToDateTime64(text) ?? undefined;

const ctx = { receivedAt: '2026-11-21 12:00:00.000', batchId: '0b8e7a6c-1f7e-4d64-9a54-3c1b7d1f2e11' };

/** The row for these fields, columns in the insert's order: timestamp, level, the nine labels, message, attributes, received_at, batch_id, line. */
const expectedRow = (f: { at: string; level: string; labels?: string[]; message: string; attributes?: string; line?: number }) =>
  [f.at, f.level, ...(f.labels ?? Array(9).fill('')), f.message, f.attributes ?? '{}', ctx.receivedAt, ctx.batchId, String(f.line ?? 1)].join('\t');

const ok = (text: string, line = 1) => {
  const r = mapLine(text, line, ctx);
  if (!r.ok) throw new Error(r.reason);
  return r.row;
};
const line = (fields: Record<string, unknown>) => JSON.stringify({ timestamp: '2026-11-21T10:00:00Z', message: 'm', level: 'info', ...fields });

describe('toDateTime64Text: the calendar', () => {
  it.each([
    ['2026-01-31T00:00:00Z', '2026-01-31 00:00:00.000'],
    ['2026-03-31T00:00:00Z', '2026-03-31 00:00:00.000'],
    ['2026-04-30T00:00:00Z', '2026-04-30 00:00:00.000'],
    ['2026-12-31T23:59:59Z', '2026-12-31 23:59:59.000'],
    ['2026-02-28T00:00:00Z', '2026-02-28 00:00:00.000'],
    ['2024-02-29T00:00:00Z', '2024-02-29 00:00:00.000'],
    ['2000-02-29T00:00:00Z', '2000-02-29 00:00:00.000'],
    ['2026-01-01T00:00:00Z', '2026-01-01 00:00:00.000'],
  ])('%s exists', (text, expected) => {
    expect(toDateTime64Text(text)).toBe(expected);
  });

  it.each(['2026-04-31T00:00:00Z', '2026-06-31T00:00:00Z', '2026-02-29T00:00:00Z', '1900-02-29T00:00:00Z', '2100-02-29T00:00:00Z', '2026-00-10T00:00:00Z', '2026-13-10T00:00:00Z', '2026-05-00T00:00:00Z', '2026-05-01T00:60:00Z', '2026-05-01T00:00:60Z', '2026-05-01T24:00:00Z'])(
    '%s does not exist',
    (text) => {
      expect(toDateTime64Text(text)).toBeUndefined();
    },
  );

  it('a time without seconds has 0 seconds, in the platform form and with an offset', () => {
    expect(toDateTime64Text('2026-11-21T10:07Z')).toBe('2026-11-21 10:07:00.000');
    expect(toDateTime64Text('2026-11-21T10:07+01:00')).toBe('2026-11-21 09:07:00.000');
    expect(toDateTime64Text('2026-11-21T10:07:59+01:00')).toBe('2026-11-21 09:07:59.000');
  });

  it('fractions: cut to milliseconds, padded when shorter', () => {
    expect(toDateTime64Text('2026-11-21T10:00:00.123456Z')).toBe('2026-11-21 10:00:00.123');
    expect(toDateTime64Text('2026-11-21T10:00:00.5Z')).toBe('2026-11-21 10:00:00.500');
    expect(toDateTime64Text('2026-11-21T10:00:00.123+00:00')).toBe('2026-11-21 10:00:00.123');
    expect(toDateTime64Text('2026-11-21T10:00:00.98765-00:30')).toBe('2026-11-21 10:30:00.987');
  });

  it('the text must be a date-time from its first character to its last', () => {
    expect(toDateTime64Text('x2026-11-21T10:00:00Z')).toBeUndefined();
    expect(toDateTime64Text('2026-11-21T10:00:00Zjunk')).toBeUndefined();
    expect(toDateTime64Text('2026-11-21T10:00:00+01:00 ')).toBeUndefined();
  });
});

describe('toDateTime64Text: offsets', () => {
  it('an offset of hours only, with or without minutes, with or without the colon', () => {
    expect(toDateTime64Text('2026-11-21T10:00:00+05')).toBe('2026-11-21 05:00:00.000');
    expect(toDateTime64Text('2026-11-21T10:00:00-0530')).toBe('2026-11-21 15:30:00.000');
    expect(toDateTime64Text('2026-11-21T10:00:00+23:59')).toBe('2026-11-20 10:01:00.000');
  });

  it('an offset past 23 hours or 59 minutes is refused', () => {
    expect(toDateTime64Text('2026-11-21T10:00:00+24:00')).toBeUndefined();
    expect(toDateTime64Text('2026-11-21T10:00:00+05:60')).toBeUndefined();
    expect(toDateTime64Text('2026-11-21T10:00:00-24')).toBeUndefined();
  });
});

describe("toDateTime64Text: DateTime64's range", () => {
  it('the first and last instants it holds, in the platform form', () => {
    expect(toDateTime64Text('1900-01-01T00:00:00Z')).toBe('1900-01-01 00:00:00.000');
    expect(toDateTime64Text('2299-12-31T23:59:59.999Z')).toBe('2299-12-31 23:59:59.999');
    expect(toDateTime64Text('1899-12-31T23:59:59.999Z')).toBeUndefined();
    expect(toDateTime64Text('2300-01-01T00:00:00Z')).toBeUndefined();
  });

  it('with an offset, the instant decides (not the written year)', () => {
    expect(toDateTime64Text('1900-01-01T01:00:00+01:00')).toBe('1900-01-01 00:00:00.000');
    expect(toDateTime64Text('1900-01-01T00:59:59.999+01:00')).toBeUndefined();
    expect(toDateTime64Text('1899-12-31T23:00:00-01:00')).toBe('1900-01-01 00:00:00.000');
    expect(toDateTime64Text('2300-01-01T00:59:59.999+01:00')).toBe('2299-12-31 23:59:59.999');
    expect(toDateTime64Text('2300-01-01T01:00:00+01:00')).toBeUndefined();
    expect(toDateTime64Text('2299-12-31T23:59:59.999-00:01')).toBeUndefined();
  });

  it('a two-digit year is not read as 19xx (Date.UTC would): refused', () => {
    expect(toDateTime64Text('0099-06-01T00:00:00+01:00')).toBeUndefined();
    expect(toDateTime64Text('0050-06-01T00:00:00+00:00')).toBeUndefined();
  });
});

describe('mapLine: the row', () => {
  it('a line with the required fields only: every label empty, attributes {}, the line number last', () => {
    expect(ok(line({}), 3)).toBe(expectedRow({ at: '2026-11-21 10:00:00.000', level: 'info', message: 'm', line: 3 }));
  });

  it('each svc_* field in its column', () => {
    const labels = ['svc_app_name', 'svc_app_id', 'svc_request_id', 'svc_job_id', 'svc_endpoint', 'svc_node_id', 'svc_worker_id', 'svc_source', 'svc_isolate_source'];
    const text = line(Object.fromEntries(labels.map((k, i) => [k, `v${i}`])));
    expect(ok(text)).toBe(expectedRow({ at: '2026-11-21 10:00:00.000', level: 'info', labels: ['v0', 'v1', 'v2', 'v3', 'v4', 'v5', 'v6', 'v7', 'v8'], message: 'm' }));
  });

  it('a label given as null is empty, like an absent one; one given as a number is its JSON text', () => {
    const labels = ['svc_app_name', 'svc_app_id', 'svc_request_id', 'svc_job_id', 'svc_endpoint', 'svc_node_id', 'svc_worker_id', 'svc_source', 'svc_isolate_source'];
    expect(ok(line(Object.fromEntries(labels.map((k) => [k, null]))))).toBe(expectedRow({ at: '2026-11-21 10:00:00.000', level: 'info', message: 'm' }));
    expect(ok(line(Object.fromEntries(labels.map((k, i) => [k, i]))))).toBe(
      expectedRow({ at: '2026-11-21 10:00:00.000', level: 'info', labels: ['0', '1', '2', '3', '4', '5', '6', '7', '8'], message: 'm' }),
    );
  });

  it('a value made only of characters TabSeparated escapes is escaped whole', () => {
    expect(ok(line({ message: '\\', level: '\t' }))).toBe(expectedRow({ at: '2026-11-21 10:00:00.000', level: '\\t', message: '\\\\' }));
    expect(ok(line({ message: '\n\r\0' }))).toBe(expectedRow({ at: '2026-11-21 10:00:00.000', level: 'info', message: '\\n\\r\\0' }));
    expect(ok(line({ svc_app_name: '\\' }))).toBe(expectedRow({ at: '2026-11-21 10:00:00.000', level: 'info', labels: ['\\\\', '', '', '', '', '', '', '', ''], message: 'm' }));
  });

  it("attributes: keys and values quoted, a quote or backslash inside escaped (a key that is only a quote too)", () => {
    expect(ok(line({ "'": '\\', k: "a'b", n: 1.5, o: { x: [1] }, z: null }))).toBe(
      expectedRow({ at: '2026-11-21 10:00:00.000', level: 'info', message: 'm', attributes: "{'\\'':'\\\\','k':'a\\'b','n':'1.5','o':'{\"x\":[1]}','z':'null'}" }),
    );
    expect(ok(line({ t: 'a\tb' }))).toBe(expectedRow({ at: '2026-11-21 10:00:00.000', level: 'info', message: 'm', attributes: "{'t':'a\\tb'}" }));
  });
});

describe('mapLine: refusals', () => {
  const reason = (text: string) => {
    const r = mapLine(text, 1, ctx);
    return r.ok ? 'accepted' : `${r.code} | ${r.reason}`;
  };

  it('a line that is not an object names what it is', () => {
    expect(reason('null')).toBe('not_object | not_object: a line must be a JSON object, got null');
    expect(reason('[1]')).toBe('not_object | not_object: a line must be a JSON object, got an array');
    expect(reason('7')).toBe('not_object | not_object: a line must be a JSON object, got number');
    expect(reason('"s"')).toBe('not_object | not_object: a line must be a JSON object, got string');
    expect(reason('true')).toBe('not_object | not_object: a line must be a JSON object, got boolean');
  });

  it('message or level given as null is missing', () => {
    expect(reason('{"timestamp":"2026-11-21T10:00:00Z","message":null,"level":"info"}')).toBe('missing_message | missing_message: the line has no message');
    expect(reason('{"timestamp":"2026-11-21T10:00:00Z","message":"m","level":null}')).toBe('missing_level | missing_level: the line has no level');
    expect(reason('{"timestamp":null,"message":"m","level":"info"}')).toBe('missing_timestamp | missing_timestamp: the line has no timestamp');
  });

  it('a timestamp that is not a string names its type', () => {
    expect(reason('{"timestamp":1795000000000,"message":"m","level":"info"}')).toBe('bad_timestamp | bad_timestamp: expected an ISO 8601 date-time string, got number');
    expect(reason('{"timestamp":["2026-11-21T10:00:00Z"],"message":"m","level":"info"}')).toBe('bad_timestamp | bad_timestamp: expected an ISO 8601 date-time string, got an array');
  });

  it('not JSON: a message that quotes no input is kept whole', () => {
    // The engine's own words (V8 12 on Node 24 adds the line and column: "... at position 1 (line 1 column 2)").
    const engine = (text: string) => {
      try {
        JSON.parse(text);
      } catch (err) {
        return (err as Error).message;
      }
      throw new Error(`${text} parsed`);
    };
    expect(engine('{')).toMatch(/^Expected property name or '}' in JSON at position 1( \(line 1 column 2\))?$/);
    expect(reason('{')).toBe(`not_json | not_json: ${engine('{')}`);
    expect(reason('tru')).toBe('not_json | not_json: Unexpected end of JSON input');
    expect(engine('{"a":1} x')).toMatch(/^Unexpected non-whitespace character after JSON at position 8( \(line 1 column 9\))?$/);
    expect(reason('{"a":1} x')).toBe(`not_json | not_json: ${engine('{"a":1} x')}`);
  });
});

describe('mapLineSafely', () => {
  const nested = (depth: number) => `{"timestamp":"2026-11-21T10:00:00Z","message":"m","level":"info","deep":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;

  it('a line nested past 1000 levels: too_deep, with its depth', () => {
    expect(mapLineSafely(nested(100_000), 1, ctx)).toEqual({ ok: false, code: 'too_deep', reason: 'too_deep: nested 100000 levels deep; at most 1000 can be stored' });
  });

  it('anything else mapLine throws (here: the stack runs out with 1000 levels, which may be stored) is that line\'s unmappable reject', () => {
    // Called with almost no stack left, as deep in a call chain as it can be entered: the first answer coming back
    // up is from a call whose mapping ran out of stack while its handler did not.
    let answer: ReturnType<typeof mapLineSafely> | undefined;
    const text = nested(1000);
    const dive = (): void => {
      try {
        dive();
      } catch {
        // the stack is exhausted below this frame
      }
      if (answer !== undefined) return;
      try {
        answer = mapLineSafely(text, 1, ctx);
      } catch {
        // not even the handler fitted: the frame above tries
      }
    };
    dive();
    expect(answer).toEqual({ ok: false, code: 'unmappable', reason: 'unmappable: the line could not be turned into a row (RangeError)' });
    // With room, the same line maps.
    expect(mapLineSafely(text, 1, ctx).ok).toBe(true);
  });
});

describe('unescapeTsvField', () => {
  it("reads a TabSeparated String field back as the store does: \\t \\n \\r \\0 \\\\ \\' and any other escaped character as itself", () => {
    // Hand-written fields (ClickHouse's TabSeparated escapes) and their values.
    expect(unescapeTsvField('plain text')).toBe('plain text');
    expect(unescapeTsvField('a\\tb\\nc\\rd\\0e')).toBe('a\tb\nc\rd\0e');
    expect(unescapeTsvField('team\\\\web')).toBe('team\\web');
    expect(unescapeTsvField("it\\'s")).toBe("it's");
    expect(unescapeTsvField('\\x\\\\t')).toBe('x\\t');
    // The inverse of what the rows are written with.
    for (const value of ['team\\web', 'tab\there', 'line\nbreak\r', 'nul\0', '\\\\']) expect(unescapeTsvField(tsvField(value))).toBe(value);
  });
});
