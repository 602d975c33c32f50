// Issue 44.6, two items left from earlier rounds.
// 1. Counters after a lost answer: the commit thread commits a group, and its answer never reaches the spool (the
//    thread dies, or the answer cannot be read: it is abandoned). The group was failed though it is in the file:
//    bytes, pendingRows and appendedRecords fell short of the file, the replayer slept on records it did not know of,
//    and replaying them drove the totals below zero. Oracle: the file's own rows (read with a connection of its own).
// 2. Two connections, one write lock: the commit thread appends through its connection while the spool's own
//    connection saves plans and deletes replayed batches. A writer that holds the lock longer than the busy timeout
//    (5 s) makes the other's write fail with SQLITE_BUSY. Shown harmless here: a busy file is not taken for a damaged
//    one (nothing moved aside), the failed replay commit and the failed append are retried, and every record is
//    replayed once, none lost, the totals right.
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteSpool } from '../../../src/ingest/drain/spool/sqlite-spool.js';
import type { CommitThread, FromCommitter } from '../../../src/ingest/drain/spool/commit-thread.js';
import { openSqlite } from '../../../src/ingest/drain/spool/sqlite-db.js';
import type { StagedData } from '../../../src/ingest/drain/spool/spool.js';

const opened: SqliteSpool[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close().catch(() => undefined);
});

const staged = (text: string): StagedData => ({ count: text.split('\n').length - 1, bytes: Buffer.byteLength(text), crc: 0, file: undefined, memory: [Buffer.from(text)] });
// '{"b":"xx"}\n' is 11 bytes.
const rec = (id: string) => ({ id, receivedAtMs: 1, rowFormat: { format: 'JSONEachRow' }, rows: staged(`{"b":"${id}"}\n`), rejects: staged('') });
const ALL = { maxRows: Infinity, maxBytes: Infinity };

/** The records in the file, by a connection of the test's own. */
function fileTotals(dir: string): { n: number; bytes: number } {
  const db = openSqlite(join(dir, 'spool.sqlite'));
  try {
    const r = db.prepare<[], { n: number; bytes: number | null }>('SELECT count(*) AS n, sum(length(row_data) + length(reject_data)) AS bytes FROM records').get()!;
    return { n: r.n, bytes: r.bytes ?? 0 };
  } finally {
    db.close();
  }
}

async function openSpool(): Promise<{ spool: SqliteSpool; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'spool-lost-answer-'));
  const spool = await SqliteSpool.open({ dir, maxBytes: 1 << 20 });
  opened.push(spool);
  return { spool, dir };
}

describe('a group committed whose answer is lost', () => {
  it('the totals follow the file: the record is replayed once and the totals end at zero, not below', async () => {
    const { spool, dir } = await openSpool();
    expect(await spool.append(rec('a1'))).toEqual({ status: 'appended' });
    // The next answer of the thread is lost: the thread is given up as it arrives (as when it cannot be read).
    const committer = (spool as unknown as { committer: CommitThread }).committer;
    const receive = (committer as unknown as { receive: (m: FromCommitter) => void }).receive.bind(committer);
    (committer as unknown as { receive: (m: FromCommitter) => void }).receive = (m) => {
      if (m.t === 'done') committer.abandon(new Error('the answer could not be read'));
      else receive(m);
    };
    let woken = 0;
    spool.onAppend(() => woken++);
    await expect(spool.append(rec('a2'))).rejects.toThrow(/the answer could not be read/);
    expect(fileTotals(dir)).toEqual({ n: 2, bytes: 22 });
    // The spool counts what its file holds, and wakes the replayer for it.
    expect([spool.bytes, spool.pendingRows, spool.appendedRecords]).toEqual([22, 2, 2]);
    expect(woken).toBe(1);
    // The sender's retry: a duplicate (the body is in the file), nothing appended twice.
    expect(await spool.append(rec('a2'))).toEqual({ status: 'duplicate' });
    const batch = (await spool.nextBatch(ALL))!;
    expect(batch.records.map((r) => r.id)).toEqual(['a1', 'a2']);
    await spool.commit(batch);
    expect([spool.bytes, spool.pendingRows, spool.appendedRecords, spool.replayedRecords]).toEqual([0, 0, 2, 2]);
    expect(fileTotals(dir)).toEqual({ n: 0, bytes: 0 });
  });
});

describe('two connections, one write lock', () => {
  it('a writer holding the lock past the busy timeout: the replay commit and an append fail, are retried, and nothing is lost or doubled', async () => {
    const { spool, dir } = await openSpool();
    for (const id of ['w1', 'w2']) expect(await spool.append(rec(id))).toEqual({ status: 'appended' });
    const batch = (await spool.nextBatch(ALL))!;
    // Another connection takes the write lock and keeps it.
    const locker = openSqlite(join(dir, 'spool.sqlite'));
    locker.exec('BEGIN IMMEDIATE');
    let busyCommit: unknown;
    let busyAppend: unknown;
    try {
      [busyCommit, busyAppend] = await Promise.all([
        spool.commit(batch).then(() => undefined, (err: unknown) => err),
        spool.append(rec('w3')).then(() => undefined, (err: unknown) => err),
      ]);
    } finally {
      locker.exec('ROLLBACK');
      locker.close();
    }
    // SQLITE_BUSY: better-sqlite3 names it (code SQLITE_BUSY...); node:sqlite (Node 24) gives ERR_SQLITE_ERROR and
    // the number (errcode 5, its low byte for the extended codes).
    const busy = busyCommit as { code?: string; errcode?: number };
    expect({ code: busy.code, errcode: busy.errcode }).toSatisfy(
      (e: { code?: string; errcode?: number }) => /^SQLITE_BUSY/.test(e.code ?? '') || (typeof e.errcode === 'number' && (e.errcode & 0xff) === 5),
    );
    expect(String((busyAppend as Error).message)).toMatch(/locked|busy/i);
    // A busy file is no damaged file: nothing moved aside, nothing counted lost.
    expect(readdirSync(dir).filter((f) => f.includes('corrupt'))).toEqual([]);
    expect([spool.bytes, spool.pendingRows, spool.appendedRecords]).toEqual([22, 2, 2]);
    // The replayer commits the same batch again (its insert went under one token); the sender sends w3 again.
    expect(await spool.nextBatch(ALL)).toBe(batch);
    await spool.commit(batch);
    expect(await spool.append(rec('w3'))).toEqual({ status: 'appended' });
    const rest = (await spool.nextBatch(ALL))!;
    expect(rest.records.map((r) => r.id)).toEqual(['w3']);
    await spool.commit(rest);
    expect([spool.bytes, spool.pendingRows, spool.appendedRecords, spool.replayedRecords]).toEqual([0, 0, 3, 3]);
    expect(fileTotals(dir)).toEqual({ n: 0, bytes: 0 });
  }, 60_000);
});
