// Where a request's rows wait until its signature is verified: in memory while small, spilled to a file
// under the spool's staging directory past a per-request size or when all requests together hold too much.
// So a 32 MiB body costs at most `maxMemoryBytes` of memory, and many concurrent ones at most the budget.
import { open, unlink, type FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import type { StagedData } from './spool/spool.js';
import { passKillPoint } from './spool/kill-points.js';

/** Bytes of staged rows held in memory by all requests together. */
export class StagingBudget {
  used = 0;
  constructor(readonly limitBytes: number) {}
}

const SEAL_CHARS = 64 * 1024;

export class DataStage {
  private pending: string[] = [];
  private pendingChars = 0;
  private memory: Buffer[] = [];
  private memoryBytes = 0;
  private fh: FileHandle | undefined;
  private path: string | undefined;
  private fileBytes = 0;
  private crc = 0;
  count = 0;

  constructor(
    private readonly budget: StagingBudget,
    private readonly maxMemoryBytes: number,
    private readonly newPath: () => string,
  ) {}

  /** Adds one JSONEachRow row (without its newline). */
  add(row: string): void {
    this.pending.push(row);
    this.pendingChars += row.length + 1;
    this.count++;
    if (this.pendingChars >= SEAL_CHARS) this.seal();
  }

  /** Adds rows already sealed into one chunk (JSONEachRow or TSV lines, each ending with a newline). */
  addSealed(buf: Buffer, count: number): void {
    this.seal();
    this.count += count;
    this.crc = crc32(buf, this.crc);
    this.memory.push(buf);
    this.memoryBytes += buf.length;
    this.budget.used += buf.length;
  }

  /** Bytes staged so far (sealed parts; pending rows are at most SEAL_CHARS more). */
  get bytes(): number {
    return this.fileBytes + this.memoryBytes;
  }

  get shouldSpill(): boolean {
    return this.memoryBytes > this.maxMemoryBytes || (this.memoryBytes > 0 && this.budget.used > this.budget.limitBytes);
  }

  private seal(): void {
    if (this.pending.length === 0) return;
    const buf = Buffer.from(`${this.pending.join('\n')}\n`);
    this.pending = [];
    this.pendingChars = 0;
    this.crc = crc32(buf, this.crc);
    this.memory.push(buf);
    this.memoryBytes += buf.length;
    this.budget.used += buf.length;
  }

  /** Moves the rows held in memory to the staging file. */
  async spill(): Promise<void> {
    this.seal();
    if (this.memoryBytes === 0) return;
    if (!this.fh) {
      this.path = this.newPath();
      this.fh = await open(this.path, 'wx');
    }
    const buffers = this.memory;
    const bytes = this.memoryBytes;
    this.memory = [];
    this.memoryBytes = 0;
    this.budget.used -= bytes;
    let written = 0;
    while (written < bytes) {
      const { bytesWritten } = await this.fh.writev(written === 0 ? buffers : [Buffer.concat(buffers).subarray(written)], this.fileBytes + written);
      written += bytesWritten;
    }
    this.fileBytes += bytes;
    passKillPoint('spill');
  }

  /** Everything staged, for the spool append. The file (if any) stays until release(). */
  async finish(): Promise<StagedData> {
    this.seal();
    if (this.fh) {
      await this.fh.close();
      this.fh = undefined;
    }
    return {
      count: this.count,
      bytes: this.fileBytes + this.memoryBytes,
      crc: this.crc,
      file: this.path ? { path: this.path, bytes: this.fileBytes } : undefined,
      memory: this.memory,
    };
  }

  /** Frees the memory and deletes the staging file (after the append, or when the request fails). */
  async release(): Promise<void> {
    this.budget.used -= this.memoryBytes;
    this.memory = [];
    this.memoryBytes = 0;
    this.pending = [];
    this.pendingChars = 0;
    if (this.fh) {
      await this.fh.close().catch(() => undefined);
      this.fh = undefined;
    }
    if (this.path) {
      await unlink(this.path).catch(() => undefined);
      this.path = undefined;
    }
  }
}
