// The drain's durable local spool: append-only segment files of framed records (length + CRC-32), a group
// commit (one fdatasync for every record appended while the previous sync ran), a replay state file that
// records what the store has confirmed (and the batch being inserted), and the index of delivered bodies.
// Layout and recovery rules: src/ingest/README.md.
import { randomUUID } from 'node:crypto';
import { appendFile, mkdir, open, readdir, readFile, rename, rm, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { Logger } from '../log.js';

/** A place in the spool: a segment's sequence number and a byte offset in it. */
export interface Position {
  segment: number;
  offset: number;
}

export function comparePositions(a: Position, b: Position): number {
  return a.segment - b.segment || a.offset - b.offset;
}

/** JSONEachRow rows as staged while the request streamed: an optional spilled file, then memory. */
export interface StagedData {
  count: number;
  bytes: number;
  /** CRC-32 of all the bytes, file part first. */
  crc: number;
  file: { path: string; bytes: number } | undefined;
  memory: Buffer[];
}

/** What one accepted request leaves in the spool. */
export interface SpoolRecordInput {
  /** The body's identity (sha256 hex of the decoded body): a redelivered body is not appended twice. */
  id: string;
  receivedAtMs: number;
  /** `logs` rows, in this ClickHouse input format (the columns as the writer chose them). */
  rowFormat: RowFormat;
  rows: StagedData;
  /** `ingest_rejects` rows. */
  rejects: StagedData;
}

/** How a record's rows are written: the ClickHouse format, and the column list for formats without names. */
export interface RowFormat {
  format: string;
  columns?: readonly string[];
}

/** A record read back for replay. */
export interface SpoolRecord {
  id: string;
  receivedAtMs: number;
  rowFormat: RowFormat;
  rows: number;
  rejects: number;
  /** logs rows, JSONEachRow (every line ends with \n). */
  rowData: Buffer;
  rejectData: Buffer;
  start: Position;
  end: Position;
}

export interface ReplayPlan {
  from: Position;
  to: Position;
}

export type AppendResult = { status: 'appended'; position: Position } | { status: 'duplicate' };

export class SpoolFullError extends Error {
  constructor(readonly spoolBytes: number, readonly maxBytes: number, readonly retryAfterSeconds: number) {
    super(`the log drain spool is full (${spoolBytes} of ${maxBytes} bytes waiting for the store); retry later`);
    this.name = 'SpoolFullError';
  }
}

export class SpoolCorruptError extends Error {
  constructor(readonly position: Position, reason: string) {
    super(`spool segment ${position.segment} is corrupt at offset ${position.offset}: ${reason}`);
    this.name = 'SpoolCorruptError';
  }
}

export interface SpoolOptions {
  dir: string;
  maxBytes: number;
  /** A segment is closed for appends once it holds this many bytes. */
  segmentBytes?: number;
  /** How long, and for how many bodies, a delivered body is recognised when it comes again. */
  dedupWindowMs?: number;
  dedupMaxEntries?: number;
  /** Retry-After of a 503 when the spool is full. */
  retryAfterSeconds?: number;
  /** fdatasync before acknowledging (tests of the framing may turn it off; the service never does). */
  sync?: boolean;
  /**
   * Write each segment's full size (zeros) before appending to it (default true). An append that does not grow
   * the file needs no journal commit, so its fdatasync does not wait for the store's own writes to the same
   * file system (ext4 orders them): p90 12 ms -> 1 ms measured while the store writes parts.
   */
  preallocate?: boolean;
  logger?: Logger;
}

const MAGIC = 0x54485331; // 'THS1'
const FRAME_BYTES = 24; // magic, meta length, data length, meta CRC, rows CRC, rejects CRC (u32 LE each)
const SEGMENT_NAME = /^(\d{12})\.seg$/;
const SPARE_NAME = 'spare.tmp';
const ZEROS = Buffer.alloc(1024 * 1024);
const COPY_CHUNK_BYTES = 1024 * 1024;

interface RecordMeta {
  id: string;
  at: number;
  rows: number;
  rowBytes: number;
  rejects: number;
  /** Row format (absent: JSONEachRow). */
  fmt?: RowFormat;
}

interface Pending {
  record: SpoolRecordInput;
  size: number;
  meta: Buffer;
  resolve: (p: Position) => void;
  reject: (err: unknown) => void;
}

interface ReplayState {
  committed: Position;
  inflight: ReplayPlan | null;
}

/** Bodies already spooled, by id, for a bounded time and count (insertion order = age order). */
class SeenIndex {
  private readonly entries = new Map<string, number>();
  constructor(private readonly windowMs: number, private readonly maxEntries: number) {}

  has(id: string, nowMs = Date.now()): boolean {
    const at = this.entries.get(id.slice(0, 32));
    return at !== undefined && nowMs - at <= this.windowMs;
  }

  add(id: string, atMs: number): void {
    const key = id.slice(0, 32);
    this.entries.delete(key);
    this.entries.set(key, atMs);
    this.evict(Date.now());
  }

  get size(): number {
    return this.entries.size;
  }

  entriesSince(): Iterable<[string, number]> {
    return this.entries.entries();
  }

  private evict(nowMs: number): void {
    for (const [key, at] of this.entries) {
      if (this.entries.size <= this.maxEntries && nowMs - at <= this.windowMs) break;
      this.entries.delete(key);
    }
  }
}

function segmentName(seq: number): string {
  return `${String(seq).padStart(12, '0')}.seg`;
}

async function fsyncDir(dir: string): Promise<void> {
  // Makes a created, renamed or removed file name durable. Not every platform can open a directory.
  let fh: FileHandle | undefined;
  try {
    fh = await open(dir, 'r');
    await fh.sync();
  } catch {
    // best effort
  } finally {
    await fh?.close().catch(() => undefined);
  }
}

/** A record's frame and meta, ready to write (CRCs cover the frame's lengths, the meta and the data). */
function encodeHead(record: SpoolRecordInput): { head: Buffer; size: number } {
  const meta = Buffer.from(
    JSON.stringify({
      id: record.id,
      at: record.receivedAtMs,
      rows: record.rows.count,
      rowBytes: record.rows.bytes,
      rejects: record.rejects.count,
      fmt: record.rowFormat,
    } satisfies RecordMeta),
  );
  const dataBytes = record.rows.bytes + record.rejects.bytes;
  const head = Buffer.allocUnsafe(FRAME_BYTES + meta.length);
  head.writeUInt32LE(MAGIC, 0);
  head.writeUInt32LE(meta.length, 4);
  head.writeUInt32LE(dataBytes, 8);
  head.writeUInt32LE(crc32(meta, crc32(head.subarray(0, 12))), 12);
  head.writeUInt32LE(record.rows.crc, 16);
  head.writeUInt32LE(record.rejects.crc, 20);
  meta.copy(head, FRAME_BYTES);
  return { head, size: head.length + dataBytes };
}

interface Frame {
  metaLength: number;
  dataLength: number;
  metaCrc: number;
  rowsCrc: number;
  rejectsCrc: number;
}

function decodeFrame(buf: Buffer): Frame | string {
  if (buf.length < FRAME_BYTES) return 'truncated frame';
  if (buf.readUInt32LE(0) !== MAGIC) return 'bad magic';
  return {
    metaLength: buf.readUInt32LE(4),
    dataLength: buf.readUInt32LE(8),
    metaCrc: buf.readUInt32LE(12),
    rowsCrc: buf.readUInt32LE(16),
    rejectsCrc: buf.readUInt32LE(20),
  };
}

function parseMeta(frameBytes: Buffer, metaBytes: Buffer, frame: Frame): RecordMeta | string {
  if (crc32(metaBytes, crc32(frameBytes.subarray(0, 12))) !== frame.metaCrc) return 'meta checksum mismatch';
  try {
    const meta = JSON.parse(metaBytes.toString('utf8')) as RecordMeta;
    if (typeof meta.id !== 'string' || !(meta.rowBytes >= 0) || meta.rowBytes > frame.dataLength) return 'bad meta';
    return meta;
  } catch {
    return 'meta is not JSON';
  }
}

/** Zeros [from, to) of a file, in 1 MiB writes. */
async function zeroRange(fh: FileHandle, from: number, to: number): Promise<void> {
  for (let at = from; at < to; at += ZEROS.length) {
    const n = Math.min(ZEROS.length, to - at);
    let done = 0;
    while (done < n) done += (await fh.write(ZEROS, 0, n - done, at + done)).bytesWritten;
  }
}

function isZero(buf: Buffer): boolean {
  for (let i = 0; i < buf.length; i++) if (buf[i] !== 0) return false;
  return true;
}

async function readExactly(fh: FileHandle, length: number, position: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await fh.read(buf, done, length - done, position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return done === length ? buf : buf.subarray(0, done);
}

async function writeAll(fh: FileHandle, buffers: Buffer[], position: number): Promise<number> {
  let written = 0;
  // writev takes at most IOV_MAX buffers per call on some systems; keep the calls small.
  for (let i = 0; i < buffers.length; i += 512) {
    const slice = buffers.slice(i, i + 512);
    const expected = slice.reduce((n, b) => n + b.length, 0);
    let { bytesWritten } = await fh.writev(slice, position + written);
    if (bytesWritten !== expected) {
      // A short write: finish it buffer by buffer.
      let skip = bytesWritten;
      for (const b of slice) {
        if (skip >= b.length) {
          skip -= b.length;
          continue;
        }
        const rest = b.subarray(skip);
        skip = 0;
        let off = 0;
        while (off < rest.length) {
          const r = await fh.write(rest, off, rest.length - off, position + written + bytesWritten);
          off += r.bytesWritten;
          bytesWritten += r.bytesWritten;
        }
      }
    }
    written += bytesWritten;
  }
  return written;
}

export class Spool {
  private readonly dir: string;
  private readonly segmentsDir: string;
  private readonly stateFile: string;
  private readonly seenFile: string;
  readonly stagingDir: string;
  private readonly maxBytes: number;
  private readonly segmentBytes: number;
  private readonly retryAfterSeconds: number;
  private readonly sync: boolean;
  private readonly preallocateBytes: number;
  private spare: Promise<boolean> | null = null;
  private readonly logger?: Logger;
  private readonly seen: SeenIndex;
  private seenLinesWritten = 0;
  private readonly dedupMaxEntries: number;

  /** Sizes of live segments (the active one: its durable size). */
  private readonly sizes = new Map<number, number>();
  private active!: { seq: number; fh: FileHandle; size: number };
  private readonly readers = new Map<number, FileHandle>();
  private state: ReplayState = { committed: { segment: 1, offset: 0 }, inflight: null };
  private queue: Pending[] = [];
  private pumping: Promise<void> | null = null;
  private reservedBytes = 0;
  private readonly inflightIds = new Map<string, Promise<AppendResult>>();
  private appendListeners: Array<() => void> = [];
  private unreplayedRows = 0;
  private closed = false;
  /** fdatasync calls made for appends (one per group commit). */
  syncs = 0;

  private constructor(opts: SpoolOptions) {
    this.dir = opts.dir;
    this.segmentsDir = join(opts.dir, 'segments');
    this.stagingDir = join(opts.dir, 'staging');
    this.stateFile = join(opts.dir, 'replay-state.json');
    this.seenFile = join(opts.dir, 'seen.log');
    this.maxBytes = opts.maxBytes;
    this.segmentBytes = opts.segmentBytes ?? 64 * 1024 * 1024;
    this.retryAfterSeconds = opts.retryAfterSeconds ?? 30;
    this.sync = opts.sync ?? true;
    this.preallocateBytes = opts.preallocate === false ? 0 : this.segmentBytes;
    this.logger = opts.logger;
    this.dedupMaxEntries = opts.dedupMaxEntries ?? 200_000;
    this.seen = new SeenIndex(opts.dedupWindowMs ?? 24 * 3_600_000, this.dedupMaxEntries);
  }

  /** Opens (creating or recovering) the spool in `dir`: a torn tail left by a crash is cut off. */
  static async open(opts: SpoolOptions): Promise<Spool> {
    const spool = new Spool(opts);
    await spool.recover(opts.dedupWindowMs ?? 24 * 3_600_000);
    return spool;
  }

  /** Bytes appended and not yet confirmed by the store. */
  get bytes(): number {
    let total = 0;
    for (const [seq, size] of this.sizes) if (seq >= this.state.committed.segment) total += size;
    return total - this.state.committed.offset;
  }

  /** Rows appended and not yet confirmed by the store. */
  get pendingRows(): number {
    return this.unreplayedRows;
  }

  get limitBytes(): number {
    return this.maxBytes;
  }

  /** Where durable data ends: nothing at or after it may be read. */
  get durableEnd(): Position {
    return { segment: this.active.seq, offset: this.sizes.get(this.active.seq) ?? 0 };
  }

  get committed(): Position {
    return { ...this.state.committed };
  }

  /** The batch that was being inserted when the process stopped, if any: replay exactly it first. */
  get inflight(): ReplayPlan | null {
    return this.state.inflight;
  }

  /** Whether a body was spooled (or is being spooled) within the dedup window. */
  isDuplicate(id: string): boolean {
    return this.seen.has(id) || this.inflightIds.has(id);
  }

  /** True when a record of `size` bytes would not fit (the request then gets 503 + Retry-After). */
  isFull(size = 0): boolean {
    return this.bytes + this.reservedBytes + size > this.maxBytes;
  }

  get retryAfter(): number {
    return this.retryAfterSeconds;
  }

  onAppend(listener: () => void): () => void {
    this.appendListeners.push(listener);
    return () => {
      this.appendListeners = this.appendListeners.filter((l) => l !== listener);
    };
  }

  /**
   * Appends a record and resolves once it is fsynced (group commit). A body already spooled within the
   * dedup window resolves as a duplicate without being written again; a concurrent copy waits for the
   * first one. Throws SpoolFullError when the record does not fit under the size limit.
   */
  append(record: SpoolRecordInput): Promise<AppendResult> {
    if (this.closed) return Promise.reject(new Error('the spool is closed'));
    if (this.seen.has(record.id)) return Promise.resolve({ status: 'duplicate' });
    const running = this.inflightIds.get(record.id);
    if (running) return running.then(() => ({ status: 'duplicate' }) as const);
    const { head, size } = encodeHead(record);
    if (this.isFull(size)) {
      return Promise.reject(new SpoolFullError(this.bytes + this.reservedBytes, this.maxBytes, this.retryAfterSeconds));
    }
    this.reservedBytes += size;
    const appended = new Promise<Position>((resolve, reject) => {
      this.queue.push({ record, size, meta: head, resolve, reject });
      this.pumping ??= this.pump();
    });
    const result = appended.then(
      (position): AppendResult => {
        this.seen.add(record.id, Date.now());
        return { status: 'appended', position };
      },
    );
    this.inflightIds.set(record.id, result);
    const forget = () => {
      this.inflightIds.delete(record.id);
    };
    result.then(forget, forget);
    return result;
  }

  /** Writes queued records, one fdatasync per group, until the queue is empty. */
  private async pump(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const group = this.queue.splice(0);
        const positions: Position[] = [];
        let rows = 0;
        try {
          // Segments roll between groups only, so a group's one fdatasync covers all of it.
          if (this.active.size >= this.segmentBytes) await this.roll();
          for (const p of group) {
            const start = this.active.size;
            await this.writeRecord(p, start);
            positions.push({ segment: this.active.seq, offset: start });
            this.active.size = start + p.size;
            rows += p.record.rows.count;
          }
          if (this.sync) await this.active.fh.datasync();
          this.syncs++;
        } catch (err) {
          // Nothing of this group is acknowledged: blank what it wrote, so no scan takes it for a record.
          const written = this.active.size;
          this.active.size = this.sizes.get(this.active.seq) ?? 0;
          await zeroRange(this.active.fh, this.active.size, written).catch(() => undefined);
          for (const p of group) {
            this.reservedBytes -= p.size;
            p.reject(err);
          }
          continue;
        }
        this.sizes.set(this.active.seq, this.active.size);
        this.unreplayedRows += rows;
        group.forEach((p, i) => {
          this.reservedBytes -= p.size;
          p.resolve(positions[i]);
        });
        for (const l of this.appendListeners) l();
      }
    } finally {
      this.pumping = null;
    }
  }

  private async writeRecord(p: Pending, position: number): Promise<void> {
    const { record } = p;
    let at = position;
    // Consecutive in-memory buffers go out in one writev; a spilled file is copied in between.
    let batch: Buffer[] = [p.meta];
    for (const part of [record.rows, record.rejects]) {
      if (part.file) {
        at += await writeAll(this.active.fh, batch, at);
        batch = [];
        at += await this.copyFile(part.file, at);
      }
      batch.push(...part.memory);
    }
    at += await writeAll(this.active.fh, batch, at);
    if (at - position !== p.size) throw new Error(`spool record written with ${at - position} bytes, expected ${p.size}`);
  }

  private async copyFile(file: { path: string; bytes: number }, position: number): Promise<number> {
    const src = await open(file.path, 'r');
    try {
      const chunk = Buffer.allocUnsafe(Math.min(COPY_CHUNK_BYTES, Math.max(1, file.bytes)));
      let copied = 0;
      while (copied < file.bytes) {
        const { bytesRead } = await src.read(chunk, 0, Math.min(chunk.length, file.bytes - copied), copied);
        if (bytesRead === 0) throw new Error(`staged file ${file.path} is shorter than recorded`);
        await writeAll(this.active.fh, [chunk.subarray(0, bytesRead)], position + copied);
        copied += bytesRead;
      }
      return copied;
    } finally {
      await src.close();
    }
  }

  private async roll(): Promise<void> {
    if (this.sync) await this.active.fh.datasync();
    this.sizes.set(this.active.seq, this.active.size);
    await this.active.fh.close();
    await this.openSegment(this.active.seq + 1);
  }

  /** Makes `seq` the active segment: the prepared spare renamed, or a new file (preallocated). */
  private async openSegment(seq: number): Promise<void> {
    const path = join(this.segmentsDir, segmentName(seq));
    const spareReady = this.spare ? await this.spare : false;
    this.spare = null;
    if (spareReady) {
      await rename(join(this.segmentsDir, SPARE_NAME), path);
    } else {
      const created = await open(path, 'wx');
      try {
        await zeroRange(created, 0, this.preallocateBytes);
        if (this.sync && this.preallocateBytes > 0) await created.datasync();
      } finally {
        await created.close();
      }
    }
    if (this.sync) await fsyncDir(this.segmentsDir);
    this.active = { seq, fh: await open(path, 'r+'), size: 0 };
    this.sizes.set(seq, 0);
    // The next segment is written out while this one fills.
    if (this.preallocateBytes > 0 && !this.closed) this.spare = this.prepareSpare();
  }

  private async prepareSpare(): Promise<boolean> {
    try {
      const fh = await open(join(this.segmentsDir, SPARE_NAME), 'w');
      try {
        await zeroRange(fh, 0, this.preallocateBytes);
        if (this.sync) await fh.datasync();
      } finally {
        await fh.close();
      }
      return true;
    } catch (err) {
      this.logger?.warn({ err: (err as Error).message }, 'spool: could not prepare the next segment; it will be created when needed');
      return false;
    }
  }

  /**
   * Reads durable records from `from`, within one segment, up to the limits (at least one record when there
   * is one). With `until`, reads exactly up to that position (replaying a persisted plan).
   */
  async read(from: Position, limits: { maxRows: number; maxBytes: number; until?: Position }): Promise<{ records: SpoolRecord[]; from: Position; to: Position }> {
    let pos = { ...from };
    // Past the end of a closed segment: the next one.
    while (pos.segment < this.active.seq && pos.offset >= (this.sizes.get(pos.segment) ?? 0)) {
      const next = [...this.sizes.keys()].filter((s) => s > pos.segment).sort((a, b) => a - b)[0];
      if (next === undefined) break;
      pos = { segment: next, offset: 0 };
    }
    const start = { ...pos };
    const records: SpoolRecord[] = [];
    let rows = 0;
    const end = limits.until && limits.until.segment === pos.segment ? limits.until.offset : (this.sizes.get(pos.segment) ?? 0);
    if (pos.offset >= end) return { records, from: start, to: pos };
    const fh = await this.reader(pos.segment);
    // One read for the whole batch (a record larger than the limit is read alone): a read per record would
    // wait in the event loop behind the requests once per record.
    const windowEnd = limits.until ? end : Math.min(end, pos.offset + Math.max(limits.maxBytes, FRAME_BYTES));
    let window = await readExactly(fh, windowEnd - pos.offset, pos.offset);
    let windowStart = pos.offset;
    while (pos.offset < end) {
      let at = pos.offset - windowStart;
      if (at + FRAME_BYTES > window.length) {
        if (records.length > 0) break;
        window = await readExactly(fh, Math.min(FRAME_BYTES, end - pos.offset), pos.offset);
        windowStart = pos.offset;
        at = 0;
      }
      const frameBytes = window.subarray(at, at + FRAME_BYTES);
      const frame = decodeFrame(frameBytes);
      if (typeof frame === 'string') throw new SpoolCorruptError(pos, frame);
      const size = FRAME_BYTES + frame.metaLength + frame.dataLength;
      if (pos.offset + size > end) throw new SpoolCorruptError(pos, 'record runs past the durable end');
      if (!limits.until && records.length > 0 && rows >= limits.maxRows) break;
      if (at + size > window.length) {
        if (records.length > 0) break; // the next batch starts with it
        window = await readExactly(fh, size, pos.offset);
        windowStart = pos.offset;
        at = 0;
        if (window.length !== size) throw new SpoolCorruptError(pos, 'short read');
      }
      const body = window.subarray(at + FRAME_BYTES, at + size);
      const meta = parseMeta(window.subarray(at, at + FRAME_BYTES), body.subarray(0, frame.metaLength), frame);
      if (typeof meta === 'string') throw new SpoolCorruptError(pos, meta);
      const data = body.subarray(frame.metaLength);
      const rowData = data.subarray(0, meta.rowBytes);
      const rejectData = data.subarray(meta.rowBytes);
      if (crc32(rowData) !== frame.rowsCrc || crc32(rejectData) !== frame.rejectsCrc) {
        throw new SpoolCorruptError(pos, 'data checksum mismatch');
      }
      const next = { segment: pos.segment, offset: pos.offset + size };
      records.push({
        id: meta.id,
        receivedAtMs: meta.at,
        rowFormat: meta.fmt ?? { format: 'JSONEachRow' },
        rows: meta.rows,
        rejects: meta.rejects,
        rowData,
        rejectData,
        start: pos,
        end: next,
      });
      rows += meta.rows;
      pos = next;
    }
    return { records, from: start, to: pos };
  }

  private async reader(seq: number): Promise<FileHandle> {
    let fh = this.readers.get(seq);
    if (!fh) {
      fh = await open(join(this.segmentsDir, segmentName(seq)), 'r');
      this.readers.set(seq, fh);
    }
    return fh;
  }

  /** Persists the batch about to be inserted, so a restart replays exactly it (same dedup token). */
  async savePlan(plan: ReplayPlan): Promise<void> {
    this.state = { committed: this.state.committed, inflight: plan };
    await this.writeState();
  }

  /**
   * The store confirmed everything before `to`: advance, remember the ids (dedup after the segment is gone),
   * and delete segments that are fully replayed.
   */
  async commit(to: Position, records: ReadonlyArray<Pick<SpoolRecord, 'id' | 'receivedAtMs' | 'rows'>>): Promise<void> {
    if (records.length > 0) {
      await appendFile(this.seenFile, records.map((r) => `${r.receivedAtMs} ${r.id}\n`).join(''));
      this.seenLinesWritten += records.length;
    }
    this.state = { committed: { ...to }, inflight: null };
    await this.writeState();
    for (const r of records) this.unreplayedRows -= r.rows;
    await this.dropReplayedSegments();
    if (this.seenLinesWritten > 2 * this.dedupMaxEntries) await this.compactSeen();
  }

  /** Skips the rest of a corrupt segment (data there cannot be framed any more); returns the bytes lost. */
  async skipSegment(segment: number): Promise<number> {
    const size = this.sizes.get(segment) ?? 0;
    const from = this.state.committed.segment === segment ? this.state.committed.offset : 0;
    if (segment === this.active.seq) await this.roll();
    this.state = { committed: { segment, offset: size }, inflight: null };
    await this.writeState();
    await this.dropReplayedSegments();
    return size - from;
  }

  private async dropReplayedSegments(): Promise<void> {
    const { committed } = this.state;
    const done = [...this.sizes.entries()]
      .filter(([seq, size]) => seq !== this.active.seq && (seq < committed.segment || (seq === committed.segment && committed.offset >= size)))
      .map(([seq]) => seq);
    if (done.length === 0) return;
    // The ids in these segments must outlive them: make seen.log durable first.
    if (this.sync) await this.fsyncFile(this.seenFile);
    for (const seq of done) {
      const fh = this.readers.get(seq);
      this.readers.delete(seq);
      await fh?.close().catch(() => undefined);
      await unlink(join(this.segmentsDir, segmentName(seq))).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
      this.sizes.delete(seq);
    }
    // Keep the committed position on a live segment, so `bytes` stays right.
    if (!this.sizes.has(committed.segment)) {
      const next = [...this.sizes.keys()].sort((a, b) => a - b)[0] ?? this.active.seq;
      this.state = { committed: { segment: next, offset: 0 }, inflight: this.state.inflight };
      await this.writeState();
    }
    if (this.sync) await fsyncDir(this.segmentsDir);
  }

  private async fsyncFile(path: string): Promise<void> {
    const fh = await open(path, 'r+').catch(() => undefined);
    if (!fh) return;
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  }

  private async writeState(): Promise<void> {
    const tmp = `${this.stateFile}.tmp`;
    const fh = await open(tmp, 'w');
    try {
      await fh.writeFile(JSON.stringify(this.state));
      if (this.sync) await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, this.stateFile);
    if (this.sync) await fsyncDir(this.dir);
  }

  private async compactSeen(): Promise<void> {
    const tmp = `${this.seenFile}.tmp`;
    const lines: string[] = [];
    for (const [key, at] of this.seen.entriesSince()) lines.push(`${at} ${key}\n`);
    const fh = await open(tmp, 'w');
    try {
      await fh.writeFile(lines.join(''));
      if (this.sync) await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, this.seenFile);
    this.seenLinesWritten = lines.length;
  }

  private async recover(dedupWindowMs: number): Promise<void> {
    await mkdir(this.segmentsDir, { recursive: true });
    await rm(this.stagingDir, { recursive: true, force: true });
    await mkdir(this.stagingDir, { recursive: true });

    await unlink(join(this.segmentsDir, SPARE_NAME)).catch(() => undefined);
    const saved = await readFile(this.stateFile, 'utf8').catch(() => undefined);
    let state: ReplayState | undefined;
    if (saved !== undefined) {
      try {
        state = JSON.parse(saved) as ReplayState;
      } catch {
        throw new Error(`${this.stateFile} is not valid JSON; move it away to replay the whole spool again`);
      }
    }

    const now = Date.now();
    const seenText = await readFile(this.seenFile, 'utf8').catch(() => '');
    for (const line of seenText.split('\n')) {
      const space = line.indexOf(' ');
      if (space <= 0) continue;
      const at = Number(line.slice(0, space));
      if (Number.isFinite(at) && now - at <= dedupWindowMs) this.seen.add(line.slice(space + 1), at);
    }

    const seqs = (await readdir(this.segmentsDir))
      .map((f) => SEGMENT_NAME.exec(f))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number(m[1]))
      .sort((a, b) => a - b);
    state ??= { committed: { segment: seqs[0] ?? 1, offset: 0 }, inflight: null };
    for (const seq of seqs) {
      if (seq < state.committed.segment) {
        // Replayed, but the process stopped before deleting it.
        await unlink(join(this.segmentsDir, segmentName(seq)));
        continue;
      }
      const last = seq === seqs[seqs.length - 1];
      const size = await this.scanSegment(seq, last, seq === state.committed.segment ? state.committed.offset : 0);
      this.sizes.set(seq, size);
    }
    // Segments of an earlier run stay as they are (sealed at their valid end); appends go to a new one.
    const lastSeq = seqs.filter((s) => this.sizes.has(s)).pop();
    const committedSize = this.sizes.get(state.committed.segment);
    if (committedSize !== undefined && state.committed.offset > committedSize) {
      this.logger?.error({ segment: state.committed.segment, committed: state.committed.offset, size: committedSize }, 'replay state is past the end of the spool; resetting it');
      state = { committed: { segment: state.committed.segment, offset: committedSize }, inflight: null };
    }
    if (lastSeq === undefined) state = { committed: { segment: Math.max(state.committed.segment, 1), offset: 0 }, inflight: null };
    await this.openSegment(lastSeq === undefined ? state.committed.segment : lastSeq + 1);
    if (state.inflight && state.inflight.to.offset > (this.sizes.get(state.inflight.to.segment) ?? -1)) {
      this.logger?.error({ plan: state.inflight }, 'the interrupted replay batch runs past the spool end; replaying from the committed position');
      state = { committed: state.committed, inflight: null };
    }
    this.state = state;
    await this.writeState();
    const bytes = this.bytes;
    if (bytes > 0) this.logger?.info({ bytes, rows: this.unreplayedRows, segments: this.sizes.size }, 'log drain spool holds lines not yet in the store; replaying');
  }

  /**
   * Walks a segment's records: ids into the dedup index, rows after the committed offset counted. The last
   * segment is checked in full (data CRC too): a record torn by a crash ends it (it was never acknowledged).
   * Zeros (the preallocated rest) end a segment too. Returns the segment's valid size.
   */
  private async scanSegment(seq: number, last: boolean, committedOffset: number): Promise<number> {
    const path = join(this.segmentsDir, segmentName(seq));
    const fh = await open(path, 'r');
    try {
      const { size } = await fh.stat();
      let pos = 0;
      let problem: string | undefined;
      while (pos < size) {
        const frameBytes = await readExactly(fh, FRAME_BYTES, pos);
        if (isZero(frameBytes)) break;
        const frame = decodeFrame(frameBytes);
        if (typeof frame === 'string') {
          problem = frame;
          break;
        }
        const total = FRAME_BYTES + frame.metaLength + frame.dataLength;
        if (pos + total > size) {
          problem = 'record runs past the end of the file';
          break;
        }
        const metaBytes = await readExactly(fh, frame.metaLength, pos + FRAME_BYTES);
        const meta = parseMeta(frameBytes, metaBytes, frame);
        if (typeof meta === 'string') {
          problem = meta;
          break;
        }
        if (last) {
          const data = await readExactly(fh, frame.dataLength, pos + FRAME_BYTES + frame.metaLength);
          if (crc32(data.subarray(0, meta.rowBytes)) !== frame.rowsCrc || crc32(data.subarray(meta.rowBytes)) !== frame.rejectsCrc) {
            problem = 'data checksum mismatch';
            break;
          }
        }
        this.seen.add(meta.id, meta.at);
        if (pos >= committedOffset) this.unreplayedRows += meta.rows;
        pos += total;
      }
      if (problem !== undefined) {
        this.logger?.warn(
          { segment: seq, validBytes: pos, problem },
          last ? 'spool: ignored a torn record at the end (written when the process stopped; never acknowledged)' : 'spool: segment is damaged; its tail cannot be replayed',
        );
      }
      return pos;
    } finally {
      await fh.close();
    }
  }

  /** A unique path for a request's spilled rows. */
  stagingPath(): string {
    return join(this.stagingDir, `${randomUUID()}.rows`);
  }

  /** Waits for queued appends, then closes the files. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.pumping) await this.pumping;
    if (this.spare) await this.spare;
    for (const fh of this.readers.values()) await fh.close().catch(() => undefined);
    this.readers.clear();
    await this.active.fh.close().catch(() => undefined);
  }
}
