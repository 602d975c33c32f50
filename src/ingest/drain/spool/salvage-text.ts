// The drain's log rows still legible in a damaged spool file, read as bytes (issue 44.5): the salvage (salvage.ts)
// reads records through SQLite, and a record on a page SQLite cannot parse is lost to it, though its rows may sit on
// the page intact. A row is TabSeparated text of LOG_ROW_COLUMNS (src/collectors/log-line.ts), one line: the text
// escapes tabs and line breaks, so a run of bytes from a timestamp to a line break with exactly the columns' tabs,
// each checked for its form, is a whole row. A row is taken only when it lies within one page of the file (or one
// frame of its WAL): a row that runs on into an overflow page has that page's 4-byte pointer in it, so it is counted
// as cut and left out, never stored altered. Pages the spool had freed hold rows it replayed long ago: the caller
// stores only the rows the store lacks.
import { readFileSync, existsSync } from 'node:fs';
import { LOG_ROW_COLUMNS } from '../../../collectors/log-line.js';

const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
const WAL_HEADER_BYTES = 32;
const WAL_FRAME_HEADER_BYTES = 24;
const PAGE_SIZES = new Set([512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]);
const TIMESTAMP = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const COLUMNS = LOG_ROW_COLUMNS.length;
const COL = Object.fromEntries(LOG_ROW_COLUMNS.map((c, i) => [c, i])) as Record<(typeof LOG_ROW_COLUMNS)[number], number>;
/** A row's start: its timestamp and the tab after it (latin1 text, so an index is a byte offset). */
const ROW_START = /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\t/g;

export interface LegibleRows {
  /** Whole rows, each once, in the order found (the file's pages, then the WAL's frames). */
  rows: string[];
  /** Row starts that ran into the end of their page: cut, not stored. */
  cut: number;
}

/** The rows of LOG_ROW_COLUMNS legible in the spool file at `path` and its `-wal`. */
export function legibleLogRows(path: string): LegibleRows {
  const file = readFileSync(path);
  const wal = existsSync(`${path}-wal`) ? readFileSync(`${path}-wal`) : undefined;
  const pageSize = pageSizeOf(file, wal);
  const seen = new Set<string>();
  const out: LegibleRows = { rows: [], cut: 0 };
  const scan = (page: Buffer) => {
    const text = page.toString('latin1');
    ROW_START.lastIndex = 0;
    for (let m = ROW_START.exec(text); m; m = ROW_START.exec(text)) {
      const end = text.indexOf('\n', m.index);
      if (end < 0) {
        if (isRowPrefix(page.subarray(m.index).toString('latin1'))) out.cut++;
        break;
      }
      const row = page.subarray(m.index, end).toString('utf8');
      if (isLogRow(row)) {
        if (!seen.has(row)) {
          seen.add(row);
          out.rows.push(row);
        }
        ROW_START.lastIndex = end + 1;
      } else {
        ROW_START.lastIndex = m.index + 1;
      }
    }
  };
  for (let at = 0; at + pageSize <= file.length; at += pageSize) scan(file.subarray(at, at + pageSize));
  if (wal) {
    for (let at = WAL_HEADER_BYTES; at + WAL_FRAME_HEADER_BYTES + pageSize <= wal.length; at += WAL_FRAME_HEADER_BYTES + pageSize) {
      scan(wal.subarray(at + WAL_FRAME_HEADER_BYTES, at + WAL_FRAME_HEADER_BYTES + pageSize));
    }
  }
  return out;
}

/** A whole row: every column there, the typed ones in their form, no byte that is not UTF-8. */
export function isLogRow(row: string): boolean {
  if (row.includes('\uFFFD')) return false;
  const f = row.split('\t');
  return (
    f.length === COLUMNS &&
    TIMESTAMP.test(f[COL.timestamp]) &&
    TIMESTAMP.test(f[COL.received_at]) &&
    UUID.test(f[COL.batch_id]) &&
    /^[1-9]\d{0,9}$/.test(f[COL.line]) &&
    /^\{.*\}$/.test(f[COL.attributes])
  );
}

/** The start of a row, cut before its line break (fewer tabs than a row has). */
function isRowPrefix(text: string): boolean {
  return text.split('\t').length <= COLUMNS;
}

/** The page size the file's header names, else its WAL's, else SQLite's default. */
function pageSizeOf(file: Buffer, wal: Buffer | undefined): number {
  if (file.length >= 100 && file.subarray(0, 16).equals(SQLITE_MAGIC)) {
    const raw = file.readUInt16BE(16);
    const size = raw === 1 ? 65536 : raw;
    if (PAGE_SIZES.has(size)) return size;
  }
  if (wal && wal.length >= WAL_HEADER_BYTES) {
    const size = wal.readUInt32BE(8);
    if (PAGE_SIZES.has(size)) return size;
  }
  return 4096;
}
