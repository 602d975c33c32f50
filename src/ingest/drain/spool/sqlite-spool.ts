// The drain's spool on SQLite (node:sqlite or better-sqlite3: sqlite-db.ts), because durable local state belongs on a proven embedded store
// (CONTRIBUTING.md rule 16): WAL with synchronous=FULL, so a commit is on disk when it returns, and a crash at any
// point leaves the last commit intact. One transaction per group commit (every record queued while the previous
// commit ran); a record and its entry in the dedup index commit together, so a body is "seen" exactly when it
// is acknowledged. The batch handed to the replayer is saved (the plan) before it is returned.
// A file SQLite cannot read (a damaged header or page: at open, in the integrity check at open, or at any later
// read or write) does not keep the service down: it is moved aside (`spool.sqlite.corrupt-<time>`, with its -wal
// and -shm), what can still be read of it is salvaged into a fresh spool (salvage.ts) and replayed, and the loss is
// logged once and counted. The files are the owner's only (0600, folder 0700): they hold log lines.
import { randomUUID } from 'node:crypto';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, renameSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { isDamagedFileError, openSqlite, type SqlDatabase, type SqlStatement } from './sqlite-db.js';
import { salvageSpool, type Salvage, type SalvagedRecord } from './salvage.js';
import { counter } from '../../../metrics.js';
import type { Logger } from '../../../log.js';
import { passKillPoint } from './kill-points.js';
import { CommitThread, type CommitRecord } from './commit-thread.js';
import type { Counter } from 'prom-client';
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
CREATE TABLE IF NOT EXISTS replayed (one INTEGER PRIMARY KEY CHECK (one = 1), through_seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS plan_ids (one INTEGER PRIMARY KEY CHECK (one = 1), ids TEXT NOT NULL);
`;

// The replay watermark: every seq up to through_seq is in the store (moved up in the transaction that deletes a
// replayed batch), so the live records are the seqs after it up to the last given, and a salvage counts each one it
// cannot read as lost, the first ones included (salvage.ts). A file from before it gets it at the first healthy
// open: the seq before its oldest record, or the last seq given when it holds none.
const INIT_WATERMARK = `INSERT OR IGNORE INTO replayed (one, through_seq)
  VALUES (1, coalesce((SELECT min(seq) - 1 FROM records), (SELECT seq FROM sqlite_sequence WHERE name = 'records'), 0))`;

interface Pending {
  record: SpoolRecordInput;
  size: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** A `records` row as the spool keeps it (one definition, shared with the salvage). */
type RecordRow = SalvagedRecord;

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

  private db!: SqlDatabase;
  private readonly path: string;
  private readonly dir: string;
  private readonly name: string;
  private readonly damage: { damaged: Counter; salvaged: Counter; lost: Counter };
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
  /** Where group commits run (commit-thread.ts); unset, or dead, they run on this thread's connection. */
  private committer: CommitThread | undefined;
  private sql!: {
    isSeen: SqlStatement<[string, number], unknown>;
    insertRecord: SqlStatement<[string, number, string, number, number, Uint8Array, Uint8Array], unknown>;
    markSeen: SqlStatement<[string, number], unknown>;
    plan: SqlStatement<[], { from_seq: number; to_seq: number } | undefined>;
    savePlan: SqlStatement<[number, number], unknown>;
    dropPlan: SqlStatement<[], unknown>;
    savePlanIds: SqlStatement<[string], unknown>;
    planIds: SqlStatement<[], { ids: string } | undefined>;
    dropPlanIds: SqlStatement<[], unknown>;
    range: SqlStatement<[number, number], RecordRow>;
    oldest: SqlStatement<[], RecordRow>;
    deleteRange: SqlStatement<[number, number], unknown>;
    markReplayed: SqlStatement<[number], unknown>;
    forgetOld: SqlStatement<[number], unknown>;
    forgetBeyond: SqlStatement<[number], unknown>;
  };

  private constructor(opts: SpoolOptions) {
    this.limitBytes = opts.maxBytes;
    this.retryAfterSeconds = opts.retryAfterSeconds ?? 30;
    this.windowMs = opts.dedupWindowMs ?? 24 * 3_600_000;
    this.maxSeen = opts.dedupMaxEntries ?? 200_000;
    this.logger = opts.logger;
    this.dir = opts.dir;
    this.name = opts.name ?? basename(opts.dir);
    this.path = join(opts.dir, 'spool.sqlite');
    const labelNames = ['spool'] as const;
    this.damage = {
      damaged: counter(opts.registry, { name: 'tallyhouse_spool_damaged_total', help: 'Spool files SQLite could not read (moved aside as *.corrupt-<time>; what could be read was salvaged).', labelNames }),
      salvaged: counter(opts.registry, { name: 'tallyhouse_spool_salvaged_records_total', help: 'Spool records read back from damaged spool files and replayed.', labelNames }),
      lost: counter(opts.registry, { name: 'tallyhouse_spool_lost_records_total', help: 'Acknowledged spool records lost with a damaged spool file (exact where the file says where its records start and end; a lower bound otherwise, the log line says which).', labelNames }),
    };
    // A healthy spool shows 0 (the alert and a dashboard see the series before any damage).
    for (const c of Object.values(this.damage)) c.inc({ spool: this.name }, 0);
    this.stagingDir = join(opts.dir, 'staging');
    mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
    chmodSync(opts.dir, 0o700);
    // Spilled rows of requests a previous run never answered.
    rmSync(this.stagingDir, { recursive: true, force: true });
    // Stryker disable next-line BooleanLiteral: its parent was made just above, so recursive changes nothing
    mkdirSync(this.stagingDir, { recursive: true, mode: 0o700 });
    try {
      this.attach();
      // The integrity check at open: a damaged page found now costs a restart nothing; found at replay, it would
      // stop the replayer (or be found there: see recover).
      const check = this.db.prepare<[], Record<string, unknown>>('PRAGMA quick_check').all();
      const verdict = check.map((r) => String(Object.values(r)[0]));
      if (verdict.length !== 1 || verdict[0] !== 'ok') throw new SpoolDamage(verdict.slice(0, 5).join('; '));
      this.db.exec(INIT_WATERMARK);
    } catch (err) {
      if (!(err instanceof SpoolDamage) && !isDamagedFileError(err)) throw err;
      this.recover(err);
    }
    if (this.bytes > 0) this.logger?.info({ bytes: this.bytes, rows: this.pendingRows }, 'log drain spool holds lines not yet in the store; replaying');
  }

  /** Opens the file (created 0600: SQLite gives its -wal and -shm the same mode) and reads the totals. */
  private attach(): void {
    closeSync(openSync(this.path, 'a', 0o600));
    chmodSync(this.path, 0o600);
    this.db = openSqlite(this.path);
    // busy_timeout: the commit thread writes through a connection of its own (commit-thread.ts).
    this.db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA journal_size_limit = 67108864; PRAGMA busy_timeout = 5000;');
    this.db.exec(SCHEMA);
    const prepare = <P extends unknown[], R = unknown>(text: string) => this.db.prepare<P, R>(text);
    this.sql = {
      isSeen: prepare('SELECT 1 FROM seen WHERE id = ? AND at_ms >= ?'),
      insertRecord: prepare('INSERT INTO records (id, received_at_ms, row_format, rows, rejects, row_data, reject_data) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      markSeen: prepare('INSERT OR REPLACE INTO seen (id, at_ms) VALUES (?, ?)'),
      plan: prepare('SELECT from_seq, to_seq FROM plan WHERE one = 1'),
      savePlan: prepare('INSERT OR REPLACE INTO plan (one, from_seq, to_seq) VALUES (1, ?, ?)'),
      dropPlan: prepare('DELETE FROM plan'),
      savePlanIds: prepare('INSERT OR REPLACE INTO plan_ids (one, ids) VALUES (1, ?)'),
      planIds: prepare('SELECT ids FROM plan_ids WHERE one = 1'),
      dropPlanIds: prepare('DELETE FROM plan_ids'),
      range: prepare('SELECT * FROM records WHERE seq BETWEEN ? AND ? ORDER BY seq'),
      oldest: prepare('SELECT * FROM records ORDER BY seq'),
      deleteRange: prepare('DELETE FROM records WHERE seq BETWEEN ? AND ?'),
      markReplayed: prepare('INSERT INTO replayed (one, through_seq) VALUES (1, ?) ON CONFLICT (one) DO UPDATE SET through_seq = max(through_seq, excluded.through_seq)'),
      forgetOld: prepare('DELETE FROM seen WHERE at_ms < ?'),
      forgetBeyond: prepare('DELETE FROM seen WHERE at_ms < (SELECT at_ms FROM seen ORDER BY at_ms DESC LIMIT 1 OFFSET ?)'),
    };
    this.readTotals();
  }

  private readTotals(): void {
    const totals = this.db
      .prepare<[], { n: number; rows: number | null; bytes: number | null }>('SELECT count(*) AS n, sum(rows) AS rows, sum(length(row_data) + length(reject_data)) AS bytes FROM records')
      .get()!;
    // Records waiting now count as appended (whenReplayed waits for them); records lost with a damaged file do not.
    this.appendedRecords = this.replayedRecords + totals.n;
    this.pendingRows = totals.rows ?? 0;
    this.bytes = totals.bytes ?? 0;
  }

  /**
   * A group failed without a damaged file: usually it was rolled back, and the totals stay as they are. But a commit
   * thread that dies (or whose answer cannot be read) after its transaction committed fails a group that is in the
   * file (issue 44.6: a lost answer): counted as not appended, bytes and pendingRows fell short of the file, the
   * replayer slept on records it did not know of, and the replay of them drove the totals below zero. The file's own
   * totals are read again instead (its senders, answered with an error, are told "duplicate" when they retry).
   */
  private resyncTotals(): void {
    try {
      const before = this.appendedRecords;
      this.readTotals();
      // Records the replayer did not know of: it is woken as by an append (their senders' retries append nothing).
      if (this.appendedRecords > before) for (const l of this.appendListeners) l();
    } catch (err) {
      if (isDamagedFileError(err)) this.recover(err);
      // Otherwise (the file busy): the totals are read again at the next failure or open.
    }
  }

  /**
   * The file is damaged: it goes aside with its WAL, what can be read of it is salvaged into a fresh file, and the
   * loss is logged and counted. Synchronous, so no append or replay step runs in between.
   */
  private recover(reason: unknown): void {
    // No group commits into the file while it is moved aside: one committing now finishes first (and is salvaged).
    this.committer?.quiesce();
    try {
      this.db?.close();
    } catch {
      // a damaged database may fail to close cleanly; its files are moved aside next
    }
    this.current = null;
    const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+/, '');
    let aside = `${this.path}.corrupt-${stamp}`;
    for (let n = 1; existsSync(aside); n++) aside = `${this.path}.corrupt-${stamp}-${n}`;
    for (const suffix of ['', '-wal', '-shm']) {
      if (existsSync(this.path + suffix)) renameSync(this.path + suffix, aside + suffix);
    }
    let salvage: Salvage;
    try {
      salvage = salvageSpool(aside, join(this.dir, 'salvage'));
    } catch (err) {
      // Salvage itself failed (the copy, a disk error): the service still starts, with what was lost said below.
      this.logger?.error({ err, spool: this.name, movedTo: aside }, `salvaging the damaged ${this.name} spool failed; its records stay in ${basename(aside)}`);
      salvage = { records: [], plan: undefined, seen: [], lostRecords: 0, lostExact: false, headerRebuilt: false };
    }
    this.attach();
    this.committer?.reopen(this.path);
    const { records, seen, plan } = salvage;
    const seqs = new Set(records.map((r) => r.seq));
    // The saved batch may already be in the store: replayed with the same records it gets the same token. Kept only
    // when every one of its records was read (otherwise its token differs anyway).
    const planRead = plan === undefined ? [] : records.filter((r) => r.seq >= plan.from_seq && r.seq <= plan.to_seq);
    const keepPlan = plan !== undefined && records.some((r) => r.seq >= plan.from_seq && r.seq <= plan.to_seq) && Array.from({ length: plan.to_seq - plan.from_seq + 1 }, (_, i) => plan.from_seq + i).every((s) => seqs.has(s));
    // The salvaged records take consecutive seqs from the first one's (the token is made of their ids, never their
    // seqs), so the fresh file's live run has no holes: a later salvage of it counts only what that one loses.
    const base = records[0]?.seq ?? 1;
    const renumbered = new Map(records.map((r, i) => [r.seq, base + i]));
    const insert = this.db.prepare<[number, string, number, string, number, number, Uint8Array, Uint8Array], unknown>(
      'INSERT INTO records (seq, id, received_at_ms, row_format, rows, rejects, row_data, reject_data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.db.transaction(() => {
      for (const r of records) insert.run(renumbered.get(r.seq)!, r.id, r.received_at_ms, r.row_format, r.rows, r.rejects, r.row_data, r.reject_data);
      for (const s of seen) this.sql.markSeen.run(s.id, s.at_ms);
      for (const r of records) this.sql.markSeen.run(r.id, Date.now());
      if (keepPlan) this.sql.savePlan.run(renumbered.get(plan.from_seq)!, renumbered.get(plan.to_seq)!);
      else if (plan !== undefined && salvage.planIds !== undefined && planRead.length > 0) {
        // Some of the saved batch was lost: the rest (consecutive once renumbered) is replayed as the batch, under
        // the tokens of all of its first records' ids, so that if the store took the batch before the damage it is
        // not stored again (issue 44.6: `faro_items` is a plain MergeTree, and a doubled item stays doubled).
        this.sql.savePlan.run(renumbered.get(planRead[0].seq)!, renumbered.get(planRead[planRead.length - 1].seq)!);
      }
      if ((keepPlan || planRead.length > 0) && salvage.planIds !== undefined) this.sql.savePlanIds.run(salvage.planIds);
      this.db.prepare<[number], unknown>('INSERT OR REPLACE INTO replayed (one, through_seq) VALUES (1, ?)').run(base - 1);
    });
    this.readTotals();
    this.damage.damaged.inc({ spool: this.name });
    this.damage.salvaged.inc({ spool: this.name }, records.length);
    this.damage.lost.inc({ spool: this.name }, salvage.lostRecords);
    this.logger?.error(
      {
        spool: this.name,
        movedTo: aside,
        salvagedRecords: records.length,
        salvagedRows: this.pendingRows,
        lostRecords: salvage.lostExact || salvage.lostRecords > 0 ? salvage.lostRecords : 'unknown',
        lostExact: salvage.lostExact,
        headerRebuilt: salvage.headerRebuilt,
        reason: reason instanceof Error ? reason.message : String(reason),
      },
      `the ${this.name} spool file was damaged: moved aside to ${basename(aside)}; ${records.length} record(s) salvaged and replayed, ${describeLoss(salvage)}; ` +
        `\`tallyhouse spool salvage ${aside}\` stores the lines still readable in it that the store lacks`,
    );
  }

  /** Runs a step that reads or writes the file; a damaged file is recovered and the step's error goes on. */
  private guarded<T>(step: () => T): T {
    try {
      return step();
    } catch (err) {
      if (!this.closed && isDamagedFileError(err)) this.recover(err);
      throw err;
    }
  }

  /** Opens (creating or recovering) the spool in `opts.dir`. */
  static async open(opts: SpoolOptions): Promise<SqliteSpool> {
    const spool = new SqliteSpool(opts);
    if (opts.commitThread ?? true) {
      try {
        spool.committer = await CommitThread.start(spool.path);
      } catch (err) {
        opts.logger?.error({ err: (err as Error).message, spool: spool.name }, 'the spool commit thread could not start; committing on the event loop');
      }
    }
    return spool;
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
    let seen: unknown;
    try {
      seen = this.guarded(() => this.sql.isSeen.get(record.id, Date.now() - this.windowMs));
    } catch (err) {
      return Promise.reject(err);
    }
    if (seen) return Promise.resolve({ status: 'duplicate' });
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
        let counted = false;
        try {
          const data = await Promise.all(group.map(async (p) => [await gather(p.record.rows), await gather(p.record.rejects)] as const));
          passKillPoint('append');
          const now = Date.now();
          const records: CommitRecord[] = group.map(({ record: r }, i) => ({
            id: r.id,
            receivedAtMs: r.receivedAtMs,
            rowFormat: JSON.stringify(r.rowFormat),
            rows: r.rows.count,
            rejects: r.rejects.count,
            rowData: data[i][0],
            rejectData: data[i][1],
          }));
          if (this.committer && !this.committer.dead) {
            const committedIn = await this.committer.commit(records, now);
            // Recovered since (the file moved aside and salvaged): the totals were read again with these records.
            counted = committedIn !== this.committer.generation;
          } else {
            this.db.transaction(() => {
              for (const r of records) {
                this.sql.insertRecord.run(r.id, r.receivedAtMs, r.rowFormat, r.rows, r.rejects, r.rowData, r.rejectData);
                this.sql.markSeen.run(r.id, now);
              }
              passKillPoint('group-commit');
            });
          }
          passKillPoint('after-commit');
        } catch (err) {
          for (const p of group) {
            this.reservedBytes -= p.size;
            p.reject(err);
          }
          // Not acknowledged: the senders retry into the recovered file.
          if (!this.closed && isDamagedFileError(err)) this.recover(err);
          else if (!this.closed) this.resyncTotals();
          continue;
        }
        this.commits++;
        for (const p of group) {
          this.reservedBytes -= p.size;
          if (!counted) {
            this.bytes += p.size;
            this.pendingRows += p.record.rows.count;
            this.appendedRecords++;
          }
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
    try {
      return this.readBatch(limits);
    } catch (err) {
      if (this.closed || !isDamagedFileError(err)) throw err;
      // A page found damaged at replay: what can be read goes on from the recovered file.
      this.recover(err);
      return this.readBatch(limits);
    }
  }

  private readBatch(limits: { maxRows: number; maxBytes: number }): SpoolBatch | null {
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
      if (plan) {
        this.sql.dropPlan.run();
        this.sql.dropPlanIds.run();
      }
      return null;
    }
    const fromSeq = rows[0].seq;
    const toSeq = rows[rows.length - 1].seq;
    const ids = rows.map((r) => r.id).join('\n');
    // The plan and its ids together: a salvage that loses some of the plan's records replays the rest under the
    // tokens of all of them (SpoolBatch.tokenIds).
    if (!plan) {
      this.db.transaction(() => {
        this.sql.savePlan.run(fromSeq, toSeq);
        this.sql.savePlanIds.run(ids);
      });
    }
    const planIds = plan ? this.sql.planIds.get()?.ids : undefined;
    const batch: SpoolBatch = { records: rows.map(toRecord), resumed: plan !== undefined, ...(planIds !== undefined && planIds !== ids ? { tokenIds: planIds } : {}) };
    this.current = { batch, fromSeq, toSeq };
    return batch;
  }

  async commit(batch: SpoolBatch): Promise<void> {
    const current = this.current;
    if (!current || current.batch !== batch) throw new Error('spool: commit of a batch that is not the current one');
    const now = Date.now();
    // Damaged here: recovered, and the error sends the replayer round again (the salvaged plan, same token).
    this.guarded(() =>
      this.db.transaction(() => {
        this.sql.deleteRange.run(current.fromSeq, current.toSeq);
        this.sql.markReplayed.run(current.toSeq);
        this.sql.dropPlan.run();
        this.sql.dropPlanIds.run();
        passKillPoint('cleanup');
        this.sql.forgetOld.run(now - this.windowMs);
        this.sql.forgetBeyond.run(this.maxSeen);
      }),
    );
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
    await this.committer?.close();
    this.db.close();
  }
}

/** What a salvage says of the records it could not read: a count, a lower bound, or unknown, never a bare 0. */
export function describeLoss(s: Pick<Salvage, 'lostRecords' | 'lostExact'>): string {
  if (s.lostExact) return `${s.lostRecords} lost`;
  if (s.lostRecords > 0) return `at least ${s.lostRecords} lost (how many before or after those cannot be counted)`;
  return 'an unknown number lost (the file does not say how many records it held)';
}

/** The integrity check at open found damage SQLite did not raise as an error. */
class SpoolDamage extends Error {}

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
