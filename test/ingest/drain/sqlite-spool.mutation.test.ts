// The SQLite spool's accounting and limits (src/ingest/drain/spool/sqlite-spool.ts, spool.ts), record by record
// (issue 31: the mutants spool.test.ts left alive). A record here is built by hand (StagedData with known byte
// counts), so every expected figure (bytes held, rows pending, which records a batch takes, when a body stops
// being recognised) is worked out from the spool's contract in spool.ts and its README, not read from the spool.
import { mkdtempSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SqliteSpool } from '../../../src/ingest/drain/spool/sqlite-spool.js';
import { openSpool } from '../../../src/ingest/drain/spool/open-spool.js';
import { SpoolFullError, type SpoolBatch, type SpoolOptions, type StagedData } from '../../../src/ingest/drain/spool/spool.js';
import { captureLog } from '../../support/log-capture.js';

const opened: SqliteSpool[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const s of opened.splice(0)) await s.close().catch(() => undefined);
});

const tempDir = () => mkdtempSync(join(tmpdir(), 'spool-mutation-'));

async function open(dir: string, opts: Partial<SpoolOptions> = {}): Promise<SqliteSpool> {
  // Group commits on this thread: the commit thread's own path is tested in spool-commit-thread.test.ts and
  // commit-worker.mutation.test.ts, and starting it for each spool took most of this file's 30 s.
  const s = (await SqliteSpool.open({ dir, maxBytes: 1 << 20, commitThread: false, ...opts })) as SqliteSpool;
  opened.push(s);
  return s;
}

const staged = (lines: string[]): StagedData => {
  const text = lines.map((l) => `${l}\n`).join('');
  return { count: lines.length, bytes: Buffer.byteLength(text), crc: 0, file: undefined, memory: text ? [Buffer.from(text)] : [] };
};

let ids = 0;
const rec = (rows: string[], rejects: string[] = [], id = `id-${++ids}`, rowFormat: { format: string; columns?: string[] } = { format: 'JSONEachRow' }) => ({
  id,
  receivedAtMs: 1_795_000_000_123,
  rowFormat,
  rows: staged(rows),
  rejects: staged(rejects),
});
const ALL = { maxRows: Infinity, maxBytes: Infinity };

const capture = () => captureLog('info');

describe('SQLite spool: accounting', () => {
  it('bytes and rows held: a record counts its rows and rejects bytes (10 + 6 + 12 here), and leaves at commit', async () => {
    const spool = await open(tempDir());
    expect([spool.bytes, spool.pendingRows, spool.appendedRecords, spool.replayedRecords]).toEqual([0, 0, 0, 0]);
    expect(await spool.append(rec(['{"a":1}', '{'], ['{"r":1}']))).toEqual({ status: 'appended' });
    // rows: '{"a":1}\n' (8) + '{\n' (2) = 10 bytes, 2 rows; rejects: '{"r":1}\n' = 8 bytes.
    expect([spool.bytes, spool.pendingRows, spool.appendedRecords]).toEqual([18, 2, 1]);
    await spool.append(rec(['12345678901'])); // 12 bytes, 1 row
    expect([spool.bytes, spool.pendingRows, spool.appendedRecords]).toEqual([30, 3, 2]);
    const batch = (await spool.nextBatch(ALL))!;
    expect(batch.records.map((r) => [r.rows, r.rejects, r.rowData.toString(), r.rejectData.toString()])).toEqual([
      [2, 1, '{"a":1}\n{\n', '{"r":1}\n'],
      [1, 0, '12345678901\n', ''],
    ]);
    await spool.commit(batch);
    expect([spool.bytes, spool.pendingRows, spool.appendedRecords, spool.replayedRecords]).toEqual([0, 0, 2, 2]);
    expect(await spool.nextBatch(ALL)).toBeNull();
  });

  it('a record reads back as appended: id, time, format with columns', async () => {
    const spool = await open(tempDir());
    await spool.append(rec(['a\tb'], [], 'body-1', { format: 'TabSeparated', columns: ['x', 'y'] }));
    const [r] = (await spool.nextBatch(ALL))!.records;
    expect(r).toEqual({
      id: 'body-1',
      receivedAtMs: 1_795_000_000_123,
      rowFormat: { format: 'TabSeparated', columns: ['x', 'y'] },
      rows: 1,
      rejects: 0,
      rowData: Buffer.from('a\tb\n'),
      rejectData: Buffer.alloc(0),
    });
  });

  it('rows spilled to a file: the file part (its first `bytes` bytes only) comes before those in memory', async () => {
    const spool = await open(tempDir());
    const path = spool.stagingPath();
    writeFileSync(path, 'one\ntwo\nGARBAGE-PAST-BYTES');
    const rows: StagedData = { count: 3, bytes: 12, crc: 0, file: { path, bytes: 8 }, memory: [Buffer.from('thr\n')] };
    await spool.append({ id: 'spilled', receivedAtMs: 1, rowFormat: { format: 'JSONEachRow' }, rows, rejects: staged([]) });
    const [r] = (await spool.nextBatch(ALL))!.records;
    expect(r!.rowData.toString()).toBe('one\ntwo\nthr\n');
  });

  it('a reopened spool counts what waits in it (records, rows, bytes) and says it replays them', async () => {
    const dir = tempDir();
    let spool = await open(dir);
    await spool.append(rec(['x', 'y'])); // 4 bytes, 2 rows
    await spool.append(rec(['zz'], ['r'])); // 3 + 2 bytes, 1 row
    await spool.close();
    const { logger, lines } = capture();
    spool = await open(dir, { logger });
    expect([spool.bytes, spool.pendingRows, spool.appendedRecords, spool.replayedRecords]).toEqual([9, 3, 2, 0]);
    expect(lines).toEqual([expect.objectContaining({ level: 30, bytes: 9, rows: 3, msg: 'log drain spool holds lines not yet in the store; replaying' })]);
    await spool.commit((await spool.nextBatch(ALL))!);
    expect([spool.bytes, spool.pendingRows, spool.appendedRecords, spool.replayedRecords]).toEqual([0, 0, 2, 2]);
  });

  it('an empty spool opens without that line', async () => {
    const { logger, lines } = capture();
    await open(tempDir(), { logger });
    expect(lines).toEqual([]);
  });
});

describe('SQLite spool: the size limit', () => {
  it('a record that exactly fills maxBytes is taken; one byte more is refused with SpoolFullError (Retry-After 30 s by default)', async () => {
    const spool = await open(tempDir(), { maxBytes: 20 });
    await spool.append(rec(['123456789'])); // 10 bytes
    expect(spool.isFull()).toBe(false);
    expect(spool.isFull(10)).toBe(false);
    expect(spool.isFull(11)).toBe(true);
    const err = (await spool.append(rec(['1234567890'])).catch((e: unknown) => e)) as SpoolFullError; // 11 bytes
    expect(err).toBeInstanceOf(SpoolFullError);
    expect(err.message).toBe('the log drain spool is full (10 of 20 bytes waiting for the store); retry later');
    expect(err.name).toBe('SpoolFullError');
    expect([err.spoolBytes, err.maxBytes, err.retryAfterSeconds]).toEqual([10, 20, 30]);
    expect(await spool.append(rec(['12345678']))).toEqual({ status: 'appended' }); // 9 bytes: 19 of 20
    expect(spool.retryAfterSeconds).toBe(30);
    expect(spool.limitBytes).toBe(20);
  });

  it('appends under way count against the limit before they commit', async () => {
    const spool = await open(tempDir(), { maxBytes: 100 });
    const results = await Promise.allSettled([spool.append(rec(['a'.repeat(59)])), spool.append(rec(['b'.repeat(59)]))]);
    expect(results[0]).toEqual({ status: 'fulfilled', value: { status: 'appended' } });
    expect(results[1]!.status).toBe('rejected');
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ spoolBytes: 60, maxBytes: 100 });
    // Committed: the reservation became bytes held, not both.
    expect(spool.bytes).toBe(60);
    expect(spool.isFull(40)).toBe(false);
    expect(spool.isFull(41)).toBe(true);
  });
});

describe('SQLite spool: batches', () => {
  async function filled(n: number, rowsEach: number, opts: Partial<SpoolOptions> = {}) {
    const spool = await open(tempDir(), opts);
    for (let i = 0; i < n; i++) await spool.append(rec(Array.from({ length: rowsEach }, (_, j) => `r${i}${j}`), [], `b${i}`)); // 4 bytes a row
    return spool;
  }
  const idsOf = (b: SpoolBatch | null) => b!.records.map((r) => r.id);

  it('maxRows: records are added while fewer than maxRows rows are taken (2-row records: 3 -> 2 records, 4 -> 2, 5 -> 3)', async () => {
    for (const [maxRows, expected] of [[3, 2], [4, 2], [5, 3], [1, 1]] as const) {
      const spool = await filled(4, 2);
      expect(idsOf(await spool.nextBatch({ maxRows, maxBytes: Infinity }))).toEqual(['b0', 'b1', 'b2', 'b3'].slice(0, expected));
    }
  });

  it('maxBytes: a record is added only if the batch stays within maxBytes; the first always (8-byte records: 16 -> 2, 15 -> 1, 0 -> 1)', async () => {
    for (const [maxBytes, expected] of [[16, 2], [15, 1], [24, 3], [0, 1]] as const) {
      const spool = await filled(4, 2);
      expect(idsOf(await spool.nextBatch({ maxRows: Infinity, maxBytes }))).toEqual(['b0', 'b1', 'b2', 'b3'].slice(0, expected));
    }
  });

  it('rejects bytes count toward maxBytes too', async () => {
    const spool = await open(tempDir());
    await spool.append(rec(['abc'], ['defg'], 'x')); // 4 + 5
    await spool.append(rec(['abc'], [], 'y')); // 4
    expect(idsOf(await spool.nextBatch({ maxRows: Infinity, maxBytes: 12 }))).toEqual(['x']);
  });

  it('the batch handed out stays the batch until committed, also for other limits; commit of another is refused', async () => {
    const spool = await filled(3, 1);
    const a = (await spool.nextBatch({ maxRows: 1, maxBytes: Infinity }))!;
    expect(a.resumed).toBe(false);
    expect(await spool.nextBatch(ALL)).toBe(a);
    const stranger: SpoolBatch = { records: a.records, resumed: false };
    await expect(spool.commit(stranger)).rejects.toThrow('spool: commit of a batch that is not the current one');
    await spool.commit(a);
    await expect(spool.commit(a)).rejects.toThrow('spool: commit of a batch that is not the current one');
    expect(idsOf(await spool.nextBatch(ALL))).toEqual(['b1', 'b2']);
  });

  it('a saved batch comes back after a restart as resumed, whatever the new limits; the records after it follow', async () => {
    const dir = tempDir();
    let spool = await open(dir);
    for (let i = 0; i < 3; i++) await spool.append(rec([`row${i}`], [], `k${i}`));
    expect(idsOf(await spool.nextBatch({ maxRows: 2, maxBytes: Infinity }))).toEqual(['k0', 'k1']);
    await spool.close();
    spool = await open(dir);
    const again = (await spool.nextBatch({ maxRows: 1, maxBytes: 1 }))!;
    expect(again.resumed).toBe(true);
    expect(idsOf(again)).toEqual(['k0', 'k1']);
    await spool.commit(again);
    const next = (await spool.nextBatch(ALL))!;
    expect([next.resumed, ...idsOf(next)]).toEqual([false, 'k2']);
  });

  it('a saved batch whose records are gone is dropped: no batch, and the next append is batched afresh', async () => {
    const dir = tempDir();
    let spool = await open(dir);
    await spool.append(rec(['only'], [], 'gone'));
    await spool.nextBatch(ALL);
    await spool.close();
    const db = new Database(join(dir, 'spool.sqlite'));
    db.exec('DELETE FROM records');
    db.close();
    spool = await open(dir);
    expect(await spool.nextBatch(ALL)).toBeNull();
    await spool.append(rec(['new'], [], 'fresh'));
    const b = (await spool.nextBatch(ALL))!;
    expect([b.resumed, ...idsOf(b)]).toEqual([false, 'fresh']);
  });
});

describe('SQLite spool: recognising a body again', () => {
  const T = Date.parse('2026-11-20T00:00:00Z');

  it('for dedupWindowMs after it was appended (24 h by default), then appended again', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(T);
    const spool = await open(tempDir());
    await spool.append(rec(['a'], [], 'same'));
    vi.setSystemTime(T + 24 * 3_600_000);
    expect(await spool.append(rec(['a'], [], 'same'))).toEqual({ status: 'duplicate' });
    vi.setSystemTime(T + 24 * 3_600_000 + 1);
    expect(await spool.append(rec(['a'], [], 'same'))).toEqual({ status: 'appended' });
    expect(spool.appendedRecords).toBe(2);
  });

  it('a shorter window from the options', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(T);
    const spool = await open(tempDir(), { dedupWindowMs: 1000 });
    await spool.append(rec(['a'], [], 'w'));
    vi.setSystemTime(T + 1000);
    expect((await spool.append(rec(['a'], [], 'w'))).status).toBe('duplicate');
    vi.setSystemTime(T + 1001);
    expect((await spool.append(rec(['a'], [], 'w'))).status).toBe('appended');
  });

  it('a commit forgets bodies older than the window, and all but the newest dedupMaxEntries (plus one)', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const dir = tempDir();
    const spool = await open(dir, { dedupWindowMs: 10_000, dedupMaxEntries: 2 });
    for (const [i, id] of ['d1', 'd2', 'd3', 'd4'].entries()) {
      vi.setSystemTime(T + i * 1000);
      await spool.append(rec(['x'], [], id));
    }
    vi.setSystemTime(T + 5000);
    await spool.commit((await spool.nextBatch(ALL))!);
    const seenIds = () => {
      const db = new Database(join(dir, 'spool.sqlite'), { readonly: true });
      try {
        return (db.prepare('SELECT id FROM seen ORDER BY at_ms').all() as Array<{ id: string }>).map((r) => r.id);
      } finally {
        db.close();
      }
    };
    // Newest 2 kept and the one at the cut-off's time: d1 forgotten.
    expect(seenIds()).toEqual(['d2', 'd3', 'd4']);
    expect((await spool.append(rec(['x'], [], 'd1'))).status).toBe('appended');
    expect((await spool.append(rec(['x'], [], 'd4'))).status).toBe('duplicate');
    // At T+15 s the 10 s window reaches back to T+5 s: d2..d4 (T+1..3 s) are forgotten, d1 again (T+5 s) stays.
    vi.setSystemTime(T + 15_000);
    await spool.commit((await spool.nextBatch(ALL))!);
    expect(seenIds()).toEqual(['d1']);
  });

  it('a concurrent copy waits for the first and is a duplicate', async () => {
    const spool = await open(tempDir());
    const [a, b] = await Promise.all([spool.append(rec(['c'], [], 'twin')), spool.append(rec(['c'], [], 'twin'))]);
    expect([a, b]).toEqual([{ status: 'appended' }, { status: 'duplicate' }]);
    expect(spool.appendedRecords).toBe(1);
    // Done: a later copy is found in the file.
    expect(await spool.append(rec(['c'], [], 'twin'))).toEqual({ status: 'duplicate' });
  });
});

describe('SQLite spool: files, listeners, closing', () => {
  it('the folder 0700, the file 0600; staging emptied at open; staging paths unique .rows files in it', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'staging'), { recursive: true });
    writeFileSync(join(dir, 'staging', 'left-over.rows'), 'x');
    const spool = await open(dir);
    expect((statSync(dir).mode & 0o777).toString(8)).toBe('700');
    expect((statSync(join(dir, 'spool.sqlite')).mode & 0o777).toString(8)).toBe('600');
    expect(spool.stagingDir).toBe(join(dir, 'staging'));
    expect((statSync(spool.stagingDir).mode & 0o777).toString(8)).toBe('700');
    expect(readdirSync(spool.stagingDir)).toEqual([]);
    const a = spool.stagingPath();
    const b = spool.stagingPath();
    expect(a).not.toBe(b);
    expect(a).toMatch(new RegExp(`^${join(dir, 'staging')}/[0-9a-f-]{36}\\.rows$`));
  });

  it('damage counters start at 0 under the folder name (or the given name)', async () => {
    const registry = new Registry();
    const dir = join(tempDir(), 'logs');
    await open(dir, { registry });
    const second = new Registry();
    await open(tempDir(), { registry: second, name: 'faro' });
    for (const [reg, name] of [[registry, 'logs'], [second, 'faro']] as const) {
      for (const metric of ['tallyhouse_spool_damaged_total', 'tallyhouse_spool_salvaged_records_total', 'tallyhouse_spool_lost_records_total']) {
        const m = await reg.getSingleMetric(metric)!.get();
        expect(m.values).toEqual([{ value: 0, labels: { spool: name } }]);
      }
    }
  });

  it('onAppend listeners run after each commit of appends, until removed', async () => {
    const spool = await open(tempDir());
    const calls: string[] = [];
    const off = spool.onAppend(() => calls.push('a'));
    spool.onAppend(() => calls.push('b'));
    await spool.append(rec(['1']));
    expect(calls).toEqual(['a', 'b']);
    off();
    await spool.append(rec(['2']));
    expect(calls).toEqual(['a', 'b', 'b']);
  });

  it('closed: appends refused', async () => {
    const spool = await open(tempDir());
    await spool.close();
    await expect(spool.append(rec(['1']))).rejects.toThrow('the spool is closed');
  });

  it('close waits for appends under way', async () => {
    const dir = tempDir();
    const spool = await open(dir);
    const pending = spool.append(rec(['late'], [], 'late'));
    await spool.close();
    expect(await pending).toEqual({ status: 'appended' });
    const again = await open(dir);
    expect(again.pendingRows).toBe(1);
  });

  it('openSpool opens this SQLite spool', async () => {
    const s = await openSpool({ dir: tempDir(), maxBytes: 10 });
    opened.push(s as SqliteSpool);
    expect(s).toBeInstanceOf(SqliteSpool);
    expect(s.limitBytes).toBe(10);
  });
});
