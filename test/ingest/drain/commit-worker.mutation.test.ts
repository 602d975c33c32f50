// The spool's commit thread (src/ingest/drain/spool/commit-worker.ts), run in this test's own thread: serveCommits
// on one port of a MessageChannel, the test on the other, speaking the protocol of commit-thread.ts. In a worker
// thread no mutant is active (issue 31), so spool-commit-thread.test.ts covers the thread end to end and this file
// checks each answer against the protocol: `done` only once the records are in the file (read back through a
// connection of the test's own), `stale` for a group sent for another file, `failed` with SQLite's code.
import { mkdtempSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { BUSY, GENERATION, type CommitRecord, type FromCommitter, type ToCommitter } from '../../../src/ingest/drain/spool/commit-thread.js';
import { backingStores, describe as describeError, serveCommits } from '../../../src/ingest/drain/spool/commit-worker.js';
import { emptySpoolFile } from '../../support/spool-file.js';
import { sqliteError } from '../../support/sqlite-error.js';

const spoolFile = () => emptySpoolFile('commit-worker');

interface Served {
  shared: Int32Array;
  /** Sends a message and resolves with the thread's answer to it. */
  ask(m: ToCommitter): Promise<FromCommitter>;
  port: MessagePort;
  /** The thread's own end. */
  inner: MessagePort;
  unreadable: number;
}

const channels: MessageChannel[] = [];
afterEach(() => {
  for (const c of channels.splice(0)) {
    c.port1.close();
    c.port2.close();
  }
});

function serve(): Served {
  const channel = new MessageChannel();
  channels.push(channel);
  const sharedBuffer = new SharedArrayBuffer(8);
  const served: Served = {
    shared: new Int32Array(sharedBuffer),
    port: channel.port2,
    inner: channel.port1,
    unreadable: 0,
    ask: (m) =>
      new Promise((resolve) => {
        channel.port2.once('message', resolve);
        channel.port2.postMessage(m);
      }),
  };
  serveCommits(channel.port1, sharedBuffer, () => served.unreadable++);
  return served;
}

const text = (s: string) => new Uint8Array(Buffer.from(s));
const record = (id: string, rows = `{"id":"${id}"}\n`, rejects = ''): CommitRecord => ({
  id,
  receivedAtMs: 1_795_000_000_123,
  rowFormat: '{"format":"JSONEachRow"}',
  rows: rows.split('\n').length - 1,
  rejects: rejects.split('\n').length - 1,
  rowData: text(rows),
  rejectData: text(rejects),
});

function readBack(path: string) {
  const db = new Database(path, { readonly: true });
  try {
    return {
      records: (db.prepare('SELECT * FROM records ORDER BY seq').all() as Array<Record<string, unknown>>).map((r): Record<string, unknown> => ({
        ...r,
        row_data: String(r.row_data),
        reject_data: String(r.reject_data),
      })),
      seen: db.prepare('SELECT id, at_ms FROM seen ORDER BY id').all(),
    };
  } finally {
    db.close();
  }
}

describe('commit worker: open', () => {
  it('opens the file in WAL mode and answers opened with the generation it was sent', async () => {
    const path = spoolFile();
    const t = serve();
    expect(await t.ask({ t: 'open', path, generation: 0 })).toEqual({ t: 'opened', generation: 0 });
    const db = new Database(path, { readonly: true });
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
  });

  it('a file that cannot be opened: open-failed with SQLite code and message', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'commit-worker-'));
    mkdirSync(join(dir, 'a-folder'));
    const t = serve();
    const answer = await t.ask({ t: 'open', path: join(dir, 'a-folder'), generation: 3 });
    expect(answer).toMatchObject({ t: 'open-failed', generation: 3, error: { ...sqliteError('SQLITE_CANTOPEN'), message: 'unable to open database file' } });
  });

  it('a file without the spool tables: open-failed (the statements are prepared at open)', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'commit-worker-')), 'spool.sqlite');
    const t = serve();
    expect(await t.ask({ t: 'open', path, generation: 0 })).toMatchObject({ t: 'open-failed', generation: 0, error: { message: 'no such table: records', ...sqliteError('SQLITE_ERROR') } });
  });
});

describe('commit worker: commit', () => {
  it('done: every record of the group and its dedup entry (at `now`) are in the file when the answer comes; BUSY is clear again', async () => {
    const path = spoolFile();
    const t = serve();
    await t.ask({ t: 'open', path, generation: 0 });
    const answer = await t.ask({ t: 'commit', seq: 7, generation: 0, now: 1_795_000_009_000, records: [record('a', 'r1\nr2\n', 'j1\n'), record('b', 'r3\n')] });
    expect(answer).toMatchObject({ t: 'done', seq: 7, generation: 0 });
    expect(readBack(path)).toEqual({
      records: [
        { seq: 1, id: 'a', received_at_ms: 1_795_000_000_123, row_format: '{"format":"JSONEachRow"}', rows: 2, rejects: 1, row_data: 'r1\nr2\n', reject_data: 'j1\n' },
        { seq: 2, id: 'b', received_at_ms: 1_795_000_000_123, row_format: '{"format":"JSONEachRow"}', rows: 1, rejects: 0, row_data: 'r3\n', reject_data: '' },
      ],
      seen: [
        { id: 'a', at_ms: 1_795_000_009_000 },
        { id: 'b', at_ms: 1_795_000_009_000 },
      ],
    });
    expect(Atomics.load(t.shared, BUSY)).toBe(0);
  });

  it('done hands back the memory of the records: each backing buffer once (rows 6 + rejects 3 bytes, and 3 bytes)', async () => {
    const path = spoolFile();
    const t = serve();
    await t.ask({ t: 'open', path, generation: 0 });
    const answer = (await t.ask({ t: 'commit', seq: 1, generation: 0, now: 5, records: [record('a', 'r1\nr2\n', 'j1\n'), record('b', 'r3\n')] })) as Extract<FromCommitter, { t: 'done' }>;
    expect(answer.released.map((b) => Buffer.from(b).toString()).sort()).toEqual(['', 'j1\n', 'r1\nr2\n', 'r3\n']);
  });

  it('failed: a record SQLite refuses fails its whole group (none of it stored), with the code; BUSY clear', async () => {
    const path = spoolFile();
    const t = serve();
    await t.ask({ t: 'open', path, generation: 0 });
    const bad = { ...record('bad'), id: null as unknown as string };
    const answer = await t.ask({ t: 'commit', seq: 2, generation: 0, now: 5, records: [record('good'), bad] });
    expect(answer).toMatchObject({ t: 'failed', seq: 2, error: { ...sqliteError('SQLITE_CONSTRAINT_NOTNULL'), message: 'NOT NULL constraint failed: records.id' } });
    expect((answer as Extract<FromCommitter, { t: 'failed' }>).released.map((b) => Buffer.from(b).toString()).sort()).toEqual(['', '', '{"id":"bad"}\n', '{"id":"good"}\n']);
    expect(readBack(path)).toEqual({ records: [], seen: [] });
    expect(Atomics.load(t.shared, BUSY)).toBe(0);
  });

  it('stale: a group sent before the file was replaced (the shared generation moved on) comes back whole, nothing stored', async () => {
    const path = spoolFile();
    const t = serve();
    await t.ask({ t: 'open', path, generation: 0 });
    Atomics.store(t.shared, GENERATION, 1);
    const answer = await t.ask({ t: 'commit', seq: 4, generation: 0, now: 5, records: [record('x')] });
    expect(answer).toEqual({ t: 'stale', seq: 4, records: [record('x')] });
    expect(readBack(path).records).toEqual([]);
    expect(Atomics.load(t.shared, BUSY)).toBe(0);
  });

  it('stale: a group sent for an older file than the one now open; then, sent for the new one, it commits there', async () => {
    const first = spoolFile();
    const second = spoolFile();
    const t = serve();
    await t.ask({ t: 'open', path: first, generation: 0 });
    Atomics.store(t.shared, GENERATION, 1);
    expect(await t.ask({ t: 'open', path: second, generation: 1 })).toEqual({ t: 'opened', generation: 1 });
    expect(await t.ask({ t: 'commit', seq: 5, generation: 0, now: 5, records: [record('y')] })).toEqual({ t: 'stale', seq: 5, records: [record('y')] });
    expect(await t.ask({ t: 'commit', seq: 5, generation: 1, now: 5, records: [record('y')] })).toMatchObject({ t: 'done', seq: 5, generation: 1 });
    expect([readBack(first).records.length, readBack(second).records.map((r) => r.id)]).toEqual([0, ['y']]);
  });

  it('stale: the reopen failed, so no file is attached; a group for the generation last opened comes back', async () => {
    const path = spoolFile();
    const t = serve();
    await t.ask({ t: 'open', path, generation: 0 });
    expect((await t.ask({ t: 'open', path: mkdtempSync(join(tmpdir(), 'commit-worker-')), generation: 0 })).t).toBe('open-failed');
    expect(await t.ask({ t: 'commit', seq: 6, generation: 0, now: 5, records: [record('z')] })).toEqual({ t: 'stale', seq: 6, records: [record('z')] });
    expect(readBack(path).records).toEqual([]);
  });

  it('failed: a group for a file the thread was never told to open (the recovery failed before reopening)', async () => {
    const path = spoolFile();
    const t = serve();
    await t.ask({ t: 'open', path, generation: 0 });
    Atomics.store(t.shared, GENERATION, 1);
    expect(await t.ask({ t: 'commit', seq: 8, generation: 1, now: 5, records: [record('w')] })).toMatchObject({
      t: 'failed',
      seq: 8,
      error: { message: 'the spool file was moved aside and not reopened: no group commits until the spool is opened again' },
    });
    expect(Atomics.load(t.shared, BUSY)).toBe(0);
    expect(readBack(path).records).toEqual([]);
  });

  it('failed, not stale, before any file was opened', async () => {
    const t = serve();
    expect(await t.ask({ t: 'commit', seq: 1, generation: 0, now: 5, records: [record('v')] })).toMatchObject({ t: 'failed', seq: 1 });
  });
});

describe('commit worker: close', () => {
  it('closes the connection and the port', async () => {
    const path = spoolFile();
    const t = serve();
    await t.ask({ t: 'open', path, generation: 0 });
    const closed = new Promise<void>((resolve) => t.port.once('close', resolve));
    t.port.postMessage({ t: 'close' } satisfies ToCommitter);
    await closed;
    // The thread's connection is gone: a test connection can take the exclusive lock (a checkpoint-and-truncate).
    const db = new Database(path);
    expect(db.pragma('wal_checkpoint(TRUNCATE)')).toEqual([{ busy: 0, log: 0, checkpointed: 0 }]);
    db.close();
  });
});

describe('commit worker: a message that cannot be read', () => {
  it('ends the thread (onUnreadable), since it names no group to answer', () => {
    const t = serve();
    (t.inner as unknown as { emit(type: string, err: Error): void }).emit('messageerror', new Error('could not deserialize'));
    expect(t.unreadable).toBe(1);
  });
});

describe('commit worker: helpers', () => {
  it('describe keeps the message and both SQLite codes; anything else thrown becomes its text', () => {
    expect(describeError(Object.assign(new Error('database disk image is malformed'), { code: 'SQLITE_CORRUPT', errcode: 11 }))).toEqual({
      message: 'database disk image is malformed',
      code: 'SQLITE_CORRUPT',
      errcode: 11,
    });
    expect(describeError('plain text')).toEqual({ message: 'plain text', code: undefined, errcode: undefined });
    expect(describeError(null)).toEqual({ message: 'null', code: undefined, errcode: undefined });
    expect(describeError(undefined)).toEqual({ message: 'undefined', code: undefined, errcode: undefined });
  });

  it('backingStores: each ArrayBuffer once, shared memory never (it cannot be transferred)', () => {
    const one = new ArrayBuffer(8);
    const shared = new SharedArrayBuffer(8);
    const r = (a: Uint8Array, b: Uint8Array): CommitRecord => ({ id: 'i', receivedAtMs: 0, rowFormat: '{}', rows: 0, rejects: 0, rowData: a, rejectData: b });
    const stores = backingStores([r(new Uint8Array(one, 0, 4), new Uint8Array(one, 4, 4)), r(new Uint8Array(shared), new Uint8Array(2))]);
    expect(stores).toHaveLength(2);
    expect(stores[0]).toBe(one);
    expect(stores[1]!.byteLength).toBe(2);
  });
});
