// The segment spool's record format: frame [magic 'THS1' | meta length | data length | CRC(frame lengths +
// meta) | CRC(rows) | CRC(rejects)] (u32 LE each), meta JSON, then the rows and the rejects.
import { crc32 } from 'node:zlib';
import type { RowFormat, SpoolRecordInput } from './spool.js';

export const MAGIC = 0x54485331; // 'THS1'
export const FRAME_BYTES = 24; // magic, meta length, data length, meta CRC, rows CRC, rejects CRC (u32 LE each)

export interface RecordMeta {
  id: string;
  at: number;
  rows: number;
  rowBytes: number;
  rejects: number;
  /** Row format (absent: JSONEachRow). */
  fmt?: RowFormat;
}

export interface Frame {
  metaLength: number;
  dataLength: number;
  metaCrc: number;
  rowsCrc: number;
  rejectsCrc: number;
}

/** A record's frame and meta, ready to write (CRCs cover the frame's lengths, the meta and the data). */
export function encodeHead(record: SpoolRecordInput): { head: Buffer; size: number } {
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


export function decodeFrame(buf: Buffer): Frame | string {
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

export function parseMeta(frameBytes: Buffer, metaBytes: Buffer, frame: Frame): RecordMeta | string {
  if (crc32(metaBytes, crc32(frameBytes.subarray(0, 12))) !== frame.metaCrc) return 'meta checksum mismatch';
  try {
    const meta = JSON.parse(metaBytes.toString('utf8')) as RecordMeta;
    if (typeof meta.id !== 'string' || !(meta.rowBytes >= 0) || meta.rowBytes > frame.dataLength) return 'bad meta';
    return meta;
  } catch {
    return 'meta is not JSON';
  }
}

