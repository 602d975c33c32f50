// The drain's spool on segment files: append-only segments of framed records (record-frame.ts), a group
// commit (one fdatasync for every record appended while the previous sync ran), a replay state file that
// records what the store has confirmed (and the batch being inserted), and the index of delivered bodies
// (seen-index.ts, persisted in seen.log). Layout and recovery rules: ../README.md.
import { randomUUID } from 'node:crypto';
import { appendFile, mkdir, open, readdir, readFile, rename, rm, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { Logger } from '../../../log.js';
import { fsyncDir, isZero, readExactly, writeAll, zeroRange } from './file-io.js';
import { decodeFrame, encodeHead, FRAME_BYTES, parseMeta } from './record-frame.js';
import { passKillPoint } from './kill-points.js';
import { SeenIndex } from './seen-index.js';
import {
  SpoolFullError,
  type AppendResult,
  type Spool,
  type SpoolBatch,
  type SpoolOptions,
  type SpoolRecord,
  type SpoolRecordInput,
} from './spool.js';

/** A place in the spool: a segment's sequence number and a byte offset in it. */
export interface Position {
  segment: number;
  offset: number;
}

export function comparePositions(a: Position, b: Position): number {
  return a.segment - b.segment || a.offset - b.offset;
}

/** A record as read from a segment: where it starts and ends. */
export interface SegmentRecord extends SpoolRecord {
  start: Position;
  end: Position;
}

export interface ReplayPlan {
  from: Position;
  to: Position;
}

export class SpoolCorruptError extends Error {
  constructor(readonly position: Position, reason: string) {
    super(`spool segment ${position.segment} is corrupt at offset ${position.offset}: ${reason}`);
    this.name = 'SpoolCorruptError';
  }
}

export interface SegmentSpoolOptions extends SpoolOptions {
  /** A segment is closed for appends once it holds this many bytes. */
  segmentBytes?: number;
  /** fdatasync before acknowledging (tests of the framing may turn it off; the service never does). */
  sync?: boolean;
  /**
   * Write each segment's full size (zeros) before appending to it (default true). An append that does not grow
   * the file needs no journal commit, so its fdatasync does not wait for the store's own writes to the same
   * file system (ext4 orders them): p90 12 ms -> 1 ms measured while the store writes parts.
   */
  preallocate?: boolean;
}

const SEGMENT_NAME = /^(\d{12})\.seg$/;
const SPARE_NAME = 'spare.tmp';
const COPY_CHUNK_BYTES = 1024 * 1024;

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

function segmentName(seq: number): string {
  return `${String(seq).padStart(12, '0')}.seg`;
}

export class SegmentSpool implements Spool {
  private readonly dir: string;
  private readonly segmentsDir: string;
  private readonly stateFile: string;
  private readonly seenFile: string;
  readonly stagingDir: string;
  private readonly maxBytes: number;
  private readonly segmentBytes: number;
  readonly retryAfterSeconds: number;
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
  appendedRecords = 0;
  private recoveredRecords = 0;
  replayedRecords = 0;
  /** The batch handed out by nextBatch and not committed yet. */
  private current: { batch: SpoolBatch; to: Position; records: SegmentRecord[] } | null = null;

  private constructor(opts: SegmentSpoolOptions) {
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
  static async open(opts: SegmentSpoolOptions): Promise<SegmentSpool> {
    const spool = new SegmentSpool(opts);
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

  get committed(): Position {
    return { ...this.state.committed };
  }

  /** The batch that was being inserted when the process stopped, if any: replay exactly it first. */
  get inflight(): ReplayPlan | null {
    return this.state.inflight;
  }

  /** True when a record of `size` bytes would not fit (the request then gets 503 + Retry-After). */
  isFull(size = 0): boolean {
    return this.bytes + this.reservedBytes + size > this.maxBytes;
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
    const result = appended.then((): AppendResult => {
      this.seen.add(record.id, Date.now());
      return { status: 'appended' };
    });
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
        this.appendedRecords += group.length;
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
        passKillPoint('group-commit');
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
  async read(from: Position, limits: { maxRows: number; maxBytes: number; until?: Position }): Promise<{ records: SegmentRecord[]; from: Position; to: Position }> {
    let pos = { ...from };
    // Past the end of a closed segment: the next one.
    while (pos.segment < this.active.seq && pos.offset >= (this.sizes.get(pos.segment) ?? 0)) {
      const next = [...this.sizes.keys()].filter((s) => s > pos.segment).sort((a, b) => a - b)[0];
      if (next === undefined) break;
      pos = { segment: next, offset: 0 };
    }
    const start = { ...pos };
    const records: SegmentRecord[] = [];
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

  async nextBatch(limits: { maxRows: number; maxBytes: number }): Promise<SpoolBatch | null> {
    if (this.current) return this.current.batch;
    for (;;) {
      const plan = this.state.inflight;
      try {
        const read = plan
          ? await this.read(plan.from, { maxRows: Infinity, maxBytes: Infinity, until: plan.to })
          : await this.read(this.state.committed, limits);
        if (read.records.length === 0) {
          if (plan) await this.commitTo(plan.to, []);
          return null;
        }
        if (!plan) await this.savePlan({ from: read.from, to: read.to });
        const batch: SpoolBatch = { records: read.records, resumed: plan !== null };
        this.current = { batch, to: read.to, records: read.records };
        return batch;
      } catch (err) {
        if (!(err instanceof SpoolCorruptError)) throw err;
        // Data there cannot be framed any more: skip to the next segment, saying how much was lost.
        const lostBytes = await this.skipSegment(err.position.segment);
        this.logger?.error({ err: err.message, lostBytes }, 'drain spool segment is damaged; skipped the rest of it');
      }
    }
  }

  async commit(batch: SpoolBatch): Promise<void> {
    const current = this.current;
    if (!current || current.batch !== batch) throw new Error('spool: commit of a batch that is not the current one');
    await this.commitTo(current.to, current.records);
    this.current = null;
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
  async commitTo(to: Position, records: ReadonlyArray<Pick<SpoolRecord, 'id' | 'receivedAtMs' | 'rows'>>): Promise<void> {
    if (records.length > 0) {
      await appendFile(this.seenFile, records.map((r) => `${r.receivedAtMs} ${r.id}\n`).join(''));
      this.seenLinesWritten += records.length;
    }
    this.state = { committed: { ...to }, inflight: null };
    await this.writeState();
    for (const r of records) this.unreplayedRows -= r.rows;
    this.replayedRecords += records.length;
    await this.dropReplayedSegments();
    if (this.seenLinesWritten > 2 * this.dedupMaxEntries) await this.compactSeen();
  }

  /** Skips the rest of a corrupt segment (data there cannot be framed any more); returns the bytes lost. */
  private async skipSegment(segment: number): Promise<number> {
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
    passKillPoint('cleanup');
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
    this.appendedRecords = this.recoveredRecords;
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
        if (pos >= committedOffset) {
          this.unreplayedRows += meta.rows;
          this.recoveredRecords++;
        }
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
