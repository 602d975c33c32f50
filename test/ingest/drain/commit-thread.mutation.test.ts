// The spool's commit thread as the spool's own thread drives it (src/ingest/drain/spool/commit-thread.ts): starting,
// what goes to the thread by transfer, generations across a recovery, and giving up on a thread (issue 31). The
// worker thread is real; what is checked is each promise's outcome against the protocol in commit-thread.ts and the
// records found in the file through a connection of the test's own.
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BUSY, CommitThread, GENERATION, type CommitRecord } from '../../../src/ingest/drain/spool/commit-thread.js';
import { SqliteSpool } from '../../../src/ingest/drain/spool/sqlite-spool.js';
import type { StagedData } from '../../../src/ingest/drain/spool/spool.js';
import { emptySpoolFile } from '../../support/spool-file.js';
import { sqliteError } from '../../support/sqlite-error.js';

const spoolFile = () => emptySpoolFile('commit-thread');

const idsIn = (path: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('SELECT id FROM records ORDER BY seq').all() as Array<{ id: string }>).map((r) => r.id);
  } finally {
    db.close();
  }
};

const started: CommitThread[] = [];
afterEach(async () => {
  for (const t of started.splice(0)) await t.close();
});
async function start(path: string): Promise<CommitThread> {
  const t = await CommitThread.start(path);
  started.push(t);
  return t;
}

const record = (id: string, rowData: Uint8Array = new Uint8Array(Buffer.from(`{"id":"${id}"}\n`)), rejectData: Uint8Array = new Uint8Array(0)): CommitRecord => ({
  id,
  receivedAtMs: 1,
  rowFormat: '{"format":"JSONEachRow"}',
  rows: 1,
  rejects: 0,
  rowData,
  rejectData,
});
const shared = (t: CommitThread) => (t as unknown as { shared: Int32Array }).shared;

describe('commit thread: start', () => {
  it('a file it cannot open: start rejects with SQLite code (the spool then commits on its own connection)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'commit-thread-'));
    mkdirSync(join(dir, 'a-folder'));
    await expect(CommitThread.start(join(dir, 'a-folder'))).rejects.toMatchObject({ message: 'unable to open database file', ...sqliteError('SQLITE_CANTOPEN') });
  });

  it('no answer within the time given: start rejects', async () => {
    await expect(CommitThread.start(spoolFile(), 0)).rejects.toThrow('the spool commit thread did not start');
  });
});

describe('commit thread: commits', () => {
  it('commits into generation 0 and resolves with it; the records are in the file', async () => {
    const path = spoolFile();
    const t = await start(path);
    expect(t.generation).toBe(0);
    expect(await t.commit([record('a'), record('b')], 5)).toBe(0);
    expect(idsIn(path)).toEqual(['a', 'b']);
  });

  it('moves (transfers) only buffers of 64 KiB or more that own their whole memory; the others are copied', async () => {
    const t = await start(spoolFile());
    const big = new Uint8Array(64 * 1024).fill(0x41);
    const small = new Uint8Array(64 * 1024 - 1).fill(0x42);
    const slice = new Uint8Array(new ArrayBuffer(128 * 1024), 0, 64 * 1024);
    const offset = new Uint8Array(new ArrayBuffer(128 * 1024), 64 * 1024, 64 * 1024);
    const pending = t.commit([record('big', big, small), record('parts', slice, offset)], 5);
    expect([big.byteLength, small.byteLength, slice.byteLength, offset.byteLength]).toEqual([0, 64 * 1024 - 1, 64 * 1024, 64 * 1024]);
    expect(await pending).toBe(0);
  });

  it('after a recovery (quiesce, reopen on the new file) groups go into generation 1, in the new file', async () => {
    const first = spoolFile();
    const second = spoolFile();
    const t = await start(first);
    await t.commit([record('old')], 5);
    t.quiesce();
    expect(t.generation).toBe(1);
    t.reopen(second);
    expect(await t.commit([record('new')], 5)).toBe(1);
    expect([idsIn(first), idsIn(second)]).toEqual([['old'], ['new']]);
  });

  it('quiesce without a reopen: a group sent now is refused, not sent back and forth', async () => {
    const t = await start(spoolFile());
    t.quiesce();
    await expect(t.commit([record('x')], 5)).rejects.toThrow('the spool file was moved aside and not reopened');
  });

  it('a reopen that fails ends the thread: the group waiting fails with SQLite code, and later ones at once', async () => {
    const t = await start(spoolFile());
    t.quiesce();
    t.reopen(mkdtempSync(join(tmpdir(), 'commit-thread-')));
    await vi.waitFor(() => expect(t.dead).toBeDefined(), { timeout: 20_000 });
    expect(t.dead).toMatchObject(sqliteError('SQLITE_CANTOPEN'));
    await expect(t.commit([record('y')], 5)).rejects.toBe(t.dead);
  });
});

describe('commit thread: giving up', () => {
  it('quiesce waits for a commit under way; one that never ends is given up at the deadline: every group in flight fails', async () => {
    const t = await start(spoolFile());
    Atomics.store(shared(t), BUSY, 1);
    t.quiesce(50);
    expect(t.dead?.message).toBe('the spool commit thread did not finish a commit in 50 ms');
    expect(Atomics.load(shared(t), GENERATION)).toBe(1);
    await expect(t.commit([record('z')], 5)).rejects.toThrow('the spool commit thread did not finish a commit in 50 ms');
  });

  it('a dead thread is not waited for: quiesce only moves the generation on', async () => {
    const t = await start(spoolFile());
    t.abandon(new Error('gone'));
    Atomics.store(shared(t), BUSY, 1);
    t.quiesce(60_000);
    expect([t.generation, t.dead?.message]).toEqual([1, 'gone']);
  });

  it('abandon fails the groups in flight with its error', async () => {
    const t = await start(spoolFile());
    const pending = [t.commit([record('p')], 5), t.commit([record('q')], 5)];
    t.abandon(new Error('out of memory'));
    for (const p of pending) await expect(p).rejects.toThrow('out of memory');
  });

  it('the thread ends on its own (terminated): every group in flight fails, naming the exit code', async () => {
    const t = await start(spoolFile());
    const worker = (t as unknown as { worker: { terminate(): Promise<number> } }).worker;
    const pending = t.commit([record('e')], 5).catch((err: Error) => err.message);
    await worker.terminate();
    await vi.waitFor(() => expect(t.dead?.message).toBe('spool commit thread exited (1)'), { timeout: 20_000 });
    expect(['spool commit thread exited (1)', 'committed']).toContain(await pending.then((v) => (typeof v === 'number' ? 'committed' : v)));
  });

  it('an error thrown on the thread, or an answer that cannot be read, fails what is in flight', async () => {
    for (const [event, message] of [
      ['error', 'boom on the thread'],
      ['messageerror', 'could not deserialize'],
    ] as const) {
      const t = await start(spoolFile());
      (t as unknown as { worker: { emit(e: string, err: Error): void } }).worker.emit(event, new Error(message));
      expect(t.dead?.message).toBe(message);
      await expect(t.commit([record('m')], 5)).rejects.toThrow(message);
    }
  });

  it('closed: commits refused; the thread exits', async () => {
    const t = await CommitThread.start(spoolFile());
    await t.close();
    await expect(t.commit([record('c')], 5)).rejects.toThrow('the spool commit thread is closed');
  });
});

describe('the spool with its commit thread', () => {
  const opened: SqliteSpool[] = [];
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close().catch(() => undefined);
  });
  const staged = (text: string): StagedData => ({ count: text.split('\n').length - 1, bytes: Buffer.byteLength(text), crc: 0, file: undefined, memory: [Buffer.from(text)] });
  const rec = (id: string) => ({ id, receivedAtMs: 1, rowFormat: { format: 'JSONEachRow' }, rows: staged(`{"b":"${id}"}\n`), rejects: staged('') });
  type Inner = { committer: CommitThread; recover(reason: unknown): void };

  it('a dead thread: appends commit on the spool\'s own connection, durably', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'commit-thread-'));
    const spool = await SqliteSpool.open({ dir, maxBytes: 1 << 20 });
    opened.push(spool);
    const inner = spool as unknown as Inner;
    inner.committer.abandon(new Error('gone'));
    expect(await spool.append(rec('own'))).toEqual({ status: 'appended' });
    expect([spool.bytes, spool.pendingRows, spool.appendedRecords, spool.commits]).toEqual([12, 1, 1, 1]);
    expect(idsIn(join(dir, 'spool.sqlite'))).toEqual(['own']);
  });

  it('a recovery between a group commit and its answer: the group, salvaged with the file, is counted once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'commit-thread-'));
    const spool = await SqliteSpool.open({ dir, maxBytes: 1 << 20 });
    opened.push(spool);
    const inner = spool as unknown as Inner;
    const commit = inner.committer.commit.bind(inner.committer);
    let recovered = false;
    inner.committer.commit = async (records, now) => {
      const generation = await commit(records, now);
      if (!recovered) {
        recovered = true;
        inner.recover(new Error('file is not a database'));
      }
      return generation;
    };
    expect(await spool.append(rec('g1'))).toEqual({ status: 'appended' });
    // '{"b":"g1"}\n' is 11 bytes: once, not twice.
    expect([spool.bytes, spool.pendingRows, spool.appendedRecords]).toEqual([11, 1, 1]);
    expect(await spool.append(rec('g2'))).toEqual({ status: 'appended' });
    expect([spool.bytes, spool.pendingRows, spool.appendedRecords]).toEqual([22, 2, 2]);
    expect((await spool.nextBatch({ maxRows: Infinity, maxBytes: Infinity }))!.records.map((r) => r.id)).toEqual(['g1', 'g2']);
  });
});
