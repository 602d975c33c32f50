// The drain's spool on SQLite (node:sqlite or better-sqlite3: sqlite-db.ts), because durable local state belongs on a proven embedded store
// (CONTRIBUTING.md rule 16): WAL with synchronous=FULL, so a commit is on disk when it returns, and a crash at any
// point leaves the last commit intact. One transaction per group commit (every record queued while the previous
// commit ran); a record and its entry in the dedup index commit together, so a body is "seen" exactly when it
// is acknowledged. The batch handed to the replayer is saved (the plan) before it is returned.
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { openSqlite, type SqlDatabase, type SqlStatement } from './sqlite-db.js';
import type { Logger } from '../../../log.js';
import { passKillPoint } from './kill-points.js';
import {
  SpoolFullError,
  type AppendResult,
  type RowFormat,
  type Spool,
  type SpoolBatch,
  type SpoolOptions,
  type SpoolRecord,
  type SpoolRecordInput,
  type StagedData,
} from './spool.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS records (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL,
  received_at_ms INTEGER NOT NULL,
  row_format TEXT NOT NULL,
  rows INTEGER NOT NULL,
  rejects INTEGER NOT NULL,
  row_data BLOB NOT NULL,
  reject_data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS seen (id TEXT PRIMARY KEY, at_ms INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS seen_by_age ON seen (at_ms);
CREATE TABLE IF NOT EXISTS plan (one INTEGER PRIMARY KEY CHECK (one = 1), from_seq INTEGER NOT NULL, to_seq INTEGER NOT NULL);
`;

interface Pending {
  record: SpoolRecordInput;
  size: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

interface RecordRow {
  seq: number;
  id: string;
  received_at_ms: number;
  row_format: string;
  rows: number;
  rejects: number;
  row_data: Uint8Array;
  reject_data: Uint8Array;
}

const asBuffer = (b: Uint8Array): Buffer => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength));

/** The staged rows as one buffer (the spilled file first, then memory). */
async function gather(data: StagedData): Promise<Buffer> {
  const parts = data.file ? [(await readFile(data.file.path)).subarray(0, data.file.bytes), ...data.memory] : data.memory;
  return parts.length === 1 ? parts[0] : Buffer.concat(parts);
}

export class SqliteSpool implements Spool {
  readonly limitBytes: number;
  readonly retryAfterSeconds: number;
  readonly stagingDir: string;
  bytes = 0;
  pendingRows = 0;
  appendedRecords = 0;
  replayedRecords = 0;
  /** Transactions that committed appends (one per group). */
  commits = 0;

  private readonly db: SqlDatabase;
  private readonly windowMs: number;
  private readonly maxSeen: number;
  private readonly logger?: Logger;
  private queue: Pending[] = [];
  private pumping: Promise<void> | null = null;
  private reservedBytes = 0;
  private readonly inflightIds = new Map<string, Promise<AppendResult>>();
  private appendListeners: Array<() => void> = [];
  private current: { batch: SpoolBatch; fromSeq: number; toSeq: number } | null = null;
  private closed = false;
  private readonly sql: {
    isSeen: SqlStatement<[string, number], unknown>;
    insertRecord: SqlStatement<[string, number, string, number, number, Buffer, Buffer], unknown>;
    markSeen: SqlStatement<[string, number], unknown>;
    plan: SqlStatement<[], { from_seq: number; to_seq: number } | undefined>;
    savePlan: SqlStatement<[number, number], unknown>;
    dropPlan: SqlStatement<[], unknown>;
    range: SqlStatement<[number, number], RecordRow>;
    oldest: SqlStatement<[], RecordRow>;
    deleteRange: SqlStatement<[number, number], unknown>;
    forgetOld: SqlStatement<[number], unknown>;
    forgetBeyond: SqlStatement<[number], unknown>;
  };

  private constructor(opts: SpoolOptions) {
    this.limitBytes = opts.maxBytes;
    this.retryAfterSeconds = opts.retryAfterSeconds ?? 30;
    this.windowMs = opts.dedupWindowMs ?? 24 * 3_600_000;
    this.maxSeen = opts.dedupMaxEntries ?? 200_000;
    this.logger = opts.logger;
    this.stagingDir = join(opts.dir, 'staging');
    mkdirSync(opts.dir, { recursive: true });
    // Spilled rows of requests a previous run never answered.
    rmSync(this.stagingDir, { recursive: true, force: true });
    mkdirSync(this.stagingDir, { recursive: true });
    this.db = openSqlite(join(opts.dir, 'spool.sqlite'));
    this.db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA journal_size_limit = 67108864;');
    this.db.exec(SCHEMA);
    const prepare = <P extends unknown[], R = unknown>(text: string) => this.db.prepare<P, R>(text);
    this.sql = {
      isSeen: prepare('SELECT 1 FROM seen WHERE id = ? AND at_ms >= ?'),
      insertRecord: prepare('INSERT INTO records (id, received_at_ms, row_format, rows, rejects, row_data, reject_data) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      markSeen: prepare('INSERT OR REPLACE INTO seen (id, at_ms) VALUES (?, ?)'),
      plan: prepare('SELECT from_seq, to_seq FROM plan WHERE one = 1'),
      savePlan: prepare('INSERT OR REPLACE INTO plan (one, from_seq, to_seq) VALUES (1, ?, ?)'),
      dropPlan: prepare('DELETE FROM plan'),
      range: prepare('SELECT * FROM records WHERE seq BETWEEN ? AND ? ORDER BY seq'),
      oldest: prepare('SELECT * FROM records ORDER BY seq'),
      deleteRange: prepare('DELETE FROM records WHERE seq BETWEEN ? AND ?'),
      forgetOld: prepare('DELETE FROM seen WHERE at_ms < ?'),
      forgetBeyond: prepare('DELETE FROM seen WHERE at_ms < (SELECT at_ms FROM seen ORDER BY at_ms DESC LIMIT 1 OFFSET ?)'),
    };
    const totals = this.db
      .prepare<[], { n: number; rows: number | null; bytes: number | null }>('SELECT count(*) AS n, sum(rows) AS rows, sum(length(row_data) + length(reject_data)) AS bytes FROM records')
      .get()!;
    this.appendedRecords = totals.n;
    this.pendingRows = totals.rows ?? 0;
    this.bytes = totals.bytes ?? 0;
    if (this.bytes > 0) this.logger?.info({ bytes: this.bytes, rows: this.pendingRows }, 'log drain spool holds lines not yet in the store; replaying');
  }

  /** Opens (creating or recovering) the spool in `opts.dir`. */
  static async open(opts: SpoolOptions): Promise<SqliteSpool> {
    return new SqliteSpool(opts);
  }

  isFull(size = 0): boolean {
    return this.bytes + this.reservedBytes + size > this.limitBytes;
  }

  onAppend(listener: () => void): () => void {
    this.appendListeners.push(listener);
    return () => {
      this.appendListeners = this.appendListeners.filter((l) => l !== listener);
    };
  }

  append(record: SpoolRecordInput): Promise<AppendResult> {
    if (this.closed) return Promise.reject(new Error('the spool is closed'));
    if (this.sql.isSeen.get(record.id, Date.now() - this.windowMs)) return Promise.resolve({ status: 'duplicate' });
    const running = this.inflightIds.get(record.id);
    if (running) return running.then(() => ({ status: 'duplicate' }) as const);
    const size = record.rows.bytes + record.rejects.bytes;
    if (this.isFull(size)) return Promise.reject(new SpoolFullError(this.bytes + this.reservedBytes, this.limitBytes, this.retryAfterSeconds));
    this.reservedBytes += size;
    const result = new Promise<void>((resolve, reject) => {
      this.queue.push({ record, size, resolve, reject });
      this.pumping ??= this.pump();
    }).then((): AppendResult => ({ status: 'appended' }));
    this.inflightIds.set(record.id, result);
    const forget = () => this.inflightIds.delete(record.id);
    result.then(forget, forget);
    return result;
  }

  /** Commits queued records, one transaction per group, until the queue is empty. */
  private async pump(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const group = this.queue.splice(0);
        try {
          const data = await Promise.all(group.map(async (p) => [await gather(p.record.rows), await gather(p.record.rejects)] as const));
          passKillPoint('append');
          const now = Date.now();
          this.db.transaction(() => {
            group.forEach((p, i) => {
              const r = p.record;
              this.sql.insertRecord.run(r.id, r.receivedAtMs, JSON.stringify(r.rowFormat), r.rows.count, r.rejects.count, data[i][0], data[i][1]);
              this.sql.markSeen.run(r.id, now);
            });
            passKillPoint('group-commit');
          });
          passKillPoint('after-commit');
        } catch (err) {
          for (const p of group) {
            this.reservedBytes -= p.size;
            p.reject(err);
          }
          continue;
        }
        this.commits++;
        for (const p of group) {
          this.reservedBytes -= p.size;
          this.bytes += p.size;
          this.pendingRows += p.record.rows.count;
          this.appendedRecords++;
          p.resolve();
        }
        for (const l of this.appendListeners) l();
      }
    } finally {
      this.pumping = null;
    }
  }

  async nextBatch(limits: { maxRows: number; maxBytes: number }): Promise<SpoolBatch | null> {
    if (this.current) return this.current.batch;
    const plan = this.sql.plan.get();
    let rows: RecordRow[];
    if (plan) {
      rows = this.sql.range.all(plan.from_seq, plan.to_seq);
    } else {
      rows = [];
      let lines = 0;
      let bytes = 0;
      for (const r of this.sql.oldest.iterate()) {
        if (rows.length > 0 && (lines >= limits.maxRows || bytes + r.row_data.length + r.reject_data.length > limits.maxBytes)) break;
        rows.push(r);
        lines += r.rows;
        bytes += r.row_data.length + r.reject_data.length;
      }
    }
    if (rows.length === 0) {
      if (plan) this.sql.dropPlan.run();
      return null;
    }
    const fromSeq = rows[0].seq;
    const toSeq = rows[rows.length - 1].seq;
    if (!plan) this.sql.savePlan.run(fromSeq, toSeq);
    const batch: SpoolBatch = { records: rows.map(toRecord), resumed: plan !== undefined };
    this.current = { batch, fromSeq, toSeq };
    return batch;
  }

  async commit(batch: SpoolBatch): Promise<void> {
    const current = this.current;
    if (!current || current.batch !== batch) throw new Error('spool: commit of a batch that is not the current one');
    const now = Date.now();
    this.db.transaction(() => {
      this.sql.deleteRange.run(current.fromSeq, current.toSeq);
      this.sql.dropPlan.run();
      passKillPoint('cleanup');
      this.sql.forgetOld.run(now - this.windowMs);
      this.sql.forgetBeyond.run(this.maxSeen);
    });
    this.current = null;
    for (const r of batch.records) {
      this.bytes -= r.rowData.length + r.rejectData.length;
      this.pendingRows -= r.rows;
    }
    this.replayedRecords += batch.records.length;
  }

  stagingPath(): string {
    return join(this.stagingDir, `${randomUUID()}.rows`);
  }

  async close(): Promise<void> {
    this.closed = true;
    while (this.pumping) await this.pumping;
    this.db.close();
  }
}

function toRecord(r: RecordRow): SpoolRecord {
  return {
    id: r.id,
    receivedAtMs: r.received_at_ms,
    rowFormat: JSON.parse(r.row_format) as RowFormat,
    rows: r.rows,
    rejects: r.rejects,
    // node:sqlite gives BLOBs as Uint8Array, better-sqlite3 as Buffer: a Buffer view either way, no copy.
    rowData: asBuffer(r.row_data),
    rejectData: asBuffer(r.reject_data),
  };
}
