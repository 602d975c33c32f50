// Issue 31: the parts of src/collectors/requests.ts that requests-units.test.ts leaves to the store tests (the
// sink's batching and its two-batches bound, the window's counts and rejects, the page query, the bounded
// concurrency), tested with a recording writer and platform so that mutation testing can afford them. Expected
// counts and bytes are worked by hand from the inputs; the query from the platform interface (by-endpoint: at most
// 50 endpoint ids, explicit start/end, expand=billing, sort_by=ended_at, limit 100).
import { describe, expect, it } from 'vitest';
import {
  collectRequestWindow,
  coveringEndpointIds,
  dayChunks,
  forEachLimited,
  PAGE_LIMIT,
  RequestSink,
  requestPages,
  SINK_BUFFER_BYTES,
  toRequestLine,
} from '../../src/collectors/requests.js';
import type { JobContext } from '../../src/collectors/job.js';
import type { BatchWriter, RejectRow, WriteResult } from '../../src/store/writer.js';

const collected = { collectedAtMs: 1_790_000_000_000, collectedAt: '2026-09-21 14:13:20.000' };
const item = {
  request_id: 'r-1',
  endpoint_id: 'acme/app',
  ended_at: '2026-11-21T10:00:03Z',
  status_code: 200,
  duration: 2.8,
  billable_units: 2.8,
};

interface Deferred<T> {
  promise: Promise<T>;
  resolve(v: T): void;
  reject(e: unknown): void;
}
function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A writer that records what it is handed; each insert answers with `answer(lines)` unless held. */
function recordingWriter(opts: { hold?: boolean; refuseEvery?: number } = {}) {
  const inserts: Array<{ table: string; lines: string[]; done: Deferred<WriteResult> }> = [];
  const rejects: RejectRow[][] = [];
  const flushed: string[] = [];
  const writer = {
    insertLines(table: { name: string }, lines: string[]) {
      const done = deferred<WriteResult>();
      inserts.push({ table: table.name, lines, done });
      const refused = opts.refuseEvery ? lines.filter((_, i) => i % opts.refuseEvery! === 0).length : 0;
      if (!opts.hold) done.resolve({ written: lines.length - refused, rejected: refused });
      return done.promise;
    },
    // The sink hands its rows over encoded: newline-terminated lines in chunks, with their count.
    insertEncodedLines(table: { name: string }, chunks: Buffer[], rows: number) {
      const text = Buffer.concat(chunks).toString('utf8');
      expect(text.endsWith('\n'), 'every encoded row ends with a newline').toBe(true);
      const lines = text.slice(0, -1).split('\n');
      expect(lines.length, 'the row count handed with the chunks').toBe(rows);
      return writer.insertLines(table, lines);
    },
    reject(rows: readonly RejectRow[]) {
      rejects.push([...rows]);
      return Promise.resolve({ written: rows.length, rejected: 0 });
    },
    async flush(which?: { name: string } | string) {
      flushed.push(typeof which === 'string' ? which : (which?.name ?? 'all'));
    },
  };
  return { writer: writer as unknown as BatchWriter, inserts, rejects, flushed };
}

describe('RequestSink', () => {
  it('hands a batch over once it holds batchRows lines, and the rest on finish', async () => {
    const w = recordingWriter();
    const sink = new RequestSink(w.writer, 3, 1_000_000);
    await sink.add(['a', 'b'], []);
    expect(w.inserts).toHaveLength(0);
    await sink.add(['c', 'd'], []);
    expect(w.inserts.map((i) => [i.table, i.lines])).toEqual([['requests', ['a', 'b', 'c', 'd']]]);
    await sink.add(['e'], []);
    expect(w.inserts).toHaveLength(1);
    expect(await sink.finish()).toEqual({ written: 5, refused: 0 });
    expect(w.inserts.map((i) => i.lines)).toEqual([['a', 'b', 'c', 'd'], ['e']]);
    expect(w.flushed.sort()).toEqual(['ingest_rejects', 'requests']);
  });

  it('hands a batch over at exactly batchRows lines', async () => {
    const w = recordingWriter();
    const sink = new RequestSink(w.writer, 2, 1_000_000);
    await sink.add(['a'], []);
    expect(w.inserts).toHaveLength(0);
    await sink.add(['b'], []);
    expect(w.inserts.map((i) => i.lines)).toEqual([['a', 'b']]);
  });

  it('counts each line with its newline against batchBytes', async () => {
    // Lines of 9 characters are 10 bytes each with the newline: 20 bytes reach a batchBytes of 20 at the 2nd line.
    const w = recordingWriter();
    const sink = new RequestSink(w.writer, 1_000, 20);
    await sink.add(['123456789'], []);
    expect(w.inserts).toHaveLength(0);
    await sink.add(['123456789'], []);
    expect(w.inserts).toHaveLength(1);
    // The count starts again after a hand-over: one more 10-byte line is below 20.
    await sink.add(['123456789'], []);
    expect(w.inserts).toHaveLength(1);
    // Lines of 9 and 8 characters are 10 + 9 = 19 bytes: below 20.
    const w2 = recordingWriter();
    const sink2 = new RequestSink(w2.writer, 1_000, 20);
    await sink2.add(['123456789', '12345678'], []);
    expect(w2.inserts).toHaveLength(0);
  });

  it('holds at most two batches: the third waits until the first is committed', async () => {
    const w = recordingWriter({ hold: true });
    const sink = new RequestSink(w.writer, 1, 1_000_000);
    await sink.add(['a'], []); // batch 1 goes out
    let secondDone = false;
    const second = sink.add(['b'], []).then(() => {
      secondDone = true;
    });
    // Batch 2 is filled, but not handed over while batch 1 is in flight.
    await new Promise((r) => setImmediate(r));
    expect(w.inserts.map((i) => i.lines)).toEqual([['a']]);
    expect(secondDone).toBe(false);
    w.inserts[0].done.resolve({ written: 1, rejected: 0 });
    await second;
    expect(w.inserts.map((i) => i.lines)).toEqual([['a'], ['b']]);
    const finished = sink.finish();
    w.inserts[1].done.resolve({ written: 0, rejected: 1 });
    expect(await finished).toEqual({ written: 1, refused: 1 });
  });

  it('writes rejects as they come and waits for them on finish', async () => {
    const w = recordingWriter();
    const sink = new RequestSink(w.writer, 10, 1_000_000);
    const bad: RejectRow = { source: 'collector:requests', reason: 'x', raw: '1' };
    await sink.add([], [bad]);
    await sink.add(['a'], []);
    expect(w.rejects).toEqual([[bad]]);
    expect(await sink.finish()).toEqual({ written: 1, refused: 0 });
  });

  it('a batch the store refuses while the next page is read fails finish, not the process', async () => {
    const w = recordingWriter({ hold: true });
    const sink = new RequestSink(w.writer, 1, 1_000_000);
    await sink.add(['a'], []);
    w.inserts[0].done.reject(new Error('store down'));
    await new Promise((r) => setImmediate(r));
    await expect(sink.finish()).rejects.toThrow('store down');
  });

  it('a refused reject write fails finish', async () => {
    const w = recordingWriter();
    (w.writer as unknown as { reject: () => Promise<WriteResult> }).reject = () => Promise.reject(new Error('rejects down'));
    const sink = new RequestSink(w.writer, 10, 1_000_000);
    await sink.add([], [{ source: 's', reason: 'r', raw: '' }]);
    await expect(sink.finish()).rejects.toThrow('rejects down');
  });

  it('lines over several encoding buffers, a page larger than one and multi-byte text reach the writer in order, byte for byte', async () => {
    // 40 pages of 25 lines of ~1.6 KB: 1.6 MB, over SINK_BUFFER_BYTES (1 MiB), so the batch spans two buffers; then a
    // page of two 600,000-byte lines (300,000 x 'é', 2 bytes each in UTF-8: 1.2 MB) that gets a buffer of its own.
    const w = recordingWriter();
    const sink = new RequestSink(w.writer, 10_000, 64 * 1024 * 1024);
    const sent: string[] = [];
    const page = (lines: string[]) => {
      sent.push(...lines);
      return sink.add(lines, []);
    };
    for (let p = 0; p < 40; p++) await page(Array.from({ length: 25 }, (_, i) => `{"n":${p * 25 + i},"s":"${'ü€'.repeat(400)}"}`));
    await page(['é'.repeat(300_000), 'é'.repeat(300_000)]);
    await page(['{"n":"after"}', '{"n":"日本語"}']);
    expect(await sink.finish()).toEqual({ written: 1004, refused: 0 });
    expect(SINK_BUFFER_BYTES).toBe(1024 * 1024);
    expect(w.inserts).toHaveLength(1);
    expect(w.inserts[0].lines).toEqual(sent);
  });

  it('a batch that starts with a page larger than a buffer, and one of such pages alone, reach the writer whole', async () => {
    const w = recordingWriter();
    const sink = new RequestSink(w.writer, 3, 64 * 1024 * 1024);
    const big = ['é'.repeat(300_000), 'ü'.repeat(300_000)]; // 1.2 MB in UTF-8
    await sink.add(big, []);
    await sink.add(['{"n":1}'], []); // 3 rows: handed over
    await sink.add(big, []); // alone in the next batch
    expect(await sink.finish()).toEqual({ written: 5, refused: 0 });
    expect(w.inserts.map((i) => i.lines)).toEqual([[...big, '{"n":1}'], big]);
  });

  it('a page that needs one byte more than a buffer has left goes to the next buffer, newline and all', async () => {
    // Each page may take 3 bytes per character plus its newline. 1,045 pages of 999 ASCII characters use 1,045,000
    // bytes of the 1,048,576; one of 575 leaves 3,000; a page of 1,000 x '€' (3,000 bytes, 3,001 with its newline)
    // must start a new buffer rather than fill this one to its last byte and lose its newline.
    const w = recordingWriter();
    const sink = new RequestSink(w.writer, 10_000, 64 * 1024 * 1024);
    const sent: string[] = [];
    for (let p = 0; p < 1_045; p++) sent.push(`${p}`.padEnd(999, '.'));
    sent.push('x'.repeat(575), '€'.repeat(1_000), 'after');
    for (const line of sent) await sink.add([line], []);
    expect(await sink.finish()).toEqual({ written: 1_048, refused: 0 });
    expect(w.inserts.flatMap((i) => i.lines)).toEqual(sent);
  });

  it('batches of one and of several buffers, one after another, reach the writer whole and in order (buffers reused)', async () => {
    // Pages of 100 lines: the first two batches' nine pages of 20 characters fit one buffer each; then pages of
    // 2,000 ASCII characters, three a buffer, so each later batch of nine pages takes three, more than were freed.
    const w = recordingWriter();
    const sink = new RequestSink(w.writer, 900, 64 * 1024 * 1024);
    const sent: string[] = [];
    for (let p = 0; p < 40; p++) {
      const lines = Array.from({ length: 100 }, (_, i) => `${p}:${i}:`.padEnd(p < 18 ? 20 : 2_000, String.fromCharCode(97 + (p % 26))));
      sent.push(...lines);
      await sink.add(lines, []);
    }
    expect(await sink.finish()).toEqual({ written: 4_000, refused: 0 });
    expect(w.inserts.map((i) => i.lines.length)).toEqual([900, 900, 900, 900, 400]);
    expect(w.inserts.flatMap((i) => i.lines)).toEqual(sent);
  });

  it('counts UTF-8 bytes against batchBytes: two 5-byte lines of é reach 10', async () => {
    const w = recordingWriter();
    const sink = new RequestSink(w.writer, 1_000, 10);
    await sink.add(['éé'], []);
    expect(w.inserts).toHaveLength(0);
    await sink.add(['éé'], []);
    expect(w.inserts.map((i) => i.lines)).toEqual([['éé', 'éé']]);
  });

  it('a batch in flight keeps its bytes while the next batches are encoded: buffers are written over only once committed', async () => {
    // The writer keeps the chunks as handed over and reads them only at the end, as a store still sending them would.
    const handed: Array<{ chunks: Buffer[]; done: Deferred<WriteResult> }> = [];
    const writer = {
      insertEncodedLines(_table: { name: string }, chunks: Buffer[], rows: number) {
        const done = deferred<WriteResult>();
        handed.push({ chunks, done });
        void rows;
        return done.promise;
      },
      reject: () => Promise.resolve({ written: 0, rejected: 0 }),
      flush: async () => undefined,
    } as unknown as BatchWriter;
    const sink = new RequestSink(writer, 1, 1_000_000);
    const text = (c: string) => `{"batch":"${c.repeat(1000)}"}`;
    const read = (i: number) => Buffer.concat(handed[i].chunks).toString('utf8');
    await sink.add([text('a')], []); // batch 1 in flight
    const second = sink.add([text('b')], []); // encoded; waits for batch 1
    await new Promise((r) => setImmediate(r));
    handed[0].done.resolve({ written: 1, rejected: 0 });
    await second; // batch 2 in flight; batch 1's buffer is free
    const third = sink.add([text('c')], []); // encoded while batch 2 is in flight
    await new Promise((r) => setImmediate(r));
    expect(read(1)).toBe(`${text('b')}\n`);
    handed[1].done.resolve({ written: 1, rejected: 0 });
    await third;
    const fourth = sink.add([text('d')], []);
    await new Promise((r) => setImmediate(r));
    expect(read(2)).toBe(`${text('c')}\n`);
    handed[2].done.resolve({ written: 1, rejected: 0 });
    await fourth;
    const finished = sink.finish();
    await new Promise((r) => setImmediate(r));
    expect(read(3)).toBe(`${text('d')}\n`);
    handed[3].done.resolve({ written: 1, rejected: 0 });
    expect(await finished).toEqual({ written: 4, refused: 0 });
  });
});

function fakeContext(pages: unknown[][], writer: BatchWriter, config = { WRITER_MAX_ROWS: 2, WRITER_MAX_BYTES: 1_000_000 }) {
  const calls: Array<{ path: string; query: Record<string, unknown>; ctx: unknown; prefetch: unknown }> = [];
  const warnings: Array<{ fields: unknown; message: string }> = [];
  const added: number[] = [];
  const call = { signal: undefined };
  const ctx = {
    call,
    runtime: { writer, config },
    log: { warn: (fields: unknown, message: string) => warnings.push({ fields, message }) },
    addRows: (n: number) => added.push(n),
    platform: {
      async *paginate(path: string, opts: { query: Record<string, unknown>; ctx: unknown; prefetch: unknown; schema: { parse(v: unknown): unknown } }) {
        calls.push({ path, query: opts.query, ctx: opts.ctx, prefetch: opts.prefetch });
        for (const items of pages) yield opts.schema.parse({ has_more: false, items });
      },
    },
  } as unknown as JobContext;
  return { ctx, calls, warnings, added, call };
}

const WINDOW = { endpointIds: ['acme/app', 'acme/other'], from: new Date('2026-11-21T00:00:00Z'), to: new Date('2026-11-22T00:00:00Z') };

describe('requestPages', () => {
  it('asks for the window with billing, in ended_at order, 100 a page, passing the call context, and asks for prefetch (each page fetched while the one before is mapped)', async () => {
    const w = recordingWriter();
    const f = fakeContext([[item], [item, item]], w.writer);
    const got: unknown[][] = [];
    for await (const items of requestPages(f.ctx, WINDOW)) got.push(items);
    expect(got).toEqual([[item], [item, item]]);
    expect(PAGE_LIMIT).toBe(100);
    expect(f.calls).toEqual([
      {
        path: '/v1/serverless/requests/by-endpoint',
        query: {
          endpoint_id: ['acme/app', 'acme/other'],
          start: '2026-11-21T00:00:00.000Z',
          end: '2026-11-22T00:00:00.000Z',
          expand: 'billing',
          sort_by: 'ended_at',
          limit: 100,
        },
        ctx: f.call,
        prefetch: true,
      },
    ]);
  });

  it('refuses a page without an items list (the envelope is checked)', async () => {
    const f = fakeContext([], recordingWriter().writer);
    (f.ctx.platform as unknown as { paginate: unknown }).paginate = async function* (_path: string, opts: { schema: { parse(v: unknown): unknown } }) {
      yield opts.schema.parse({ has_more: false, next_cursor: null });
    };
    const walk = async () => {
      for await (const _ of requestPages(f.ctx, WINDOW)) void _;
    };
    await expect(walk()).rejects.toThrow(/items/);
  });

  it('asks nothing for a window without endpoint ids', async () => {
    const f = fakeContext([[item]], recordingWriter().writer);
    const got: unknown[][] = [];
    for await (const items of requestPages(f.ctx, { ...WINDOW, endpointIds: [] })) got.push(items);
    expect(got).toEqual([]);
    expect(f.calls).toEqual([]);
  });
});

describe('collectRequestWindow', () => {
  it('counts received, billed, malformed, written and refused items, and stores each bad item with its reason', async () => {
    const unbilled = { ...item, request_id: 'r-2', billable_units: null };
    const bad = { ...item, request_id: 'r-3', status_code: 'x' };
    const w = recordingWriter({ refuseEvery: 3 });
    const f = fakeContext([[item, unbilled, bad], [{ ...item, request_id: 'r-4' }], [], [{ ...item, request_id: 'r-5' }]], w.writer);
    const result = await collectRequestWindow(f.ctx, WINDOW);
    // 5 received; r-1, r-4, r-5 billed; r-3 malformed. Batches of WRITER_MAX_ROWS 2: page 1's two good lines go
    // out at once, page 2's one waits for page 4's. The writer refuses the first line of each batch: r-1 and r-4.
    expect(result).toEqual({ requests: 5, billed: 3, malformed: 1, written: 2, refused: 2 });
    expect(w.inserts.map((i) => i.lines.map((l) => (JSON.parse(l) as { request_id: string }).request_id))).toEqual([
      ['r-1', 'r-2'],
      ['r-4', 'r-5'],
    ]);
    expect(w.rejects).toEqual([[{ source: 'collector:requests', reason: 'status_code: expected an integer, received string', raw: JSON.stringify(bad) }]]);
    expect(f.added).toEqual([2]);
    expect(f.warnings).toEqual([
      {
        fields: { from: '2026-11-21T00:00:00.000Z', to: '2026-11-22T00:00:00.000Z', malformed: 1, refused: 2 },
        message: 'some requests were not stored; they are in ingest_rejects with the reason',
      },
    ]);
  });

  it('warns about nothing when every item is stored', async () => {
    const w = recordingWriter();
    const f = fakeContext([[item]], w.writer);
    expect(await collectRequestWindow(f.ctx, WINDOW)).toEqual({ requests: 1, billed: 1, malformed: 0, written: 1, refused: 0 });
    expect(f.warnings).toEqual([]);
    expect(f.added).toEqual([1]);
  });

  it('warns when only the store refused rows, and when only items were malformed', async () => {
    const refusing = recordingWriter({ refuseEvery: 1 });
    const a = fakeContext([[item]], refusing.writer);
    expect(await collectRequestWindow(a.ctx, WINDOW)).toEqual({ requests: 1, billed: 1, malformed: 0, written: 0, refused: 1 });
    expect(a.warnings).toHaveLength(1);
    const b = fakeContext([['not an item']], recordingWriter().writer);
    expect(await collectRequestWindow(b.ctx, WINDOW)).toEqual({ requests: 1, billed: 0, malformed: 1, written: 0, refused: 0 });
    expect(b.warnings).toHaveLength(1);
  });
});

describe('toRequestLine: bounds and odd values', () => {
  const reason = (raw: unknown) => {
    const r = toRequestLine(raw, collected);
    return 'reason' in r ? r.reason : null;
  };
  it('takes status codes 0 and 65535, refuses -1, 65536 and fractions', () => {
    expect(reason({ ...item, status_code: 0 })).toBeNull();
    expect(reason({ ...item, status_code: 65535 })).toBeNull();
    expect(reason({ ...item, status_code: -1 })).toBe('status_code: out of range: -1');
    expect(reason({ ...item, status_code: 65536 })).toBe('status_code: out of range: 65536');
    expect(reason({ ...item, status_code: 200.5 })).toBe('status_code: expected an integer, received 200.5');
  });

  it('refuses infinite durations and units, and names null and object types', () => {
    expect(reason({ ...item, duration: Infinity })).toBe('duration: expected a number, received number');
    expect(reason({ ...item, billable_units: Infinity })).toBe('billable_units: expected a number, received number');
    expect(reason({ ...item, endpoint_id: null })).toBe('endpoint_id: expected string, received null');
    expect(reason({ ...item, started_at: {} })).toBe('started_at: expected string, received object');
    expect(reason({ ...item, sent_at: 'later' })).toBe('sent_at: not an ISO 8601 timestamp: "later"');
    expect(reason(null)).toBe('(item): expected object, received null');
  });

  it('writes absent or null start and send times as NULL, not as text', () => {
    const r = toRequestLine({ ...item, sent_at: null }, collected);
    if ('reason' in r) throw new Error(r.reason);
    expect(JSON.parse(r.line)).toMatchObject({ started_at: null, sent_at: null, gateway_request_id: null, runner_id: null });
    const s = toRequestLine({ ...item, started_at: '2026-11-21T10:00:00Z', sent_at: '2026-11-21T10:00:01Z' }, collected);
    if ('reason' in s) throw new Error(s.reason);
    expect(JSON.parse(s.line)).toMatchObject({ started_at: '2026-11-21 10:00:00.000', sent_at: '2026-11-21 10:00:01.000' });
  });

  it('keeps a gateway id that is not a string as its JSON text, and a billed flag per item', () => {
    const r = toRequestLine({ ...item, gateway_request_id: { id: 7 } }, collected);
    if ('reason' in r) throw new Error(r.reason);
    expect((JSON.parse(r.line) as { gateway_request_id: string }).gateway_request_id).toBe('{"id":7}');
    expect(r.billed).toBe(true);
    const u = toRequestLine({ ...item, billable_units: null }, collected);
    expect('billed' in u && u.billed).toBe(false);
  });
});

describe('coveringEndpointIds and dayChunks: edges', () => {
  it('keeps one-part ids and routes of other apps, and drops nothing when no bare id is listed', () => {
    expect(coveringEndpointIds(['acme/a/x', 'acme', 'acme/ab/x', 'acme/a/x'])).toEqual(['acme', 'acme/a/x', 'acme/ab/x']);
    expect(coveringEndpointIds(['beta/a', 'acme/a/x', 'beta/a/y'])).toEqual(['acme/a/x', 'beta/a']);
  });

  it('cuts a range starting mid-day at the next midnight, and gives nothing for an empty range', () => {
    const at = (s: string) => new Date(s);
    expect(dayChunks(at('2026-11-21T15:00:00Z'), at('2026-11-23T06:00:00Z')).map((c) => [c.from.toISOString(), c.to.toISOString()])).toEqual([
      ['2026-11-21T15:00:00.000Z', '2026-11-22T00:00:00.000Z'],
      ['2026-11-22T00:00:00.000Z', '2026-11-23T00:00:00.000Z'],
      ['2026-11-23T00:00:00.000Z', '2026-11-23T06:00:00.000Z'],
    ]);
    expect(dayChunks(at('2026-11-21T15:00:00Z'), at('2026-11-21T15:00:00Z'))).toEqual([]);
  });
});

describe('forEachLimited', () => {
  it('runs every item, at most `limit` at a time', async () => {
    let running = 0;
    let most = 0;
    const done: number[] = [];
    await forEachLimited([1, 2, 3, 4, 5], 2, async (n) => {
      running++;
      most = Math.max(most, running);
      await new Promise((r) => setImmediate(r));
      done.push(n);
      running--;
    });
    expect(done.sort()).toEqual([1, 2, 3, 4, 5]);
    expect(most).toBe(2);
  });

  it('starts no more items after a failure and rejects with it once the others settle', async () => {
    const started: number[] = [];
    let settledOther = false;
    const run = forEachLimited([1, 2, 3, 4], 2, async (n) => {
      started.push(n);
      if (n === 1) throw new Error('item 1 failed');
      await new Promise((r) => setImmediate(r));
      settledOther = true;
    });
    await expect(run).rejects.toThrow('item 1 failed');
    expect(settledOther).toBe(true);
    expect(started).toEqual([1, 2]);
  });

  it('does nothing for no items, and runs one at a time with a limit of 1', async () => {
    let calls = 0;
    await forEachLimited([], 4, async () => {
      calls++;
    });
    expect(calls).toBe(0);
    const order: string[] = [];
    await forEachLimited(['a', 'b'], 1, async (s) => {
      order.push(`start ${s}`);
      await new Promise((r) => setImmediate(r));
      order.push(`end ${s}`);
    });
    expect(order).toEqual(['start a', 'end a', 'start b', 'end b']);
  });
});
