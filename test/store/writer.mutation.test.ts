// The batch writer's rules (src/store/writer.ts, CONTRIBUTING.md rule 6) against a store double that records every
// INSERT and fails on cue, so each rule is checked by counting statements, rows and tokens (issue 31: the mutants
// the embedded-store tests left alive). Expected batches, bisection steps, backoff delays and reject rows are
// worked out by hand from the rule; the embedded store's own behaviour stays with test/store/writer.test.ts.
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Registry } from 'prom-client';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { Store } from '../../src/store/client.js';
import { defineTable } from '../../src/store/tables/table.js';
import { BatchWriter, MAX_REJECT_RAW_BYTES, REJECTS_TABLE, truncateUtf8, type WriterOptions } from '../../src/store/writer.js';
import { captureLog } from '../support/log-capture.js';

const probe = defineTable('probe', z.object({ id: z.number(), name: z.string() }));
const other = defineTable('other_probe', z.object({ id: z.number(), name: z.string() }));

/** An error as @clickhouse/client raises it: name ClickHouseError, a numeric code, a type. */
class ClickHouseError extends Error {
  constructor(message: string, readonly code: string, readonly type: string) {
    super(message);
    this.name = 'ClickHouseError';
  }
}
const dataError = () => new ClickHouseError('Cannot parse input: expected \'"\' before: bad\nmore detail', '27', 'CANNOT_PARSE_INPUT_ASSERTION_FAILED');
const permanentError = () => new ClickHouseError('Table default.nope does not exist', '60', 'UNKNOWN_TABLE');
const transientError = () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });

interface Call {
  table: string;
  lines: string[];
  token: string;
  settings: Record<string, unknown>;
  query: string;
}

/** A store double: `fail(table, lines, n)` (n: the statement's number, from 1) returns an error to throw, or nothing. */
function storeDouble(opts: { mode?: 'server' | 'embedded'; fail?: (table: string, lines: string[], n: number) => Error | undefined; gate?: () => Promise<void> } = {}) {
  const calls: Call[] = [];
  const record = async (query: string, body: string, settings: Record<string, unknown>) => {
    const table = /^INSERT INTO (\w+)/.exec(query)![1]!;
    // Each row ends with a newline (the last one too: JSONEachRow reads either way).
    expect(body.endsWith('\n'), 'a batch body ends with a newline').toBe(true);
    const lines = body.slice(0, -1).split('\n');
    calls.push({ table, lines, token: settings.insert_deduplication_token as string, settings, query });
    if (opts.gate) await opts.gate();
    const err = opts.fail?.(table, lines, calls.length);
    if (err) throw err;
  };
  const client = {
    exec: async ({ query, values, clickhouse_settings }: { query: string; values: Readable; clickhouse_settings: Record<string, unknown> }) => {
      const chunks: Buffer[] = [];
      for await (const c of values) chunks.push(c as Buffer);
      await record(query, Buffer.concat(chunks).toString(), clickhouse_settings);
      return { stream: Readable.from([]) };
    },
    command: async ({ query, clickhouse_settings }: { query: string; clickhouse_settings: Record<string, unknown> }) => {
      const path = /FROM INFILE '([^']+)'/.exec(query)![1]!;
      await record(query, readFileSync(path, 'utf8'), clickhouse_settings);
    },
  };
  const store = { client, mode: opts.mode ?? 'server', database: 'default', cluster: undefined, location: 'double', close: async () => undefined } as unknown as Store;
  return { store, calls };
}

const capture = () => captureLog('debug');

const writers: BatchWriter[] = [];
function writer(store: Store, opts: WriterOptions = {}): BatchWriter {
  const w = new BatchWriter(store, { flushIntervalMs: 3_600_000, ...opts });
  writers.push(w);
  return w;
}
afterEach(async () => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  while (writers.length) await writers.pop()!.close().catch(() => undefined);
});

const rows = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ id: from + i, name: `r${from + i}` }));
const line = (id: number) => JSON.stringify({ id, name: `r${id}` });
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

async function metric(registry: Registry, name: string): Promise<Record<string, number>> {
  const m = await registry.getSingleMetric(name)!.get();
  return Object.fromEntries(m.values.map((v) => [`${(v as { metricName?: string }).metricName ?? name}${JSON.stringify(v.labels)}`, v.value]));
}

describe('BatchWriter: buffering and batches', () => {
  it('rows wait in memory until flush(); insert() resolves once they are written, as one JSONEachRow statement', async () => {
    const { store, calls } = storeDouble();
    const w = writer(store);
    let done = false;
    const p = w.insert(probe, rows(1, 3)).then((r) => ((done = true), r));
    await Promise.resolve();
    expect(calls).toEqual([]);
    expect(w.pending()).toEqual({ probe: 3 });
    expect(done).toBe(false);
    await w.flush();
    expect(await p).toEqual({ written: 3, rejected: 0 });
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ table: 'probe', lines: [line(1), line(2), line(3)], query: 'INSERT INTO probe FORMAT JSONEachRow' });
    expect(calls[0]!.settings).toEqual({ insert_deduplication_token: calls[0]!.token, async_insert: 0, input_format_parallel_parsing: 0 });
    expect(w.pending()).toEqual({});
  });

  it('the deduplication token is the SHA-256 of the table name, a newline and the batch: the same for the same batch, another for another table', async () => {
    const { store, calls } = storeDouble();
    const w = writer(store);
    void w.insert(probe, rows(1, 2));
    await w.flush();
    void w.insert(probe, rows(1, 2));
    void w.insert(other, rows(1, 2));
    await w.flush();
    expect(calls.map((c) => c.table)).toEqual(['probe', 'probe', 'other_probe']);
    expect(calls[0]!.token).toBe(sha256(`probe\n${line(1)}\n${line(2)}\n`));
    expect(calls[1]!.token).toBe(calls[0]!.token);
    expect(calls[2]!.token).toBe(sha256(`other_probe\n${line(1)}\n${line(2)}\n`));
  });

  it('flushes by itself at maxRows (default 50,000): 49,999 rows wait, the 50,000th sends them', async () => {
    const { store, calls } = storeDouble();
    const w = writer(store);
    void w.insert(probe, rows(0, 49_999));
    await new Promise((r) => setImmediate(r));
    expect(calls).toEqual([]);
    expect(await w.insert(probe, rows(49_999, 1))).toEqual({ written: 1, rejected: 0 });
    expect(calls.map((c) => c.lines.length)).toEqual([50_000]);
  });

  it('flushes by itself at maxBytes (default 16 MiB, a row counted with its newline)', async () => {
    const { store, calls } = storeDouble();
    const w = writer(store);
    const mib = 'x'.repeat(1024 * 1024 - 1); // 1 MiB with its newline
    void w.insertLines(probe, Array.from({ length: 15 }, () => mib));
    void w.insertLines(probe, ['x'.repeat(1024 * 1024 - 2)]);
    await new Promise((r) => setImmediate(r));
    expect(calls).toEqual([]);
    await w.insertLines(probe, ['']); // one byte more: 16 MiB
    expect(calls.map((c) => c.lines.length)).toEqual([17]);
  });

  it('entries are never split; a batch stops before the entry that would pass maxRows or maxBytes', async () => {
    const { store, calls } = storeDouble();
    const w = writer(store, { maxRows: 4, maxBytes: 1_000_000 });
    const a = w.insert(probe, rows(1, 2));
    const b = w.insert(probe, rows(3, 2)); // 4 rows: flushed as one batch of 4 (exactly maxRows)
    await Promise.all([a, b]);
    expect(calls.map((c) => c.lines.length)).toEqual([4]);
    const c = w.insert(probe, rows(5, 3));
    const d = w.insert(probe, rows(8, 3)); // 6 rows: 3 + 3 > 4, two batches
    await Promise.all([c, d]);
    expect(calls.map((x) => x.lines.length)).toEqual([4, 3, 3]);
    expect(await w.insert(probe, rows(11, 9))).toEqual({ written: 9, rejected: 0 }); // larger than maxRows: one batch
    expect(calls.map((x) => x.lines.length)).toEqual([4, 3, 3, 9]);
  });

  it('the same by bytes: entries of 10 bytes each under maxBytes 20 go two by two', async () => {
    const { store, calls } = storeDouble();
    const w = writer(store, { maxRows: 1000, maxBytes: 20 });
    const p = [w.insertLines(probe, ['123456789']), w.insertLines(probe, ['abcdefghi'])];
    await Promise.all(p);
    expect(calls.map((c) => c.lines)).toEqual([['123456789', 'abcdefghi']]);
    const q = [w.insertLines(probe, ['12345678']), w.insertLines(probe, ['abcdefghij', 'k']), w.insertLines(probe, ['z'])];
    await Promise.all(q);
    // 9 + 13 > 20: the first alone; then 13 + 2 <= 20.
    expect(calls.slice(1).map((c) => c.lines)).toEqual([['12345678'], ['abcdefghij', 'k', 'z']]);
  });

  it('tables are buffered apart; flush(table) sends that table only; pending() lists tables holding rows', async () => {
    const { store, calls } = storeDouble();
    const w = writer(store);
    void w.insert(probe, rows(1, 1));
    void w.insert(other, rows(1, 2));
    void w.reject([{ source: 's', reason: 'r', raw: 'x' }]);
    expect(w.pending()).toEqual({ probe: 1, other_probe: 2, ingest_rejects: 1 });
    await w.flush(other);
    expect(calls.map((c) => c.table)).toEqual(['other_probe']);
    expect(w.pending()).toEqual({ probe: 1, ingest_rejects: 1 });
    await w.flush(REJECTS_TABLE);
    expect(calls.map((c) => c.table)).toEqual(['other_probe', 'ingest_rejects']);
    expect(w.pending()).toEqual({ probe: 1 });
    await w.flush();
    expect(w.pending()).toEqual({});
  });

  it('flush() waits for a flush already under way and for rows handed in during it', async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const { store, calls } = storeDouble({ gate: () => gate });
    const w = writer(store);
    void w.insert(probe, rows(1, 1));
    const first = w.flush();
    await new Promise((r) => setImmediate(r));
    expect(calls).toHaveLength(1);
    void w.insert(probe, rows(2, 1));
    let flushed = false;
    const second = w.flush().then(() => (flushed = true));
    await new Promise((r) => setImmediate(r));
    expect(flushed).toBe(false);
    open();
    await Promise.all([first, second]);
    expect(calls.map((c) => c.lines)).toEqual([[line(1)], [line(2)]]);
  });

  it('no rows: resolved at once, no statement; a bad table name or a closed writer: refused', async () => {
    const { store, calls } = storeDouble();
    const w = writer(store);
    expect(await w.insert(probe, [])).toEqual({ written: 0, rejected: 0 });
    await expect(w.insertLines(defineTable('no-dash', probe.row), ['{}'])).rejects.toThrow('invalid table name "no-dash"');
    await expect(w.insertLines(defineTable('1abc', probe.row), ['{}'])).rejects.toThrow('invalid table name "1abc"');
    await expect(w.insertLines(defineTable('a b', probe.row), ['{}'])).rejects.toThrow('invalid table name "a b"');
    const ok = w.insertLines(defineTable('_Ab9', probe.row), ['{}']);
    void w.insert(probe, rows(1, 2));
    await w.close();
    expect(await ok).toEqual({ written: 1, rejected: 0 });
    expect(calls.map((c) => [c.table, c.lines.length])).toEqual([['_Ab9', 1], ['probe', 2]]);
    await expect(w.insert(probe, rows(3, 2))).rejects.toThrow('the writer is closed; 2 rows for probe were not accepted');
  });

  it('above maxBufferedBytes, insert() waits until a flush frees memory', async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const { store, calls } = storeDouble({ gate: () => gate });
    const w = writer(store, { maxBytes: 10, maxBufferedBytes: 10 });
    const first = w.insertLines(probe, ['123456789']); // 10 bytes: flushed, held at the gate
    await new Promise((r) => setImmediate(r));
    expect(calls).toHaveLength(1);
    let second = false;
    const next = w.insertLines(probe, ['a']).then(() => (second = true));
    await new Promise((r) => setImmediate(r));
    expect(w.pending()).toEqual({}); // not buffered: waiting for space
    open();
    await first;
    await w.flush();
    await next;
    expect(second).toBe(true);
    expect(calls.map((c) => c.lines)).toEqual([['123456789'], ['a']]);
  });

  it('maxBufferedBytes defaults to 4 x maxBytes when that is above 64 MiB', async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const { store } = storeDouble({ gate: () => gate });
    const w = writer(store, { maxBytes: 20 * 1024 * 1024 });
    try {
      const mib = 'x'.repeat(1024 * 1024 - 1); // 1 MiB with its newline
      const twenty = Array.from({ length: 20 }, () => mib); // maxBytes: flushes (one flush of a table at a time)
      const held = [w.insertLines(probe, twenty), w.insertLines(probe, twenty), w.insertLines(probe, twenty), w.insertLines(probe, twenty.slice(0, 10))];
      void held;
      await new Promise((r) => setImmediate(r));
      // 70 MiB held: above 64 MiB, under 4 x 20 MiB: this row is buffered at once.
      void w.insertLines(probe, ['y']);
      await new Promise((r) => setImmediate(r));
      expect(w.pending()).toEqual({ probe: 20 + 20 + 10 + 1 });
    } finally {
      open();
    }
  });

  it('maxBufferedBytes defaults to 64 MiB when 4 x maxBytes is less', async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const { store } = storeDouble({ gate: () => gate });
    const w = writer(store, { maxBytes: 1024 * 1024 });
    try {
      const mib = ['x'.repeat(1024 * 1024 - 1)];
      for (let i = 0; i < 63; i++) void w.insertLines(probe, mib); // the first flushed and held, 62 buffered
      await new Promise((r) => setImmediate(r));
      void w.insertLines(probe, ['y']); // 63 MiB held: under 64 MiB, buffered at once
      await new Promise((r) => setImmediate(r));
      expect(w.pending()).toEqual({ probe: 63 });
      void w.insertLines(probe, ['z'.repeat(1024 * 1024)]); // 64 MiB + 3 bytes held: ...
      void w.insertLines(probe, ['w']); // ... this one waits for a flush
      await new Promise((r) => setImmediate(r));
      expect(w.pending()).toEqual({ probe: 64 });
    } finally {
      open();
    }
  });
});

describe('BatchWriter: the interval', () => {
  it('a table whose oldest row has waited flushIntervalMs is flushed by the timer (checked every half interval)', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'Date'] });
    const { store, calls } = storeDouble();
    const w = writer(store, { flushIntervalMs: 100 });
    void w.insert(probe, rows(1, 1));
    await vi.advanceTimersByTimeAsync(99);
    expect(calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls.map((c) => c.lines)).toEqual([[line(1)]]);
  });

  it('default interval: 1 s', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'Date'] });
    const { store, calls } = storeDouble();
    const w = new BatchWriter(store);
    writers.push(w);
    void w.insert(probe, rows(1, 1));
    await vi.advanceTimersByTimeAsync(999);
    expect(calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(1);
  });

  it('a very short interval is checked every 10 ms at most often', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'Date'] });
    const { store, calls } = storeDouble();
    const w = writer(store, { flushIntervalMs: 4 });
    void w.insert(probe, rows(1, 1));
    await vi.advanceTimersByTimeAsync(9);
    expect(calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(1);
  });

  it('the age counts from the first row into an empty buffer', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'Date'] });
    const { store, calls } = storeDouble();
    const w = writer(store, { flushIntervalMs: 100 });
    void w.insert(probe, rows(1, 1));
    await vi.advanceTimersByTimeAsync(50);
    void w.insert(probe, rows(2, 1)); // does not restart the clock
    await vi.advanceTimersByTimeAsync(50);
    expect(calls.map((c) => c.lines)).toEqual([[line(1), line(2)]]);
    // After a flush (at 100 ms) the next first row (at 150 ms) starts a new clock: due at 250 ms, not 200.
    await vi.advanceTimersByTimeAsync(50);
    void w.insert(probe, rows(3, 1));
    await vi.advanceTimersByTimeAsync(99);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(2);
  });

  it('after close() the timer sends nothing more', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'Date'] });
    const { store } = storeDouble();
    const w = writer(store, { flushIntervalMs: 100 });
    await w.close();
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('BatchWriter: failures', () => {
  it('transient failures are retried with the same token, backing off 200, 400, 800 ms (x 0.5..1 jitter) until the batch lands', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'Date'] });
    vi.spyOn(Math, 'random').mockReturnValue(1); // the jitter's upper end: the full delay
    const { store, calls } = storeDouble({ fail: (_t, _l, n) => (n <= 3 ? transientError() : undefined) });
    const { logger, lines } = capture();
    const registry = new Registry();
    const w = writer(store, { logger, registry });
    const p = w.insert(probe, rows(1, 2));
    void w.flush();
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(199);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(399);
    expect(calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(800);
    expect(calls).toHaveLength(4);
    expect(await p).toEqual({ written: 2, rejected: 0 });
    expect(new Set(calls.map((c) => c.token)).size).toBe(1);
    expect(lines.filter((l) => l.level === 40)).toEqual([
      expect.objectContaining({ table: 'probe', rows: 2, attempt: 1, delayMs: 200, err: 'ECONNRESET', msg: 'store write failed; retrying with the same deduplication token' }),
      expect.objectContaining({ attempt: 2, delayMs: 400 }),
      expect.objectContaining({ attempt: 3, delayMs: 800 }),
    ]);
    expect(await metric(registry, 'tallyhouse_writer_flush_failures_total')).toEqual({
      'tallyhouse_writer_flush_failures_total{"table":"probe","kind":"transient"}': 3,
    });
  });

  it('the jitter: a delay is at least half the step', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'Date'] });
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const { store, calls } = storeDouble({ fail: (_t, _l, n) => (n === 1 ? transientError() : undefined) });
    const w = writer(store, { backoffBaseMs: 1000 });
    void w.insert(probe, rows(1, 1));
    void w.flush();
    await vi.advanceTimersByTimeAsync(499);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(2);
  });

  it('the backoff doubles up to backoffMaxMs (default 10 s)', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'Date'] });
    vi.spyOn(Math, 'random').mockReturnValue(1);
    const { store, calls } = storeDouble({ fail: (_t, _l, n) => (n <= 7 ? transientError() : undefined) });
    const { logger, lines } = capture();
    const w = writer(store, { logger });
    const p = w.insert(probe, rows(1, 1));
    void w.flush();
    await vi.advanceTimersByTimeAsync(200 + 400 + 800 + 1600 + 3200 + 6400 + 10_000);
    expect(await p).toEqual({ written: 1, rejected: 0 });
    expect(calls).toHaveLength(8);
    expect(lines.map((l) => l.delayMs)).toEqual([200, 400, 800, 1600, 3200, 6400, 10_000]);
  });

  it('a data error splits the batch until the bad row is alone; it goes to ingest_rejects with the reason, its neighbours are written', async () => {
    const { store, calls } = storeDouble({
      fail: (table, ls) => (table === 'probe' && ls.some((l) => l.includes('"bad"')) ? dataError() : undefined),
    });
    const { logger, lines } = capture();
    const registry = new Registry();
    const w = writer(store, { logger, registry });
    const bad = JSON.stringify({ id: 3, name: 'bad' });
    const p = w.insertLines(probe, [line(1), line(2), bad, line(4)]);
    await w.flush();
    expect(await p).toEqual({ written: 3, rejected: 1 });
    // [1,2,bad,4] fails; [1,2] lands; [bad,4] fails; [bad] fails and is dead-lettered; [4] lands.
    expect(calls.map((c) => [c.table, c.lines.length])).toEqual([
      ['probe', 4],
      ['probe', 2],
      ['probe', 2],
      ['probe', 1],
      ['ingest_rejects', 1],
      ['probe', 1],
    ]);
    expect(JSON.parse(calls[4]!.lines[0]!)).toEqual({
      source: 'writer:probe',
      reason: 'ClickHouse CANNOT_PARSE_INPUT_ASSERTION_FAILED (code 27): Cannot parse input: expected \'"\' before: bad',
      raw: bad,
      line: null,
      batch_id: '',
    });
    expect(calls[5]!.lines).toEqual([line(4)]);
    expect(await metric(registry, 'tallyhouse_writer_rows_rejected_total')).toEqual({ 'tallyhouse_writer_rows_rejected_total{"table":"probe"}': 1 });
    expect(await metric(registry, 'tallyhouse_writer_rows_written_total')).toEqual({
      'tallyhouse_writer_rows_written_total{"table":"probe"}': 3,
      'tallyhouse_writer_rows_written_total{"table":"ingest_rejects"}': 1,
    });
    expect(await metric(registry, 'tallyhouse_writer_batches_total')).toEqual({
      'tallyhouse_writer_batches_total{"table":"probe"}': 2,
      'tallyhouse_writer_batches_total{"table":"ingest_rejects"}': 1,
    });
    expect(await metric(registry, 'tallyhouse_writer_flush_failures_total')).toEqual({
      'tallyhouse_writer_flush_failures_total{"table":"probe","kind":"data"}': 3,
    });
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 40, table: 'probe', err: 'ClickHouse CANNOT_PARSE_INPUT_ASSERTION_FAILED (code 27)', msg: 'row refused by the store; kept in ingest_rejects' }),
    );
    // The log names the code, never the row.
    expect(JSON.stringify(lines)).not.toContain('"bad"');
  });

  it('an odd batch splits at its lower half: [1,2,3,4,bad] -> [1,2] + [3,4,bad] -> [3] + [4,bad] -> [4] + [bad]', async () => {
    const { store, calls } = storeDouble({ fail: (table, ls) => (table === 'probe' && ls.some((l) => l.includes('"bad"')) ? dataError() : undefined) });
    const w = writer(store);
    const bad = JSON.stringify({ id: 5, name: 'bad' });
    const p = w.insertLines(probe, [line(1), line(2), line(3), line(4), bad]);
    await w.flush();
    expect(await p).toEqual({ written: 4, rejected: 1 });
    expect(calls.filter((c) => c.table === 'probe').map((c) => c.lines.length)).toEqual([5, 2, 3, 1, 2, 1, 1]);
  });

  it('ingest_rejects itself refusing a row: logged as lost, the row counted rejected', async () => {
    const { store, calls } = storeDouble({ fail: (table) => (table === 'ingest_rejects' ? dataError() : undefined) });
    const { logger, lines } = capture();
    const w = writer(store, { logger });
    const p = w.reject([{ source: 'test', reason: 'why', raw: 'abc' }]);
    await w.flush();
    expect(await p).toEqual({ written: 0, rejected: 1 });
    expect(calls).toHaveLength(1);
    expect(lines).toContainEqual(expect.objectContaining({ level: 50, table: 'ingest_rejects', bytes: calls[0]!.lines[0]!.length, msg: 'ingest_rejects refused a row; it is lost' }));
  });

  it('a statement the store refuses (permanent): not retried, the callers get the error, logged', async () => {
    const { store, calls } = storeDouble({ fail: () => permanentError() });
    const { logger, lines } = capture();
    const registry = new Registry();
    const w = writer(store, { logger, registry });
    const a = w.insert(probe, rows(1, 2));
    const b = w.insert(probe, rows(3, 1));
    await w.flush();
    await expect(a).rejects.toThrow('Table default.nope does not exist');
    await expect(b).rejects.toThrow('Table default.nope does not exist');
    expect(calls).toHaveLength(1);
    expect(lines).toContainEqual(expect.objectContaining({ level: 50, table: 'probe', rows: 3, err: 'ClickHouse UNKNOWN_TABLE (code 60)', msg: 'store refused the batch; it is not retried' }));
    expect(await metric(registry, 'tallyhouse_writer_flush_failures_total')).toEqual({
      'tallyhouse_writer_flush_failures_total{"table":"probe","kind":"permanent"}': 1,
    });
    // The memory is given back: buffered rows 0, new rows taken.
    expect(await metric(registry, 'tallyhouse_writer_buffered_rows')).toEqual({ 'tallyhouse_writer_buffered_rows{"table":"probe"}': 0 });
    expect(w.pending()).toEqual({});
  });

  it('after a refused batch the memory it held is free again: a writer at its memory limit takes new rows', async () => {
    const { store } = storeDouble({ fail: (_t, _l, n) => (n === 1 ? permanentError() : undefined) });
    const w = writer(store, { maxBytes: 10, maxBufferedBytes: 10 });
    await expect(w.insertLines(probe, ['123456789'])).rejects.toThrow('does not exist');
    expect(await w.insertLines(probe, ['123456789'])).toEqual({ written: 1, rejected: 0 });
  });
});

describe('BatchWriter: metrics', () => {
  it('rows buffered go up on insert and back to 0 once written; batch rows and flush time observed per batch', async () => {
    const { store } = storeDouble();
    const registry = new Registry();
    const w = writer(store, { registry });
    void w.insert(probe, rows(1, 3));
    expect(await metric(registry, 'tallyhouse_writer_buffered_rows')).toEqual({ 'tallyhouse_writer_buffered_rows{"table":"probe"}': 3 });
    await w.flush();
    expect(await metric(registry, 'tallyhouse_writer_buffered_rows')).toEqual({ 'tallyhouse_writer_buffered_rows{"table":"probe"}': 0 });
    const batchRows = await metric(registry, 'tallyhouse_writer_batch_rows');
    expect(batchRows['tallyhouse_writer_batch_rows_sum{"table":"probe"}']).toBe(3);
    expect(batchRows['tallyhouse_writer_batch_rows_count{"table":"probe"}']).toBe(1);
    expect(batchRows['tallyhouse_writer_batch_rows_bucket{"le":1,"table":"probe"}']).toBe(0);
    expect(batchRows['tallyhouse_writer_batch_rows_bucket{"le":10,"table":"probe"}']).toBe(1);
    const seconds = await metric(registry, 'tallyhouse_writer_flush_duration_seconds');
    expect(seconds['tallyhouse_writer_flush_duration_seconds_count{"table":"probe"}']).toBe(1);
    expect(seconds['tallyhouse_writer_flush_duration_seconds_sum{"table":"probe"}']).toBeGreaterThan(0);
    expect(seconds['tallyhouse_writer_flush_duration_seconds_sum{"table":"probe"}']).toBeLessThan(60);
  });
});

describe('ingest_rejects rows', () => {
  it('reason cut at 4096 characters, raw at 64 KiB of UTF-8, line null and batch_id empty unless given', async () => {
    const { store, calls } = storeDouble();
    const w = writer(store);
    const raw = 'é'.repeat(40 * 1024); // 80 KiB of UTF-8
    void w.reject([
      { source: 'drain', reason: 'r'.repeat(5000), raw, line: 7, batch_id: 'b1' },
      { source: 'drain', reason: 'short', raw: 'x' },
    ]);
    await w.flush(REJECTS_TABLE);
    const [first, second] = calls[0]!.lines.map((l) => JSON.parse(l));
    expect(first).toEqual({ source: 'drain', reason: 'r'.repeat(4096), raw: 'é'.repeat(32 * 1024), line: 7, batch_id: 'b1' });
    expect(Buffer.byteLength(first.raw)).toBe(MAX_REJECT_RAW_BYTES);
    expect(second).toEqual({ source: 'drain', reason: 'short', raw: 'x', line: null, batch_id: '' });
    expect(MAX_REJECT_RAW_BYTES).toBe(65_536);
    expect(REJECTS_TABLE).toBe('ingest_rejects');
  });

  it('truncateUtf8: whole characters only', () => {
    expect(truncateUtf8('abc', 3)).toBe('abc');
    expect(truncateUtf8('abcd', 3)).toBe('abc');
    expect(truncateUtf8('aé', 2)).toBe('a'); // é is 2 bytes: cut in half, dropped
    expect(truncateUtf8('aé', 3)).toBe('aé');
    expect(truncateUtf8('a€b', 3)).toBe('a'); // € is 3 bytes
    expect(truncateUtf8('a€b', 4)).toBe('a€');
  });
});

describe('embedded store: batch files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'th-writer-infile-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('embedded with infileDir: the directory is made, each batch goes through a file the engine reads, removed after', async () => {
    const infileDir = join(dir, 'batches');
    const { store, calls } = storeDouble({ mode: 'embedded' });
    const w = writer(store, { infileDir });
    expect(existsSync(infileDir)).toBe(true);
    void w.insert(probe, rows(1, 2));
    await w.flush();
    void w.insert(probe, rows(3, 1));
    await w.flush();
    expect(calls.map((c) => c.query.replace(/'[^']+'/, 'PATH'))).toEqual([
      'INSERT INTO probe FROM INFILE PATH FORMAT JSONEachRow',
      'INSERT INTO probe FROM INFILE PATH FORMAT JSONEachRow',
    ]);
    const paths = calls.map((c) => /'([^']+)'/.exec(c.query)![1]!);
    expect(new Set(paths).size).toBe(2); // a file name per batch
    expect(paths.every((p) => p.startsWith(`${infileDir}/probe-${process.pid}-`))).toBe(true);
    expect(calls.map((c) => c.lines)).toEqual([[line(1), line(2)], [line(3)]]);
  });

  it('a server store ignores infileDir: rows go through the client', async () => {
    const infileDir = join(dir, 'unused');
    const { store, calls } = storeDouble({ mode: 'server' });
    const w = writer(store, { infileDir });
    expect(existsSync(infileDir)).toBe(false);
    void w.insert(probe, rows(1, 1));
    await w.flush();
    expect(calls[0]!.query).toBe('INSERT INTO probe FORMAT JSONEachRow');
  });
});

describe('BatchWriter: what the static-mutant run left (issue 31)', () => {
  const enc = (...ids: number[]) => Buffer.from(ids.map((id) => `${line(id)}\n`).join(''));

  it('insertEncodedLines: chunks go as they are, counted by their bytes toward maxBytes', async () => {
    const { store, calls } = storeDouble();
    const chunk = enc(1, 2); // 2 x 20 bytes: {"id":1,"name":"r1"} and a newline
    expect(chunk.length).toBe(42);
    const w = writer(store, { maxBytes: 42 });
    const p = w.insertEncodedLines(probe, [chunk], 2);
    expect(w.pending()).toEqual({}); // 42 bytes reach maxBytes: sent by itself, no flush() asked
    expect(await p).toEqual({ written: 2, rejected: 0 });
    expect(calls.map((c) => c.lines)).toEqual([[line(1), line(2)]]);
    const q = w.insertEncodedLines(probe, [enc(3)], 1);
    expect(w.pending()).toEqual({ probe: 1 }); // 21 bytes: waits
    await w.flush();
    expect(await q).toEqual({ written: 1, rejected: 0 });
  });

  it('insertEncodedLines refused for its data: split back into lines, the bad row alone in ingest_rejects', async () => {
    const { store, calls } = storeDouble({ fail: (table, lines) => (table === 'probe' && lines.includes('{"bad"}') ? dataError() : undefined) });
    const w = writer(store);
    const p = w.insertEncodedLines(probe, [Buffer.from(`${line(1)}\n{"bad"}\n`), enc(2)], 3);
    await w.flush();
    expect(await p).toEqual({ written: 2, rejected: 1 });
    expect(calls.filter((c) => c.table === 'probe').map((c) => c.lines)).toEqual([[line(1), '{"bad"}', line(2)], [line(1)], ['{"bad"}', line(2)], ['{"bad"}'], [line(2)]]);
    const reject = calls.find((c) => c.table === 'ingest_rejects')!;
    expect(JSON.parse(reject.lines[0]!)).toMatchObject({ source: 'writer:probe', raw: '{"bad"}' });
  });

  it('a batch stops at maxBytes even when several entries wait; the bytes left are counted from what remains', async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const { store, calls } = storeDouble({ gate: () => gate });
    const w = writer(store, { maxBytes: 25 });
    const nine = (c: string) => c.repeat(9); // 9 characters and a newline: 10 bytes
    const a = w.insertLines(probe, [nine('a')]);
    const b = w.insertLines(probe, [nine('b')]);
    expect(w.pending()).toEqual({ probe: 2 });
    const c = w.insertLines(probe, [nine('c')]); // 30 bytes >= 25: a flush starts, A and B (20) in its first batch
    try {
      expect(w.pending()).toEqual({ probe: 1 });
    } finally {
      open(); // a failed check must not leave the writer's close() waiting on the gate
    }
    await Promise.all([a, b, c]);
    expect(calls.map((x) => x.lines)).toEqual([[nine('a'), nine('b')], [nine('c')]]);
    expect(w.pending()).toEqual({});
    void w.insertLines(probe, [nine('d')]); // 10 bytes in an empty buffer: nothing sent by itself
    expect(w.pending()).toEqual({ probe: 1 });
    await w.flush();
    expect(calls).toHaveLength(3);
  });

  it('flush(table) for a table never written to resolves, sending nothing', async () => {
    const { store, calls } = storeDouble();
    const w = writer(store);
    void w.insert(other, rows(1, 1));
    await w.flush(probe);
    await w.flush('ingest_rejects');
    expect(calls).toEqual([]);
    expect(w.pending()).toEqual({ other_probe: 1 });
  });

  it('ingest_rejects refusing a row with no logger: still counted rejected, nothing thrown', async () => {
    const { store } = storeDouble({ fail: (table) => (table === 'ingest_rejects' ? dataError() : undefined) });
    const w = writer(store);
    const p = w.reject([{ source: 'test', reason: 'why', raw: 'abc' }]);
    await w.flush();
    expect(await p).toEqual({ written: 0, rejected: 1 });
  });

  it('embedded: an infileDir whose parents do not exist yet is made with them', () => {
    const base = mkdtempSync(join(tmpdir(), 'th-writer-nested-'));
    try {
      const infileDir = join(base, 'a', 'b', 'c');
      writer(storeDouble({ mode: 'embedded' }).store, { infileDir });
      expect(existsSync(infileDir)).toBe(true);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('truncateUtf8: text that fits is kept whole, a U+FFFD of its own included; only a cut character at the end is dropped', () => {
    expect(truncateUtf8('ab\uFFFD', 5)).toBe('ab\uFFFD'); // U+FFFD is 3 bytes: 5 in all, fits
    expect(truncateUtf8('\uFFFDabc', 4)).toBe('\uFFFDa');
    expect(truncateUtf8('\uFFFDa€', 5)).toBe('\uFFFDa'); // € cut after its first byte
  });
});
