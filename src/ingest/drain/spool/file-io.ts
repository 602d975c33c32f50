// File helpers of the segment spool: positioned reads and writes that finish short I/O, zero fills, and the
// fsync of a directory (which makes a created, renamed or removed name durable).
import { open, type FileHandle } from 'node:fs/promises';

const ZEROS = Buffer.alloc(1024 * 1024);

export async function fsyncDir(dir: string): Promise<void> {
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

/** Zeros [from, to) of a file, in 1 MiB writes. */
export async function zeroRange(fh: FileHandle, from: number, to: number): Promise<void> {
  for (let at = from; at < to; at += ZEROS.length) {
    const n = Math.min(ZEROS.length, to - at);
    let done = 0;
    while (done < n) done += (await fh.write(ZEROS, 0, n - done, at + done)).bytesWritten;
  }
}

export function isZero(buf: Buffer): boolean {
  for (let i = 0; i < buf.length; i++) if (buf[i] !== 0) return false;
  return true;
}

export async function readExactly(fh: FileHandle, length: number, position: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await fh.read(buf, done, length - done, position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return done === length ? buf : buf.subarray(0, done);
}

export async function writeAll(fh: FileHandle, buffers: Buffer[], position: number): Promise<number> {
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

