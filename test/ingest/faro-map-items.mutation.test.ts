// Issue 31: mapItems (src/ingest/faro/map-items.ts) row by row, for mutation testing. The oracle is the Faro
// payload's shape (@grafana/faro-core's TransportBody: meta, logs, exceptions, measurements, events, traces), the
// faro_items columns (src/store/tables/faro-items.ts) and the module's documented rules: meta on every row, one
// reject per bad item with its reason and its place in the payload, the request id an item names (an attribute
// request_id/requestId/svc_request_id holding a UUID, else a queue URL .../requests/<uuid>). Every expected row
// below is written out by hand.
import type { TransportBody } from '@grafana/faro-core';
import { describe, expect, it } from 'vitest';
import { mapItems, parseFaroTimestamp, requestIdOf } from '../../src/ingest/faro/map-items.js';

const RECEIVED = Date.parse('2026-11-21T12:00:00Z');
const RECEIVED_TEXT = '2026-11-21 12:00:00.000';
const map = (body: unknown, extra: { checkDepth?: boolean; retentionDays?: number; sessionHeader?: string } = {}) =>
  mapItems(body as TransportBody, { app: 'shop-web', sessionHeader: undefined, receivedAtMs: RECEIVED, retentionDays: 90, ...extra });

const META = {
  app: { name: 'ignored', namespace: 'shop', release: 'r-42', version: '1.2.3', environment: 'production' },
  session: { id: 'sess-9', attributes: { plan: 'pro', seats: 3 } },
  user: { id: 'user-7' },
  page: { url: 'https://shop.example/cart' },
};
const COMMON = {
  received_at: RECEIVED_TEXT,
  app: 'shop-web',
  app_namespace: 'shop',
  release: 'r-42',
  app_version: '1.2.3',
  environment: 'production',
  session_id: 'sess-9',
  user_id: 'user-7',
  page_url: 'https://shop.example/cart',
};
const RID = '0b6a4c1e-2f3d-4a5b-8c7d-9e0f1a2b3c4d';

describe('mapItems: every kind, with the payload meta on each row', () => {
  it('maps a log, an exception, a measurement, an event and the traces to their columns', () => {
    const body = {
      meta: META,
      logs: [{ message: 'cart loaded', level: 'warn', context: { step: 'two' }, timestamp: '2026-11-21T11:59:00.250Z', trace: { trace_id: 't-1', span_id: 's-1' } }],
      exceptions: [{ type: 'TypeError', value: 'x is undefined', stacktrace: { frames: [{ filename: 'a.js', lineno: 3 }] }, context: { k: 'v' }, timestamp: '2026-11-21T11:59:01Z' }],
      measurements: [{ type: 'web-vitals', values: { lcp: 1234.5, cls: 0.02 }, context: { page: 'cart' }, timestamp: '2026-11-21T11:59:02Z' }],
      events: [{ name: 'checkout', domain: 'shop', attributes: { total: '12.50' }, timestamp: '2026-11-21T11:59:03Z', trace: { trace_id: 't-4' } }],
      traces: { resourceSpans: [] },
    };
    const out = map(body);
    expect(out.rejects).toEqual([]);
    expect(out.rows).toEqual([
      {
        ...COMMON,
        kind: 'log',
        level: 'warn',
        message: 'cart loaded',
        domain: '',
        values: {},
        attributes: { plan: 'pro', seats: '3', step: 'two' },
        trace_id: 't-1',
        span_id: 's-1',
        timestamp: '2026-11-21 11:59:00.250',
        request_id: '',
        raw: JSON.stringify(body.logs[0]),
      },
      {
        ...COMMON,
        kind: 'exception',
        level: 'error',
        message: 'TypeError: x is undefined',
        domain: '',
        values: {},
        attributes: { plan: 'pro', seats: '3', k: 'v', stacktrace: '{"frames":[{"filename":"a.js","lineno":3}]}' },
        trace_id: '',
        span_id: '',
        timestamp: '2026-11-21 11:59:01.000',
        request_id: '',
        raw: JSON.stringify(body.exceptions[0]),
      },
      {
        ...COMMON,
        kind: 'measurement',
        level: '',
        message: 'web-vitals',
        domain: '',
        values: { lcp: 1234.5, cls: 0.02 },
        attributes: { plan: 'pro', seats: '3', page: 'cart' },
        trace_id: '',
        span_id: '',
        timestamp: '2026-11-21 11:59:02.000',
        request_id: '',
        raw: JSON.stringify(body.measurements[0]),
      },
      {
        ...COMMON,
        kind: 'event',
        level: '',
        message: 'checkout',
        domain: 'shop',
        values: {},
        attributes: { plan: 'pro', seats: '3', total: '12.50' },
        trace_id: 't-4',
        span_id: '',
        timestamp: '2026-11-21 11:59:03.000',
        request_id: '',
        raw: JSON.stringify(body.events[0]),
      },
      {
        ...COMMON,
        kind: 'traces',
        level: '',
        message: '',
        domain: '',
        values: {},
        attributes: { plan: 'pro', seats: '3' },
        trace_id: '',
        span_id: '',
        timestamp: RECEIVED_TEXT,
        request_id: '',
        raw: '{"resourceSpans":[]}',
      },
    ]);
  });

  it('an item attribute wins over a session attribute of the same name; an exception without stacktrace has none', () => {
    const out = map({ meta: { session: { id: 's', attributes: { plan: 'pro' } } }, exceptions: [{ type: 'E', value: 'v', context: { plan: 'free' } }] });
    expect(out.rows[0].attributes).toEqual({ plan: 'free' });
  });

  it('without meta: empty texts; the session from the x-faro-session-id header; meta.session.id wins over it', () => {
    const bare = map({ logs: [{ message: 'm' }] }, { sessionHeader: 'hdr-1' });
    expect(bare.rows[0]).toMatchObject({
      app: 'shop-web', app_namespace: '', release: '', app_version: '', environment: '', session_id: 'hdr-1', user_id: '', page_url: '', level: '', attributes: {}, trace_id: '', span_id: '',
    });
    expect(map({ logs: [{ message: 'm' }] }).rows[0].session_id).toBe('');
    expect(map({ meta: { session: { id: 'meta-1' } }, logs: [{ message: 'm' }] }, { sessionHeader: 'hdr-1' }).rows[0].session_id).toBe('meta-1');
    // A meta that is not an object counts as none.
    expect(map({ meta: 'nonsense', logs: [{ message: 'm' }] }, { sessionHeader: 'hdr-2' }).rows[0].session_id).toBe('hdr-2');
  });

  it('a field is text of at most 16 Ki characters: numbers and objects as JSON, null as empty', () => {
    const long = 'z'.repeat(16 * 1024 + 5);
    const out = map({ meta: { app: { release: 7, version: null, namespace: long }, user: { id: { n: 1 } } }, logs: [{ message: long, level: 3, context: ['a', 'b'] }] });
    expect(out.rows[0]).toMatchObject({ release: '7', app_version: '', app_namespace: 'z'.repeat(16 * 1024), user_id: '{"n":1}', message: 'z'.repeat(16 * 1024), level: '3', attributes: {} });
    // Exactly 16 Ki characters is kept whole.
    expect(map({ logs: [{ message: 'q'.repeat(16 * 1024) }] }).rows[0].message).toHaveLength(16 * 1024);
  });

  it('session attributes that are an array or null count as none', () => {
    expect(map({ meta: { session: { id: 's', attributes: ['x'] } }, logs: [{ message: 'm' }] }).rows[0].attributes).toEqual({});
    expect(map({ meta: { session: { id: 's', attributes: null } }, logs: [{ message: 'm' }] }).rows[0].attributes).toEqual({});
  });

  it('traces longer than 1 MiB of JSON are cut to 1 MiB', () => {
    const traces = { s: 'x'.repeat(1024 * 1024) };
    const out = map({ traces });
    expect(out.rows[0].raw).toBe(`{"s":"${'x'.repeat(1024 * 1024 - 6)}`);
    const exact = { s: 'x'.repeat(1024 * 1024 - 8) }; // 1 MiB of JSON exactly: kept whole
    expect(map({ traces: exact }).rows[0].raw).toBe(JSON.stringify(exact));
  });
});

describe('mapItems: the request id an item names', () => {
  it('from an attribute request_id, requestId or svc_request_id holding a UUID (lowercased)', () => {
    const out = map({
      logs: [
        { message: 'a', context: { request_id: RID.toUpperCase() } },
        { message: 'b', context: { requestId: `id=${RID};` } },
        { message: 'c', context: { svc_request_id: RID } },
        { message: 'd', context: { request: RID } },
        { message: 'e', context: { request_id: 'not-a-uuid' } },
      ],
    });
    expect(out.rows.map((r) => r.request_id)).toEqual([RID, RID, RID, '', '']);
  });

  it('else from a queue URL in an attribute, the message or the page URL; a bare UUID elsewhere is not one', () => {
    const url = `https://queue.svc.run/svc-ai/flux/requests/${RID.toUpperCase()}/status`;
    expect(map({ logs: [{ message: 'a', context: { url } }] }).rows[0].request_id).toBe(RID);
    expect(map({ logs: [{ message: `GET ${url} 200` }] }).rows[0].request_id).toBe(RID);
    expect(map({ meta: { page: { url } }, logs: [{ message: 'x' }] }).rows[0].request_id).toBe(RID);
    expect(map({ logs: [{ message: `saw ${RID}` }] }).rows[0].request_id).toBe('');
    expect(map({ events: [{ name: `/requests/${RID}` }] }).rows[0].request_id).toBe(RID);
  });

  it('requestIdOf: an attribute named as a request id comes first, then the texts in order', () => {
    const other = '11111111-2222-4333-8444-555555555555';
    expect(requestIdOf({ link: `/requests/${other}`, request_id: RID })).toBe(RID);
    expect(requestIdOf({}, 'nothing', `/requests/${other}`, `/requests/${RID}`)).toBe(other);
    // A UUID needs whole words: one glued to more hex digits is not one.
    expect(requestIdOf({ request_id: `${RID}0` })).toBe('');
    expect(requestIdOf({}, `/requests/${RID}abc`)).toBe('');
    expect(requestIdOf({}, `/request/${RID}`)).toBe('');
    expect(requestIdOf({})).toBe('');
  });
});

describe('mapItems: each bad item refused alone, with its reason and its place', () => {
  it('the reason of each kind, counting places across kinds', () => {
    const out = map({
      logs: [{ message: 1 }, 'text', null, [1]],
      exceptions: [{ type: 'E' }, { value: 'v' }, { type: 'E', value: 'v' }],
      measurements: [{ values: { a: 1 } }, { type: 't' }, { type: 't', values: { a: 'one' } }, { type: 't', values: { a: null } }, { type: 't', values: {} }],
      events: [{ domain: 'd' }, { name: 'ok' }],
    });
    expect(out.rows.map((r) => [r.kind, r.message])).toEqual([
      ['exception', 'E: v'],
      ['measurement', 't'],
      ['event', 'ok'],
    ]);
    expect(out.rejects.map((r) => [r.index, r.reason, r.raw])).toEqual([
      [0, 'log: message must be a string', '{"message":1}'],
      [1, 'log: expected an object', '"text"'],
      [2, 'log: expected an object', 'null'],
      [3, 'log: expected an object', '[1]'],
      [4, 'exception: type and value must be strings', '{"type":"E"}'],
      [5, 'exception: type and value must be strings', '{"value":"v"}'],
      [7, 'measurement: type must be a string', '{"values":{"a":1}}'],
      [8, 'measurement: values must be an object of finite numbers', '{"type":"t"}'],
      [9, 'measurement: values must be an object of finite numbers', '{"type":"t","values":{"a":"one"}}'],
      [10, 'measurement: values must be an object of finite numbers', '{"type":"t","values":{"a":null}}'],
      [12, 'event: name must be a string', '{"domain":"d"}'],
    ]);
  });

  it('measurement values that are not finite (JSON cannot say it, an object can) are refused', () => {
    const out = map({ measurements: [{ type: 't', values: { a: Number.POSITIVE_INFINITY } }, { type: 't', values: { a: Number.NaN } }, { type: 't', values: 5 }] });
    expect(out.rows).toEqual([]);
    expect(out.rejects.map((r) => r.reason)).toEqual([
      'measurement: values must be an object of finite numbers',
      'measurement: values must be an object of finite numbers',
      'measurement: values must be an object of finite numbers',
    ]);
  });

  it('a list that is not an array is one reject of its kind, its text as raw; the next item counts on', () => {
    const out = map({ logs: { message: 'm' }, events: [{ name: 'e' }], measurements: 'x' });
    expect(out.rejects.map((r) => [r.index, r.reason, r.raw])).toEqual([
      [0, 'logs: expected an array', '{"message":"m"}'],
      [1, 'measurements: expected an array', 'x'],
    ]);
    expect(out.rows.map((r) => r.kind)).toEqual(['event']);
  });

  it('a timestamp that is not a strict ISO 8601 text (a number, no zone) is refused with the format asked', () => {
    const out = map({ logs: [{ message: 'a', timestamp: RECEIVED }, { message: 'b', timestamp: '2026-11-21T10:00:00' }, { message: 'c', timestamp: null }] });
    expect(out.rows).toEqual([]);
    expect(out.rejects.map((r) => r.reason)).toEqual(Array(3).fill('log: timestamp is not an ISO 8601 date-time with a zone (like 2026-11-21T10:00:00.000Z)'));
  });

  it('the retention asked for is the one applied and named', () => {
    const out = map({ events: [{ name: 'old', timestamp: '2026-11-11T11:59:59.999Z' }, { name: 'kept', timestamp: '2026-11-11T12:00:00Z' }] }, { retentionDays: 10 });
    expect(out.rows.map((r) => [r.message, r.timestamp])).toEqual([['kept', '2026-11-11 12:00:00.000']]);
    expect(out.rejects.map((r) => r.reason)).toEqual(['event: timestamp is older than the 10-day retention (FARO_RETENTION_DAYS): it would be dropped as soon as stored']);
  });

  it('an item whose mapping throws is refused alone as unmappable, naming the error (or "error")', () => {
    const throwing = (e: unknown) => ({
      message: 'm',
      level: {
        toJSON() {
          throw e;
        },
      },
    });
    const out = map({ logs: [{ message: 'before' }, throwing(new RangeError('no')), { message: 'after' }, throwing('not an Error'), throwing(null)] });
    expect(out.rows.map((r) => r.message)).toEqual(['before', 'after']);
    expect(out.rejects.map((r) => [r.index, r.reason])).toEqual([
      [1, 'log: unmappable: RangeError'],
      [3, 'log: unmappable: error'],
      [4, 'log: unmappable: error'],
    ]);
  });

  it('checkDepth false skips the depth walk (the receiver found no deep nesting in the text); unset walks it', () => {
    const nested = (n: number): unknown => (n === 0 ? 'x' : { a: nested(n - 1) });
    const deepLog = { message: 'deep', context: nested(1000) };
    expect(map({ logs: [deepLog] }, { checkDepth: false }).rows).toHaveLength(1);
    expect(map({ logs: [deepLog] }).rejects.map((r) => r.reason)).toEqual(['log: too_deep: nested 1001 levels deep; at most 1000 can be stored']);
    expect(map({ logs: [deepLog] }, { checkDepth: true }).rejects).toHaveLength(1);
    // 1000 levels exactly is stored.
    expect(map({ logs: [{ message: 'edge', context: nested(999) }] }).rows).toHaveLength(1);
    const deepTraces = nested(1001);
    expect(map({ traces: deepTraces }, { checkDepth: false }).rows.map((r) => r.kind)).toEqual(['traces']);
    expect(map({ traces: deepTraces }).rejects.map((r) => [r.index, r.reason])).toEqual([[0, 'traces: too_deep: nested 1001 levels deep; at most 1000 can be stored']]);
    expect(map({ traces: nested(1000) }).rows.map((r) => r.kind)).toEqual(['traces']);
  });

  it('an item of exactly 1 MiB of JSON is kept; one byte more is too large', () => {
    const frame = JSON.stringify({ message: '' }).length;
    const exact = { message: 'm'.repeat(1024 * 1024 - frame) };
    const over = { message: 'm'.repeat(1024 * 1024 - frame + 1) };
    const out = map({ logs: [exact, over] });
    expect(out.rows).toHaveLength(1);
    expect(out.rejects.map((r) => [r.index, r.reason])).toEqual([[1, 'log: too_large: 1048577 bytes, over the 1048576-byte item limit']]);
  });
});

describe('parseFaroTimestamp: the accepted forms', () => {
  it('a lower-case z, an offset with or without colon, minutes only, 1 to 9 fraction digits', () => {
    expect(parseFaroTimestamp('2026-11-21t10:00:00z')).toBe(Date.parse('2026-11-21T10:00:00Z'));
    expect(parseFaroTimestamp('2026-11-21T15:30:00+05:30')).toBe(Date.parse('2026-11-21T10:00:00Z'));
    expect(parseFaroTimestamp('2026-11-21T15:30:00+0530')).toBe(Date.parse('2026-11-21T10:00:00Z'));
    expect(parseFaroTimestamp('2026-11-21T10:00Z')).toBe(Date.parse('2026-11-21T10:00:00Z'));
    expect(parseFaroTimestamp('2026-11-21T10:00:00.5Z')).toBe(Date.parse('2026-11-21T10:00:00.500Z'));
    for (const bad of ['2026-11-21T10:00:00.1234567891Z', ' 2026-11-21T10:00:00Z', '2026-11-21T10:00:00Z ', '2026-11-21T10:00:00.Z', '2026-11-21T10:00:00+5:30', '26-11-21T10:00:00Z']) {
      expect(parseFaroTimestamp(bad), bad).toBeUndefined();
    }
  });
});

describe('mapItems: what the first mutation run left', () => {
  it('a context or attributes that is text or a number counts as none (never its characters)', () => {
    const out = map({ logs: [{ message: 'a', context: 'ab' }, { message: 'b', context: 7 }], events: [{ name: 'e', attributes: 'xy' }] });
    expect(out.rows.map((r) => r.attributes)).toEqual([{}, {}, {}]);
  });

  it('a timestamp that is not a string is refused even when its text would be a time', () => {
    const out = map({ logs: [{ message: 'a', timestamp: ['2026-11-21T11:00:00Z'] }] });
    expect(out.rows).toEqual([]);
    expect(out.rejects.map((r) => r.reason)).toEqual(['log: timestamp is not an ISO 8601 date-time with a zone (like 2026-11-21T10:00:00.000Z)']);
  });

  it('a null meta counts as none', () => {
    expect(map({ meta: null, logs: [{ message: 'm' }] }, { sessionHeader: 'hdr-3' }).rows.map((r) => [r.session_id, r.app_namespace])).toEqual([['hdr-3', '']]);
  });
});
