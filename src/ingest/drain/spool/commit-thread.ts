// The spool's group commits run on a thread of their own. A commit with synchronous = FULL waits for the disk
// (fsync of the WAL, and of the file at each checkpoint): on the event loop that wait stopped every request, the
// replayer and the store's answers for its whole length (8.6 s of a 24 s bench run of 1M lines), and since nothing
// could queue meanwhile, every group was one record. Here the event loop goes on while a group commits, and what
// arrives meanwhile is the next group (one fsync for several records).
//
// Protocol: main -> worker: open {path, generation}, commit {seq, generation, records, now}, close;
// worker -> main: opened | open-failed, done | failed {error} | stale {records} per commit (done and failed hand
// the records' memory back: see commit-worker.ts).
// A commit is answered `done` only after its transaction committed. `generation` counts the spool files: recovery
// (a damaged file moved aside, sqlite-spool.ts) bumps it in shared memory and waits until no commit is running, so a
// group either committed before the file was moved (and is salvaged with it) or comes back `stale` and is sent again.
import type { Worker } from 'node:worker_threads';
import { moduleWorker } from '../module-worker.js';

/** Indexes into the shared Int32Array. */
export const GENERATION = 0;
export const BUSY = 1;

export interface CommitRecord {
  id: string;
  receivedAtMs: number;
  /** JSON of the RowFormat. */
  rowFormat: string;
  rows: number;
  rejects: number;
  rowData: Uint8Array;
  rejectData: Uint8Array;
}

export type ToCommitter =
  | { t: 'open'; path: string; generation: number }
  | { t: 'commit'; seq: number; generation: number; records: CommitRecord[]; now: number }
  | { t: 'close' };

export interface SqlErrorShape {
  message: string;
  code?: unknown;
  errcode?: unknown;
}

export type FromCommitter =
  | { t: 'opened'; generation: number }
  | { t: 'open-failed'; generation: number; error: SqlErrorShape }
  | { t: 'done'; seq: number; generation: number; released: ArrayBuffer[] }
  | { t: 'failed'; seq: number; error: SqlErrorShape; released: ArrayBuffer[] }
  | { t: 'stale'; seq: number; records: CommitRecord[] };

/** An SQLite error from the thread, with the codes isDamagedFileError classifies by. */
function toError(e: SqlErrorShape): Error {
  return Object.assign(new Error(e.message), { code: e.code, errcode: e.errcode });
}

/** A buffer worth moving rather than copying: it owns its memory whole (not a slice of Node's small-buffer pool). */
function movable(b: Uint8Array): boolean {
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.byteLength >= 64 * 1024;
}

export class CommitThread {
  private readonly worker: Worker;
  private readonly shared = new Int32Array(new SharedArrayBuffer(8));
  private seq = 0;
  private readonly pending = new Map<number, { records: CommitRecord[]; now: number; resolve: (generation: number) => void; reject: (err: Error) => void }>();
  private opening: { resolve: () => void; reject: (err: Error) => void } | undefined;
  private readonly exited: Promise<void>;
  /** Set when the thread died: the spool commits on its own connection from then on. */
  dead: Error | undefined;

  private constructor() {
    this.worker = moduleWorker(import.meta.url, 'commit-worker', { shared: this.shared.buffer });
    this.worker.unref();
    this.exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.on('message', (m: FromCommitter) => this.receive(m));
    this.worker.on('error', (err) => this.fail(err));
    // An answer that cannot be read (memory for a large group) would leave its group waiting for ever.
    this.worker.on('messageerror', (err) => this.abandon(err));
    this.worker.on('exit', (code) => this.fail(new Error(`spool commit thread exited (${code})`)));
  }

  /** Starts the thread on the spool file; rejects when it cannot start (the spool then commits on its own connection). */
  static async start(path: string, timeoutMs = 60_000): Promise<CommitThread> {
    const thread = new CommitThread();
    try {
      await thread.open(path, Atomics.load(thread.shared, GENERATION), timeoutMs);
    } catch (err) {
      await thread.close();
      throw err;
    }
    return thread;
  }

  get generation(): number {
    return Atomics.load(this.shared, GENERATION);
  }

  private open(path: string, generation: number, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the spool commit thread did not start')), timeoutMs);
      this.opening = {
        resolve: () => (clearTimeout(timer), resolve()),
        reject: (err) => (clearTimeout(timer), reject(err)),
      };
      this.worker.postMessage({ t: 'open', path, generation } satisfies ToCommitter);
    });
  }

  /**
   * Commits the records (and their dedup entries) in one transaction; resolves once it is durable, with the
   * generation of the file it went into.
   */
  commit(records: CommitRecord[], now: number): Promise<number> {
    if (this.dead) return Promise.reject(this.dead);
    return new Promise<number>((resolve, reject) => {
      const seq = ++this.seq;
      this.pending.set(seq, { records, now, resolve, reject });
      this.post(seq, records, now);
    });
  }

  private post(seq: number, records: CommitRecord[], now: number): void {
    const transfer = new Set<ArrayBuffer>();
    for (const r of records) {
      for (const b of [r.rowData, r.rejectData]) if (movable(b)) transfer.add(b.buffer as ArrayBuffer);
    }
    this.worker.postMessage({ t: 'commit', seq, generation: this.generation, records, now } satisfies ToCommitter, [...transfer]);
  }

  /**
   * The spool file is about to be moved aside: from now on no group commits into it, and a group committing now is
   * waited for (synchronously: recovery is synchronous so that nothing runs in between). Then `reopen`.
   */
  quiesce(timeoutMs = 30_000): void {
    Atomics.add(this.shared, GENERATION, 1);
    if (this.dead) return;
    // A thread that died inside a commit (terminated, out of memory) leaves BUSY set: after the deadline it is
    // stopped and its groups fail (their senders get no 200, so the platform sends them again).
    const deadline = Date.now() + timeoutMs;
    while (Atomics.load(this.shared, BUSY) === 1) {
      if (Date.now() >= deadline) return this.abandon(new Error(`the spool commit thread did not finish a commit in ${timeoutMs} ms`));
      Atomics.wait(this.shared, BUSY, 1, 1_000);
    }
  }

  /** Gives up on the thread: every group in flight fails, and the spool commits on its own connection from now on. */
  abandon(err: Error): void {
    this.fail(err);
    void this.worker.terminate();
  }

  /** After quiesce: the thread opens the new file; groups sent before it come back and are sent again. */
  reopen(path: string): void {
    this.worker.postMessage({ t: 'open', path, generation: this.generation } satisfies ToCommitter);
  }

  private receive(m: FromCommitter): void {
    switch (m.t) {
      case 'opened':
        this.opening?.resolve();
        this.opening = undefined;
        return;
      case 'open-failed': {
        const err = toError(m.error);
        if (this.opening) {
          this.opening.reject(err);
          this.opening = undefined;
        } else {
          this.fail(err);
        }
        return;
      }
      case 'done':
      case 'failed': {
        const p = this.pending.get(m.seq);
        if (!p) return;
        this.pending.delete(m.seq);
        if (m.t === 'done') p.resolve(m.generation);
        else p.reject(toError(m.error));
        return;
      }
      case 'stale': {
        const p = this.pending.get(m.seq);
        if (!p) return;
        p.records = m.records;
        this.post(m.seq, m.records, p.now);
        return;
      }
    }
  }

  private fail(err: Error): void {
    if (this.dead) return;
    this.dead = err;
    this.opening?.reject(err);
    this.opening = undefined;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }

  async close(): Promise<void> {
    this.fail(new Error('the spool commit thread is closed'));
    this.worker.postMessage({ t: 'close' } satisfies ToCommitter);
    // The thread closes its connection, then its port; should it not, it is stopped.
    const timer = setTimeout(() => void this.worker.terminate(), 5_000);
    await this.exited;
    clearTimeout(timer);
  }
}
