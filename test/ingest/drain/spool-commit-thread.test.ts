// The spool's group commits run on a thread of their own (spool/commit-thread.ts): the event loop goes on while a
// commit waits for the disk or for SQLite's write lock.
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqlite } from '../../../src/ingest/drain/spool/sqlite-db.js';
import { SqliteSpool } from '../../../src/ingest/drain/spool/sqlite-spool.js';
import type { Spool, SpoolRecordInput, StagedData } from '../../../src/ingest/drain/spool/spool.js';

const opened: Spool[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close().catch(() => undefined);
});

const staged = (text: string): StagedData => ({ count: text ? text.split('\n').length - 1 : 0, bytes: Buffer.byteLength(text), crc: 0, file: undefined, memory: text ? [Buffer.from(text)] : [] });
const record = (rows: string): SpoolRecordInput => ({
  id: createHash('sha256').update(rows).digest('hex'),
  // wall-clock: the spool's dedup window counts from the machine's clock
  receivedAtMs: Date.now(),
  rowFormat: { format: 'JSONEachRow' },
  rows: staged(rows),
  rejects: staged(''),
});

describe('spool commit thread', () => {
  it('a group commit that waits for the write lock leaves the event loop free: the holder lets go from a callback, and the records commit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spool-commit-thread-'));
    const spool = await SqliteSpool.open({ dir, maxBytes: 64 * 1024 * 1024 });
    opened.push(spool);
    // Another connection holds SQLite's write lock; it lets go on the next turn of the event loop. A commit on the
    // event loop (the old spool) waited for the lock right there (busy_timeout), so that turn never came before it
    // gave up: SQLITE_BUSY, the append refused.
    const holder = openSqlite(join(dir, 'spool.sqlite'));
    holder.exec('BEGIN IMMEDIATE');
    let released = false;
    const appended = spool.append(record('{"n":1}\n{"n":2}\n'));
    setImmediate(() => {
      holder.exec('ROLLBACK');
      holder.close();
      released = true;
    });
    await expect(appended).resolves.toEqual({ status: 'appended' });
    expect(released).toBe(true);
    // Appended while the first commit may still run: they commit (together or not), all of them.
    const more = await Promise.all([3, 4, 5].map((n) => spool.append(record(`{"n":${n}}\n`))));
    expect(more).toEqual([{ status: 'appended' }, { status: 'appended' }, { status: 'appended' }]);
    expect([spool.appendedRecords, spool.pendingRows]).toEqual([4, 5]);
    const batch = await spool.nextBatch({ maxRows: Infinity, maxBytes: Infinity });
    expect(batch!.records.map((r) => r.rowData.toString())).toEqual(['{"n":1}\n{"n":2}\n', '{"n":3}\n', '{"n":4}\n', '{"n":5}\n']);
    await spool.commit(batch!);
    expect([spool.bytes, spool.pendingRows]).toEqual([0, 0]);
  });

  it('a record committed by the thread is durable and seen: a reopened spool holds it and answers its body as a duplicate', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spool-commit-thread-'));
    const first = await SqliteSpool.open({ dir, maxBytes: 64 * 1024 * 1024 });
    expect(await first.append(record('{"a":1}\n'))).toEqual({ status: 'appended' });
    await first.close();
    const again = await SqliteSpool.open({ dir, maxBytes: 64 * 1024 * 1024 });
    opened.push(again);
    expect(await again.append(record('{"a":1}\n'))).toEqual({ status: 'duplicate' });
    const batch = await again.nextBatch({ maxRows: Infinity, maxBytes: Infinity });
    expect(batch!.records.map((r) => [r.rows, r.rowData.toString()])).toEqual([[1, '{"a":1}\n']]);
  });

  it('a recovery that fails before it reopens the file fails the groups in flight (they sent again between the threads for ever, and the append never settled)', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spool-commit-thread-'));
    const spool = await SqliteSpool.open({ dir, maxBytes: 64 * 1024 * 1024 });
    opened.push(spool);
    // The thread and the damaged-file recovery, reached as the spool reaches them: two groups sent, then the file
    // goes aside and opening the fresh one fails (a full disk, no file handles).
    const inner = spool as unknown as { committer: { commit(records: unknown[], now: number): Promise<number> }; attach(): void; recover(reason: unknown): void };
    const group = (id: string) => [{ id, receivedAtMs: 0, rowFormat: '{"format":"JSONEachRow"}', rows: 1, rejects: 0, rowData: new Uint8Array(1024).fill(65), rejectData: new Uint8Array(0) }];
    const settled = [inner.committer.commit(group('a'.repeat(64)), 0), inner.committer.commit(group('b'.repeat(64)), 0)].map((p) =>
      p.then((generation) => `committed in generation ${generation}`, (err: Error) => `refused: ${err.message}`),
    );
    inner.attach = () => {
      throw new Error('ENOSPC: no space left on device');
    };
    expect(() => inner.recover(new Error('file is not a database'))).toThrow('ENOSPC');
    // A group sent back as stale is sent again for the new generation, which is what a group sent now is: refused.
    const afterwards = await inner.committer.commit(group('c'.repeat(64)), 0).then(String, (err: Error) => `refused: ${err.message}`);
    expect(afterwards).toMatch(/^refused: the spool file was moved aside and not reopened/);
    // Each group sent before either went into the old file before it was moved aside (salvaged from there) or is
    // refused, so its sender gets no 200 and sends it again; none waits for ever.
    for (const outcome of await Promise.all(settled)) expect(outcome).toMatch(/^(committed in generation 0|refused: the spool file was moved aside and not reopened)/);
  });
});
