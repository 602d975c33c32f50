// The spool's group commits, on a thread of their own (commit-thread.ts has the protocol and the reasons). Its own
// SQLite connection to the spool file, with the same durability as the main one (WAL, synchronous = FULL): a group
// is answered `done` only after its transaction committed.
// The thread's work is serveCommits, on whatever port it is given: the worker's parentPort here, a MessageChannel's
// port in test/ingest/drain/commit-worker.mutation.test.ts, which runs it in the test's own thread.
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { openSqlite, type SqlDatabase, type SqlStatement } from './sqlite-db.js';
import { passKillPoint } from './kill-points.js';
import { BUSY, GENERATION, type CommitRecord, type FromCommitter, type ToCommitter } from './commit-thread.js';

/** What the main thread needs of an SQLite error: damage is classified by its code (sqlite-db.ts). */
export function describe(err: unknown): { message: string; code?: unknown; errcode?: unknown } {
  const e = err as { message?: unknown; code?: unknown; errcode?: unknown };
  return { message: String(e?.message ?? err), code: e?.code, errcode: e?.errcode };
}

/**
 * The records' memory goes back to the main thread with the answer. This thread allocates almost nothing else, so
 * its collector ran rarely and held up to ~64 MiB of committed blobs between runs (peak RSS of the server-store bench
 * 363 MB); the main thread, which allocates all the time, frees them at its next young-generation collection.
 */
export function backingStores(records: CommitRecord[]): ArrayBuffer[] {
  const stores = new Set<ArrayBuffer>();
  for (const r of records) for (const b of [r.rowData, r.rejectData]) if (b.buffer instanceof ArrayBuffer) stores.add(b.buffer);
  return [...stores];
}

/**
 * Answers the main thread's messages on `port` (the protocol: commit-thread.ts). `shared` is the generation and
 * busy flag; `onUnreadable` ends the thread when a message cannot be read.
 */
export function serveCommits(port: MessagePort, sharedBuffer: SharedArrayBuffer, onUnreadable: () => void): void {
  const shared = new Int32Array(sharedBuffer);

  let db: SqlDatabase | undefined;
  let attachedGeneration = -1;
  let insertRecord: SqlStatement<[string, number, string, number, number, Uint8Array, Uint8Array], unknown>;
  let markSeen: SqlStatement<[string, number], unknown>;

  function attach(path: string, generation: number): void {
    db?.close();
    db = undefined;
    const next = openSqlite(path);
    next.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000;');
    insertRecord = next.prepare('INSERT INTO records (id, received_at_ms, row_format, rows, rejects, row_data, reject_data) VALUES (?, ?, ?, ?, ?, ?, ?)');
    markSeen = next.prepare('INSERT OR REPLACE INTO seen (id, at_ms) VALUES (?, ?)');
    db = next;
    attachedGeneration = generation;
  }

  const send = (m: FromCommitter, transfer: ArrayBuffer[] = []) => port.postMessage(m, transfer);

  function commit(seq: number, generation: number, records: CommitRecord[], now: number): void {
    // BUSY before the generation is read, the main thread bumps the generation before it reads BUSY: whichever comes
    // second sees the other, so no group commits into a file that is being moved aside (SqliteSpool.recover).
    Atomics.store(shared, BUSY, 1);
    try {
      if (generation > attachedGeneration) {
        // Sent for a file this thread was never told to open: the recovery that bumped the generation failed before
        // it reopened (a full disk, no file handles). Sent back as stale it would loop between the threads for ever.
        throw new Error('the spool file was moved aside and not reopened: no group commits until the spool is opened again');
      }
      if (!db || generation !== attachedGeneration || Atomics.load(shared, GENERATION) !== attachedGeneration) {
        // The file was replaced (recovered) after this group was sent: the group goes back, to be sent again (copied:
        // a rare path).
        send({ t: 'stale', seq, records });
        return;
      }
      db.transaction(() => {
        for (const r of records) {
          insertRecord.run(r.id, r.receivedAtMs, r.rowFormat, r.rows, r.rejects, r.rowData, r.rejectData);
          markSeen.run(r.id, now);
        }
        passKillPoint('group-commit');
      });
      const released = backingStores(records);
      send({ t: 'done', seq, generation: attachedGeneration, released }, released);
    } catch (err) {
      const released = backingStores(records);
      send({ t: 'failed', seq, error: describe(err), released }, released);
    } finally {
      Atomics.store(shared, BUSY, 0);
      Atomics.notify(shared, BUSY);
    }
  }

  // A message that cannot be read names no group to answer: the thread ends, and the main thread fails every group
  // in flight (its 'exit' handler) instead of waiting for answers that never come.
  port.on('messageerror', onUnreadable);

  port.on('message', (m: ToCommitter) => {
    switch (m.t) {
      case 'open':
        try {
          attach(m.path, m.generation);
          send({ t: 'opened', generation: m.generation });
        } catch (err) {
          send({ t: 'open-failed', generation: m.generation, error: describe(err) });
        }
        return;
      case 'commit':
        commit(m.seq, m.generation, m.records, m.now);
        return;
      case 'close':
        db?.close();
        db = undefined;
        port.close();
        return;
    }
  });
}

// In the worker thread (commit-thread.ts starts it, with the shared memory); imported elsewhere (a test, also in a
// test runner's own worker thread), it only exports.
const shared = (workerData as { shared?: unknown } | null)?.shared;
if (parentPort && shared instanceof SharedArrayBuffer) serveCommits(parentPort, shared, () => process.exit(1));
