// The drain's durable local queue as the request path and the replayer see it. The storage behind it lives in
// one file (see openSpool); nothing else knows how records are kept. Contract: README.md, "The spool".
import type { Registry } from 'prom-client';
import type { Logger } from '../../../log.js';

/** Rows as staged while the request streamed: an optional spilled file, then memory (stage-body.ts). */
export interface StagedData {
  count: number;
  bytes: number;
  /** CRC-32 of all the bytes, file part first. */
  crc: number;
  file: { path: string; bytes: number } | undefined;
  memory: Buffer[];
}

/** How a record's rows are written: the ClickHouse format, and the column list for formats without names. */
export interface RowFormat {
  format: string;
  columns?: readonly string[];
}

/** What one accepted request leaves in the spool. */
export interface SpoolRecordInput {
  /** The body's identity (sha256 hex of the decoded body): a redelivered body is not appended twice. */
  id: string;
  receivedAtMs: number;
  /** `logs` rows, in this ClickHouse input format. */
  rowFormat: RowFormat;
  rows: StagedData;
  /** `ingest_rejects` rows (JSONEachRow). */
  rejects: StagedData;
}

/** A record read back for replay. */
export interface SpoolRecord {
  id: string;
  receivedAtMs: number;
  rowFormat: RowFormat;
  rows: number;
  rejects: number;
  /** `logs` rows in `rowFormat` (every row ends with \n). */
  rowData: Buffer;
  /** `ingest_rejects` rows, JSONEachRow. */
  rejectData: Buffer;
}

/** The records of one insert, oldest first. The same records come back after a restart until committed. */
export interface SpoolBatch {
  records: SpoolRecord[];
  /** Saved by an earlier run that stopped before the store confirmed it: replay exactly it. */
  resumed: boolean;
  /**
   * The ids (newline-separated) of the records the batch held when it was first handed out, when they differ from
   * its records' now: a damaged file lost some of them (sqlite-spool.ts, recover). Its inserts take the tokens of
   * those ids, so a batch the store took before the damage is not stored again without the lost records.
   */
  tokenIds?: string;
}

export type AppendResult = { status: 'appended' } | { status: 'duplicate' };

export class SpoolFullError extends Error {
  constructor(readonly spoolBytes: number, readonly maxBytes: number, readonly retryAfterSeconds: number) {
    super(`the log drain spool is full (${spoolBytes} of ${maxBytes} bytes waiting for the store); retry later`);
    this.name = 'SpoolFullError';
  }
}

export interface SpoolOptions {
  dir: string;
  maxBytes: number;
  /** How long, and for how many bodies, a delivered body is recognised when it comes again. */
  dedupWindowMs?: number;
  dedupMaxEntries?: number;
  /** Retry-After of a 503 when the spool is full. */
  retryAfterSeconds?: number;
  logger?: Logger;
  /** Where a damaged spool is counted (tallyhouse_spool_damaged_total...); its label is `name` (default: the folder's name). */
  registry?: Registry;
  name?: string;
  /** Group commits on a thread of their own (default), so that waiting for the disk does not stop the event loop. */
  commitThread?: boolean;
}

export interface Spool {
  /** LOG_DRAIN_SPOOL_MAX_BYTES: appends beyond it are refused (SpoolFullError). */
  readonly limitBytes: number;
  readonly retryAfterSeconds: number;
  /** Where requests spill their rows while they stream (emptied on open). */
  readonly stagingDir: string;
  /** Bytes appended and not yet confirmed by the store. */
  readonly bytes: number;
  /** Rows appended and not yet confirmed by the store. */
  readonly pendingRows: number;
  /** Records appended since open, those found waiting at open included; and records committed since open. */
  readonly appendedRecords: number;
  readonly replayedRecords: number;
  /** True when a record of `size` more bytes would not fit. */
  isFull(size?: number): boolean;
  /**
   * Resolves once the record is durable (one commit for every record appended meanwhile). A body seen within
   * the dedup window resolves as a duplicate without being written; a concurrent copy waits for the first and
   * is a duplicate only if the first was appended. Rejects with SpoolFullError when it does not fit.
   */
  append(record: SpoolRecordInput): Promise<AppendResult>;
  /** Called after each commit of appends (the replayer wakes up). */
  onAppend(listener: () => void): () => void;
  /**
   * The next batch to insert, null when there is none: the batch an earlier run saved, else the oldest records
   * up to the limits (at least one), saved before they are returned so a restart replays exactly them.
   * One batch at a time: the next call after a commit.
   */
  nextBatch(limits: { maxRows: number; maxBytes: number }): Promise<SpoolBatch | null>;
  /** The store confirmed the batch: its records leave the spool. */
  commit(batch: SpoolBatch): Promise<void>;
  /** A unique path under stagingDir for a request's spilled rows. */
  stagingPath(): string;
  /** Waits for appends in progress, then closes. */
  close(): Promise<void>;
}
