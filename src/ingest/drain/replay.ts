// Moves spooled drain records into the store, in spool order. The spool saves each batch before handing it
// out, so after a crash the same records go again with the same deduplication token and the store keeps them
// once. A batch leaves the spool only after the store confirmed it.
import { createHash } from 'node:crypto';
import type { Store } from '../../store/client.js';
import type { BatchWriter } from '../../store/writer.js';
import { REJECTS_TABLE } from '../../store/writer.js';
import { classifyStoreError, describeStoreError } from '../../store/errors.js';
import { insertEncoded } from '../../store/insert.js';
import type { Logger } from '../../log.js';
import { passKillPoint } from './spool/kill-points.js';
import type { RowFormat, Spool, SpoolRecord } from './spool/spool.js';
import type { DrainMetrics } from './metrics.js';
import { retryCeilingMs, retryDelayMs, type RetryPolicy } from '../../retry.js';

export const LOGS_TABLE = 'logs';

export interface ReplayerOptions {
  spool: Spool;
  /** The table the records' rows go to (default `logs`); rejects always go to ingest_rejects. */
  table?: string;
  store: Pick<Store, 'client' | 'mode'>;
  /**
   * With the embedded store: a directory for the batch file the store reads itself (INSERT ... FROM INFILE).
   * chDB parses a file two to three times faster than the same rows passed through the client as a query
   * string (which it copies into one JavaScript string, then into the statement). Unset: always through the client.
   */
  infileDir?: string;
  /** For the rare row the store refuses as data (it goes to ingest_rejects). */
  writer: Pick<BatchWriter, 'reject'>;
  logger?: Logger;
  metrics?: DrainMetrics;
  /** How long appended rows may wait for company (a full batch) before they are inserted. */
  lingerMs?: number;
  /** This many rows go at once (default: maxBatchRows); so do maxBatchBytes of records. */
  minBatchRows?: number;
  maxBatchRows?: number;
  /** The largest batch in bytes of records; unset: a third of memoryBudgetBytes, else 16 MiB. */
  maxBatchBytes?: number;
  /**
   * Bytes the replayer's batches may hold in memory together. A batch's buffers (read from the spool) are freed at
   * the main thread's next full garbage collection, not when the batch is committed, so the batch being inserted,
   * the one read after it and the one before it may all be resident at once: a batch is at most a third of this.
   */
  memoryBudgetBytes?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /**
   * Runs after a batch's rows are in the store and before the spool lets go of them, with the rows (one Buffer per
   * spool record, rows separated by newlines). A failure retries the batch (its insert is deduplicated by token).
   */
  afterInsert?: (parts: Buffer[]) => Promise<void>;
}

class Stopping extends Error {}

const JSON_ROWS: RowFormat = { format: 'JSONEachRow' };

function token(table: string, ids: string): string {
  return createHash('sha256').update(table).update('\n').update(ids).digest('hex');
}

/** Splits JSONEachRow bytes into rows (each without its newline). */
function splitRows(parts: Buffer[]): Buffer[] {
  const rows: Buffer[] = [];
  for (const part of parts) {
    let start = 0;
    for (let nl = part.indexOf(0x0a); nl !== -1; nl = part.indexOf(0x0a, start)) {
      if (nl > start) rows.push(part.subarray(start, nl));
      start = nl + 1;
    }
    if (start < part.length) rows.push(part.subarray(start));
  }
  return rows;
}

export class SpoolReplayer {
  private readonly spool: Spool;
  private readonly opts: Required<Pick<ReplayerOptions, 'lingerMs' | 'minBatchRows' | 'maxBatchRows' | 'maxBatchBytes' | 'backoffBaseMs' | 'backoffMaxMs'>>;
  private running: Promise<void> | null = null;
  private stopping = false;
  private fileSeq = 0;
  /** Ends the current sleep (stop). */
  private interrupt: (() => void) | null = null;
  /** Ends the current sleep when it waits for appends. */
  private appendWake: (() => void) | null = null;
  private firstPendingAt: number | undefined;
  private waiters: Array<{ target: number; resolve: () => void }> = [];
  private unsubscribe: (() => void) | null = null;
  private failingSince: number | undefined;

  constructor(private readonly o: ReplayerOptions) {
    this.spool = o.spool;
    this.opts = {
      lingerMs: o.lingerMs ?? 1_000,
      minBatchRows: o.minBatchRows ?? o.maxBatchRows ?? 100_000,
      maxBatchRows: o.maxBatchRows ?? 100_000,
      maxBatchBytes: o.maxBatchBytes ?? (o.memoryBudgetBytes !== undefined ? Math.max(1, Math.floor(o.memoryBudgetBytes / 3)) : 16 * 1024 * 1024),
      backoffBaseMs: o.backoffBaseMs ?? 200,
      backoffMaxMs: o.backoffMaxMs ?? 5_000,
    };
  }

  start(): void {
    if (this.running) return;
    this.stopping = false;
    this.unsubscribe = this.spool.onAppend(() => {
      this.firstPendingAt ??= Date.now();
      this.appendWake?.();
    });
    this.running = this.loop().finally(() => {
      this.running = null;
    });
  }

  /** Stops after the insert in progress (a failing one is not retried); the spool keeps the rest. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.interrupt?.();
    this.unsubscribe?.();
    await this.running;
    for (const w of this.waiters.splice(0)) w.resolve();
  }

  /** Resolves once everything durable in the spool now is in the store (tests, benchmarks, shutdown logs). */
  whenReplayed(): Promise<void> {
    const target = this.spool.appendedRecords;
    if (this.replayedUpTo(target)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ target, resolve }));
  }

  private replayedUpTo(appendedRecords: number): boolean {
    return this.spool.bytes === 0 || this.spool.replayedRecords >= appendedRecords;
  }

  private async loop(): Promise<void> {
    // What a previous run left has waited long enough: the first batch goes without lingering.
    let first = true;
    while (!this.stopping) {
      try {
        if (!first && !(await this.waitForWork())) break;
        first = false;
        const started = process.hrtime.bigint();
        const pendingBytes = this.spool.bytes;
        const batch = await this.spool.nextBatch({ maxRows: this.opts.maxBatchRows, maxBytes: this.opts.maxBatchBytes });
        // What is appended from now on waits for a full batch, or lingerMs from its first append.
        this.firstPendingAt = undefined;
        if (!batch) {
          this.firstPendingAt = undefined;
          this.settleWaiters();
          continue;
        }
        if (batch.resumed) {
          this.o.logger?.info({ records: batch.records.length }, 'replaying the drain batch that was being inserted when the service stopped');
        }
        await this.insert(batch.records, batch.tokenIds);
        if (this.o.afterInsert) await this.o.afterInsert(batch.records.map((r) => r.rowData).filter((d) => d.length > 0));
        passKillPoint('replay-insert');
        await this.spool.commit(batch);
        const lines = batch.records.reduce((n, r) => n + r.rows, 0);
        this.o.metrics?.replayedLines.inc(lines);
        this.o.metrics?.replayBatchLines.observe(lines);
        this.o.metrics?.replayBatchSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
        if (this.failingSince !== undefined) {
          this.o.logger?.info({ outageSeconds: Math.round((Date.now() - this.failingSince) / 1000), spoolBytes: this.spool.bytes }, 'store is back; replaying the drain spool');
          this.failingSince = undefined;
        }
        // Records the batch left behind (it was full: the store is behind) go at once. What arrived during the insert
        // waits for company like any append: one insert per full batch costs the store less than one per insert's
        // worth of arrivals (a part each, merged again later), and the store, not the linger, is what limits the rate.
        const leftBehind = pendingBytes - batch.records.reduce((n, r) => n + r.rowData.length + r.rejectData.length, 0);
        if (leftBehind > 0) this.firstPendingAt = 0;
        this.settleWaiters();
      } catch (err) {
        if (err instanceof Stopping || this.stopping) break;
        this.o.logger?.error({ err }, 'drain spool replay failed; retrying');
        await this.sleep(this.opts.backoffMaxMs);
      }
    }
  }

  private settleWaiters(): void {
    this.waiters = this.waiters.filter((w) => {
      if (!this.replayedUpTo(w.target)) return true;
      w.resolve();
      return false;
    });
  }

  /** Waits until there is something to insert and it is worth inserting now; false when stopping. */
  private async waitForWork(): Promise<boolean> {
    for (;;) {
      if (this.stopping) return false;
      if (this.spool.bytes > 0) {
        this.firstPendingAt ??= Date.now();
        const waited = Date.now() - this.firstPendingAt;
        if (this.spool.pendingRows >= this.opts.minBatchRows || this.spool.bytes >= this.opts.maxBatchBytes || waited >= this.opts.lingerMs) return true;
        await this.sleep(this.opts.lingerMs - waited, true);
        continue;
      }
      this.firstPendingAt = undefined;
      this.settleWaiters();
      await this.sleep(60_000, true);
    }
  }

  /** Sleeps; `wakeOnAppend` lets an append (or stop) cut it short. */
  private sleep(ms: number, wakeOnAppend = false): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.interrupt = null;
        this.appendWake = null;
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      this.interrupt = done;
      if (wakeOnAppend) this.appendWake = done;
    });
  }

  private async insert(records: SpoolRecord[], tokenIds?: string): Promise<void> {
    // The batch's first ids when a damaged file lost some of its records since (SpoolBatch.tokenIds).
    const ids = tokenIds ?? records.map((r) => r.id).join('\n');
    // One insert per row format (in practice there is one: the format of this version's mapLine).
    const groups = new Map<string, { format: RowFormat; parts: Buffer[] }>();
    for (const r of records) {
      if (r.rowData.length === 0) continue;
      const key = JSON.stringify(r.rowFormat);
      let group = groups.get(key);
      if (!group) groups.set(key, (group = { format: r.rowFormat, parts: [] }));
      group.parts.push(r.rowData);
    }
    for (const [key, group] of groups) {
      const table = this.o.table ?? LOGS_TABLE;
      const dedupToken = token(groups.size === 1 ? table : `${table}\n${key}`, ids);
      await this.insertParts(table, group.parts, dedupToken, group.format);
    }
    const rejects = records.filter((r) => r.rejectData.length > 0).map((r) => r.rejectData);
    if (rejects.length > 0) await this.insertParts(REJECTS_TABLE, rejects, token(REJECTS_TABLE, ids), JSON_ROWS);
  }

  /** Inserts until the store confirms: transient failures are retried with the same token, forever. */
  private async insertParts(table: string, parts: Buffer[], dedupToken: string, format: RowFormat): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.send(table, parts, dedupToken, format);
        return;
      } catch (err) {
        const kind = classifyStoreError(err);
        this.o.metrics?.replayFailures.inc({ kind });
        if (kind === 'data') {
          await this.isolate(table, parts, dedupToken, format, err);
          return;
        }
        if (this.stopping) throw new Stopping();
        this.failingSince ??= Date.now();
        // Exponential with equal jitter, as the batch writer's (instances replaying into one store spread out).
        const policy: RetryPolicy = { baseMs: this.opts.backoffBaseMs, maxMs: this.opts.backoffMaxMs, growth: 'exponential', jitter: 'equal' };
        const delayMs = retryCeilingMs(policy, attempt);
        if (attempt === 1 || attempt % 10 === 0) {
          this.o.logger?.warn(
            { table, attempt, delayMs, spoolBytes: this.spool.bytes, err: describeStoreError(err) },
            'store insert from the drain spool failed; the spool keeps the lines and the insert is retried with the same deduplication token',
          );
        }
        await this.sleep(retryDelayMs(policy, attempt));
        if (this.stopping) throw new Stopping();
      }
    }
  }

  /**
   * The store refused the batch as data (should not happen: rows are built by mapLine). Halve it until the
   * refused rows are alone, with tokens derived from the batch's so a replay repeats the same inserts.
   */
  private async isolate(table: string, parts: Buffer[], dedupToken: string, format: RowFormat, err: unknown): Promise<void> {
    const rows = splitRows(parts);
    if (rows.length <= 1) {
      const raw = rows[0]?.toString('utf8') ?? '';
      if (table === REJECTS_TABLE) {
        this.o.logger?.error({ table, bytes: raw.length, err: describeStoreError(err) }, 'ingest_rejects refused a drain reject row; it is lost');
        return;
      }
      this.o.logger?.warn({ table, err: describeStoreError(err) }, 'the store refused a drain row; kept in ingest_rejects');
      await this.o.writer.reject([{ source: `writer:${table}`, reason: `${describeStoreError(err)} (${format.format} row)`, raw }]);
      return;
    }
    const mid = Math.floor(rows.length / 2);
    const halves = [rows.slice(0, mid), rows.slice(mid)];
    for (const [i, half] of halves.entries()) {
      const withNewlines = half.flatMap((r) => [r, Buffer.from('\n')]);
      await this.insertParts(table, withNewlines, token(`${dedupToken}/${i}`, String(half.length)), format);
    }
  }

  private send(table: string, parts: Buffer[], dedupToken: string, format: RowFormat): Promise<void> {
    return insertEncoded(this.o.store, {
      table,
      columns: format.columns,
      format: format.format,
      parts,
      settings: {
        insert_deduplication_token: dedupToken,
        async_insert: 0,
        // A batch may hold lines of many days (one partition each); the default limit would fail it forever.
        max_partitions_per_insert_block: '0',
        // `logs` is a ReplacingMergeTree read with FINAL (sql/023): copies of a record collapse at the read and in
        // merges either way. Collapsing them again inside each inserted block cost the engine a third of its insert
        // CPU (450,000 drain rows in 45,000-row inserts: 2.6 CPU-s, 1.8 without).
        optimize_on_insert: 0,
      },
      infileDir: this.o.infileDir,
      fileTag: `replay-${++this.fileSeq}`,
    });
  }

}
