import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import type { Registry } from 'prom-client';
import { counter, gauge, histogram } from '../metrics.js';
import type { Store } from './client.js';
import type { Logger } from '../log.js';
import { classifyStoreError, describeStoreError, storeErrorCode } from './errors.js';
import { insertEncoded } from './insert.js';
import type { z } from 'zod';
import type { TableDef } from './tables/table.js';
import { retryCeilingMs, retryDelayMs, type RetryPolicy } from '../retry.js';

export interface WriterOptions {
  /** Flush a table's buffer when it holds this many rows... */
  maxRows?: number;
  /** ...or this many bytes of serialized rows... */
  maxBytes?: number;
  /** ...or when its oldest row has waited this long. */
  flushIntervalMs?: number;
  /** Above this many buffered bytes (all tables), insert() waits for flushes: memory stays bounded. */
  maxBufferedBytes?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /**
   * Attempts of a batch that fails transiently (a full disk, an unreachable server) before the failure is the
   * caller's: a one-shot command ends with it instead of retrying for ever. Unset: retried until it lands (the
   * service: the store comes back, and the drain's spool holds what waits).
   */
  maxTransientAttempts?: number;
  /**
   * Embedded store only: a directory for batch files the engine reads itself (`INSERT ... FROM INFILE`), which
   * chDB parses several times faster than rows handed through the client, and without copying the batch into
   * the statement text. Unset: every batch goes through the client.
   */
  infileDir?: string;
  logger?: Logger;
  registry?: Registry;
}

export interface WriteResult {
  written: number;
  rejected: number;
}

/** The dead-letter table: rows that cannot be written land here with the reason, never nowhere. */
export const REJECTS_TABLE = 'ingest_rejects';
export const MAX_REJECT_RAW_BYTES = 64 * 1024;

export interface RejectRow {
  source: string;
  reason: string;
  raw: string;
  line?: number | null;
  batch_id?: string;
}

interface Entry {
  /** The rows as lines, or [] when they came encoded. */
  lines: string[];
  /** The rows already encoded: newline-terminated lines, as insertEncodedLines() takes them; null for lines. */
  encoded: Buffer[] | null;
  rows: number;
  bytes: number;
  written: number;
  rejected: number;
  pendingLines: number;
  resolve: (r: WriteResult) => void;
  reject: (e: unknown) => void;
}

interface Line {
  text: string;
  entry: Entry;
}

interface TableBuffer {
  table: string;
  entries: Entry[];
  rows: number;
  bytes: number;
  oldestAt: number;
  flushing: Promise<void> | null;
}

const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * One batch writer for every table (CONTRIBUTING.md rule 6): a buffer per table, flushed at a row or byte
 * limit, on an interval, and on close; transient failures retried with the same deduplication token
 * (so a batch that landed before its answer was lost is not doubled); rows ClickHouse refuses are
 * isolated by bisection and go to `ingest_rejects` with the reason. `insert()` resolves once its rows
 * are committed, so a caller may save a checkpoint after awaiting it.
 */
export class BatchWriter {
  private readonly buffers = new Map<string, TableBuffer>();
  private readonly maxRows: number;
  private readonly maxBytes: number;
  private readonly flushIntervalMs: number;
  private readonly maxBufferedBytes: number;
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private readonly logger?: Logger;
  private readonly timer: NodeJS.Timeout;
  private bufferedBytes = 0;
  private spaceWaiters: Array<() => void> = [];
  private closed = false;
  private readonly metrics: ReturnType<typeof createWriterMetrics>;
  private readonly infileDir: string | undefined;
  private infileSeq = 0;

  private readonly maxTransientAttempts: number | undefined;
  constructor(private readonly store: Store, opts: WriterOptions = {}) {
    this.maxRows = opts.maxRows ?? 50_000;
    this.maxBytes = opts.maxBytes ?? 16 * 1024 * 1024;
    this.flushIntervalMs = opts.flushIntervalMs ?? 1_000;
    this.maxBufferedBytes = opts.maxBufferedBytes ?? Math.max(this.maxBytes * 4, 64 * 1024 * 1024);
    this.backoffBaseMs = opts.backoffBaseMs ?? 200;
    this.backoffMaxMs = opts.backoffMaxMs ?? 10_000;
    this.maxTransientAttempts = opts.maxTransientAttempts;
    this.logger = opts.logger;
    this.infileDir = store.mode === 'embedded' ? opts.infileDir : undefined;
    if (this.infileDir) mkdirSync(this.infileDir, { recursive: true });
    this.metrics = createWriterMetrics(opts.registry);
    this.timer = setInterval(() => this.flushDue(), Math.max(10, Math.floor(this.flushIntervalMs / 2)));
    this.timer.unref();
  }

  /**
   * Buffers rows for `table`; resolves when all of them are in the store (or in ingest_rejects). The table's
   * definition carries its row type, so rows of another table do not compile (CONTRIBUTING.md rule 13).
   */
  insert<S extends z.ZodObject>(table: TableDef<S>, rows: ReadonlyArray<z.input<S>>): Promise<WriteResult> {
    const lines = rows.map((r) => JSON.stringify(r));
    return this.enqueue(table.name, lines, null, lines.length);
  }

  /** Like insert(), for rows already serialized as JSONEachRow lines of `table`. */
  insertLines(table: TableDef<z.ZodObject>, lines: string[]): Promise<WriteResult> {
    return this.enqueue(table.name, lines, null, lines.length);
  }

  /**
   * Like insertLines(), for `rows` JSONEachRow lines of `table` already encoded (UTF-8), each line ending in a
   * newline; a chunk holds whole lines. They go to the store as they are (no join, no second encoding), and are
   * split into lines only if the store refuses the batch for its data (to isolate the bad row).
   */
  insertEncodedLines(table: TableDef<z.ZodObject>, chunks: Buffer[], rows: number): Promise<WriteResult> {
    // Stryker disable next-line ArrayDeclaration: the lines of an encoded entry are never read (its bytes and, on a refusal, its lines come from the chunks)
    return this.enqueue(table.name, [], chunks, rows);
  }

  private async enqueue(table: string, lines: string[], encoded: Buffer[] | null, rows: number): Promise<WriteResult> {
    if (this.closed) throw new Error(`the writer is closed; ${rows} rows for ${table} were not accepted`);
    if (!TABLE_NAME.test(table)) throw new Error(`invalid table name ${JSON.stringify(table)}`);
    if (rows === 0) return { written: 0, rejected: 0 };
    while (this.bufferedBytes >= this.maxBufferedBytes) {
      await new Promise<void>((r) => this.spaceWaiters.push(r));
    }
    let bytes = 0;
    if (encoded) for (const c of encoded) bytes += c.length;
    else for (const l of lines) bytes += l.length + 1;
    const buffer = this.bufferFor(table);
    const committed = new Promise<WriteResult>((resolve, reject) => {
      if (buffer.rows === 0) buffer.oldestAt = Date.now();
      buffer.entries.push({ lines, encoded, rows, bytes, written: 0, rejected: 0, pendingLines: rows, resolve, reject });
      buffer.rows += rows;
      buffer.bytes += bytes;
      this.bufferedBytes += bytes;
      this.metrics.buffered.inc({ table }, rows);
      if (buffer.rows >= this.maxRows || buffer.bytes >= this.maxBytes) void this.flushTable(buffer);
    });
    // Callers commonly flush before awaiting their rows; a batch the store refuses meanwhile must fail the caller
    // when it awaits, not the process (an unhandled rejection ends Node). The refusal is logged either way.
    committed.catch(() => undefined);
    return committed;
  }

  /** Records rows that could not be ingested in the dead-letter table. */
  reject(rows: readonly RejectRow[]): Promise<WriteResult> {
    const lines = rows.map((r) => JSON.stringify(toRejectRecord(r)));
    return this.enqueue(REJECTS_TABLE, lines, null, lines.length);
  }

  /** Flushes now (one table, or all) and waits until every row handed in before the call is committed. */
  async flush(which?: TableDef<z.ZodObject> | typeof REJECTS_TABLE): Promise<void> {
    const table = typeof which === 'object' ? which.name : which;
    const buffers = table === undefined ? [...this.buffers.values()] : [this.buffers.get(table)].filter((b) => b !== undefined);
    await Promise.all(buffers.map((b) => this.drain(b)));
  }

  /** Flushes and stops the timer. Rows handed in after close() are refused. */
  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    clearInterval(this.timer);
  }

  /** Rows waiting in memory, per table (for /readyz and shutdown logs). */
  pending(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const b of this.buffers.values()) if (b.rows > 0) out[b.table] = b.rows;
    return out;
  }

  private bufferFor(table: string): TableBuffer {
    let b = this.buffers.get(table);
    if (!b) {
      b = { table, entries: [], rows: 0, bytes: 0, oldestAt: 0, flushing: null };
      this.buffers.set(table, b);
    }
    return b;
  }

  private flushDue(): void {
    const now = Date.now();
    for (const b of this.buffers.values()) {
      if (b.rows > 0 && !b.flushing && now - b.oldestAt >= this.flushIntervalMs) void this.flushTable(b);
    }
  }

  /** Flushes until the buffer is empty. */
  private async drain(buffer: TableBuffer): Promise<void> {
    while (buffer.rows > 0 || buffer.flushing) {
      await this.flushTable(buffer);
    }
  }

  /** One flush at a time per table, so a table's batches land in the order they were handed in. */
  private flushTable(buffer: TableBuffer): Promise<void> {
    if (buffer.flushing) return buffer.flushing;
    if (buffer.rows === 0) return Promise.resolve();
    const run = (async () => {
      try {
        while (buffer.rows > 0) {
          const entries = this.takeBatch(buffer);
          await this.writeBatch(buffer.table, entries);
        }
      } finally {
        buffer.flushing = null;
      }
    })();
    buffer.flushing = run;
    return run;
  }

  private takeBatch(buffer: TableBuffer): Entry[] {
    const taken: Entry[] = [];
    let rows = 0;
    let bytes = 0;
    while (buffer.entries.length > 0) {
      const next = buffer.entries[0];
      if (taken.length > 0 && (rows + next.rows > this.maxRows || bytes + next.bytes > this.maxBytes)) break;
      buffer.entries.shift();
      taken.push(next);
      rows += next.rows;
      bytes += next.bytes;
    }
    buffer.rows -= rows;
    buffer.bytes -= bytes;
    buffer.oldestAt = Date.now();
    return taken;
  }

  private async writeBatch(table: string, entries: Entry[]): Promise<void> {
    let rows = 0;
    let bytes = 0;
    for (const entry of entries) {
      rows += entry.rows;
      bytes += entry.bytes;
    }
    try {
      await this.writeEntries(table, entries, rows);
    } catch (err) {
      // A store that refuses the statement itself (a missing table, a read-only user: 'permanent' errors) or a
      // programming error: the callers learn it; transient failures are retried and bad rows dead-lettered.
      for (const e of entries) e.reject(err);
    } finally {
      this.bufferedBytes -= bytes;
      this.metrics.buffered.dec({ table }, rows);
      // Stryker disable next-line BlockStatement: only lets the collector have the rows; nothing reads an entry once its batch is settled
      for (const entry of entries) {
        // Stryker disable next-line ArrayDeclaration: only lets the collector have the rows; nothing reads an entry once its batch is settled
        entry.lines = [];
        entry.encoded = null;
      }
      const waiters = this.spaceWaiters;
      this.spaceWaiters = [];
      for (const w of waiters) w();
    }
  }

  /**
   * A whole batch in one insert, its rows sent as they were handed in (encoded chunks as they are, lines joined
   * once per entry): no per-row objects and one encoding on the way to the store. Only when the store refuses the
   * data are the rows split into lines, for writeLines to isolate the bad one.
   */
  private async writeEntries(table: string, entries: Entry[], rows: number): Promise<void> {
    const parts: Buffer[] = [];
    for (const e of entries) {
      if (e.encoded) parts.push(...e.encoded);
      else parts.push(Buffer.from(`${e.lines.join('\n')}\n`));
    }
    const refusal = await this.sendWithRetry(table, parts, rows);
    if (refusal === null) {
      for (const e of entries) this.settle(e, 'written', e.rows);
      return;
    }
    const lines: Line[] = [];
    for (const e of entries) for (const text of e.encoded ? splitLines(e.encoded) : e.lines) lines.push({ text, entry: e });
    await this.isolate(table, lines, refusal, 'written');
  }

  /**
   * Writes lines, retrying transient failures with the same token until they land. A data error
   * splits the batch in two, so one bad row is isolated and its neighbours are written.
   */
  // Stryker disable next-line StringLiteral: every call passes its outcome; the default is never used
  private async writeLines(table: string, lines: Line[], outcome: 'written' | 'rejected' = 'written'): Promise<void> {
    const refusal = await this.sendWithRetry(table, [Buffer.from(`${lines.map((l) => l.text).join('\n')}\n`)], lines.length);
    if (refusal === null) {
      for (const l of lines) this.settle(l.entry, outcome, 1);
      return;
    }
    await this.isolate(table, lines, refusal, outcome);
  }

  /** Rows the store refused for their data: halves until the bad row is alone, then it goes to ingest_rejects. */
  private async isolate(table: string, lines: Line[], refusal: unknown, outcome: 'written' | 'rejected'): Promise<void> {
    if (lines.length > 1) {
      const mid = Math.floor(lines.length / 2);
      await this.writeLines(table, lines.slice(0, mid), outcome);
      await this.writeLines(table, lines.slice(mid), outcome);
      return;
    }
    await this.deadLetter(table, lines[0], refusal);
  }

  /**
   * Sends one batch, retrying transient failures with the same token until it lands: null once it is committed,
   * or the error of a store that refused its data. A statement the store refuses ('permanent') throws.
   */
  private async sendWithRetry(table: string, parts: Buffer[], rows: number): Promise<unknown> {
    const hash = createHash('sha256').update(table).update('\n');
    for (const p of parts) hash.update(p);
    const token = hash.digest('hex');
    for (let attempt = 1; ; attempt++) {
      const started = process.hrtime.bigint();
      try {
        await this.send(table, parts, token);
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        this.metrics.flushSeconds.observe({ table }, seconds);
        this.metrics.batches.inc({ table });
        this.metrics.batchRows.observe({ table }, rows);
        this.metrics.rowsWritten.inc({ table }, rows);
        return null;
      } catch (err) {
        const kind = classifyStoreError(err);
        this.metrics.failures.inc({ table, kind });
        if (kind === 'transient' && this.maxTransientAttempts !== undefined && attempt >= this.maxTransientAttempts) {
          this.logger?.error({ table, rows, attempt, err: storeErrorCode(err) }, `store write failed ${attempt} times; giving up on this batch`);
          throw err;
        }
        if (kind === 'transient') {
          // Exponential with equal jitter: instances retrying one store spread out, never sooner than half the wait.
          const policy: RetryPolicy = { baseMs: this.backoffBaseMs, maxMs: this.backoffMaxMs, growth: 'exponential', jitter: 'equal' };
          const delayMs = retryCeilingMs(policy, attempt);
          this.logger?.warn(
            { table, rows, attempt, delayMs, err: storeErrorCode(err) },
            'store write failed; retrying with the same deduplication token',
          );
          await sleep(retryDelayMs(policy, attempt));
          continue;
        }
        if (kind === 'permanent') {
          // Retrying cannot help and the rows are not at fault: fail the batch back to its callers.
          this.logger?.error({ table, rows, err: storeErrorCode(err) }, 'store refused the batch; it is not retried');
          throw err;
        }
        return err;
      }
    }
  }

  private async deadLetter(table: string, line: Line, err: unknown): Promise<void> {
    this.metrics.rowsRejected.inc({ table });
    this.logger?.warn({ table, err: storeErrorCode(err) }, 'row refused by the store; kept in ingest_rejects');
    if (table === REJECTS_TABLE) {
      // The dead-letter table itself refused a row: nothing left to put it in but the log.
      this.logger?.error({ table, bytes: line.text.length }, 'ingest_rejects refused a row; it is lost');
      // Stryker disable next-line StringLiteral: settle() counts every outcome but 'written' as rejected
      this.settle(line.entry, 'rejected', 1);
      return;
    }
    const record = toRejectRecord({
      source: `writer:${table}`,
      reason: describeStoreError(err),
      raw: line.text,
    });
    // Stryker disable next-line StringLiteral: settle() counts every outcome but 'written' as rejected
    await this.writeLines(REJECTS_TABLE, [{ text: JSON.stringify(record), entry: line.entry }], 'rejected');
  }

  private settle(entry: Entry, outcome: 'written' | 'rejected', rows: number): void {
    if (outcome === 'written') entry.written += rows;
    else entry.rejected += rows;
    entry.pendingLines -= rows;
    if (entry.pendingLines === 0) queueMicrotask(() => entry.resolve({ written: entry.written, rejected: entry.rejected }));
  }

  private send(table: string, parts: Buffer[], token: string): Promise<void> {
    return insertEncoded(this.store, {
      table,
      format: 'JSONEachRow',
      parts,
      // input_format_parallel_parsing: 0: one thread parses the batch. A batch is at most maxBytes (16 MiB), where
      // splitting it across parser threads costs more CPU than it saves (10,000 requests rows into chDB: 2.99 -> 2.48
      // CPU-us a row, 39.6 -> 28.1 ms a batch), and the collector shares its cores with the store.
      settings: { insert_deduplication_token: token, async_insert: 0, input_format_parallel_parsing: 0 },
      infileDir: this.infileDir,
      // Stryker disable next-line UpdateOperator: the tag only has to differ from this writer's other batch files; counting down does as well
      fileTag: String(++this.infileSeq),
    });
  }
}

/** Encoded newline-terminated lines back into lines (JSON escapes a newline inside a value, so none splits a row). */
function splitLines(chunks: Buffer[]): string[] {
  const lines = Buffer.concat(chunks).toString('utf8').split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

function toRejectRecord(row: RejectRow): Record<string, unknown> {
  return {
    source: row.source,
    reason: row.reason.slice(0, 4096),
    raw: truncateUtf8(row.raw, MAX_REJECT_RAW_BYTES),
    line: row.line ?? null,
    batch_id: row.batch_id ?? '',
  };
}

export function truncateUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  const buf = Buffer.from(text).subarray(0, maxBytes);
  // Drop a trailing partial character rather than storing an invalid sequence.
  return buf.toString('utf8').replace(/\uFFFD$/, '');
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function createWriterMetrics(registry?: Registry) {
  return {
    rowsWritten: counter(registry, {
      name: 'tallyhouse_writer_rows_written_total',
      help: 'Rows committed to the store by the batch writer.',
      labelNames: ['table'],
    }),
    rowsRejected: counter(registry, {
      name: 'tallyhouse_writer_rows_rejected_total',
      help: 'Rows the store refused, moved to ingest_rejects.',
      labelNames: ['table'],
    }),
    batches: counter(registry, {
      name: 'tallyhouse_writer_batches_total',
      help: 'Batches committed to the store.',
      labelNames: ['table'],
    }),
    failures: counter(registry, {
      name: 'tallyhouse_writer_flush_failures_total',
      help: 'Failed batch inserts, by kind (transient: retried; data: bisected and dead-lettered).',
      labelNames: ['table', 'kind'],
    }),
    flushSeconds: histogram(registry, {
      name: 'tallyhouse_writer_flush_duration_seconds',
      help: 'Time to commit one batch to the store.',
      labelNames: ['table'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    }),
    batchRows: histogram(registry, {
      name: 'tallyhouse_writer_batch_rows',
      help: 'Rows per committed batch.',
      labelNames: ['table'],
      buckets: [1, 10, 100, 1000, 10_000, 50_000, 100_000],
    }),
    buffered: gauge(registry, {
      name: 'tallyhouse_writer_buffered_rows',
      help: 'Rows waiting in the writer buffers.',
      labelNames: ['table'],
    }),
  };
}
