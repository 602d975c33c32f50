// What can still be read from a damaged spool file, with what SQLite itself offers (CONTRIBUTING.md rule 16: no
// format of our own): the file and its WAL are copied to a scratch directory (the damaged ones stay as they are,
// as evidence) and opened there, so SQLite applies the WAL's committed frames. A header SQLite refuses ("file is not
// a database") is replaced by the header of a fresh SQLite file of the same page size (the WAL's header names it;
// otherwise each legal size is tried), which SQLite documents field by field: only the fields that describe the
// content (database size, freelist) are cleared, so SQLite takes the size from the file and leaks the free pages.
// Records are then read one at a time in seq order: a read that fails (a page SQLite cannot parse) skips to the
// first seq whose read passes the bad page and goes on, so one bad page costs the records on it, not the rest.
import { copyFileSync, existsSync, mkdirSync, openSync, readSync, closeSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite, type SqlDatabase } from './sqlite-db.js';

/** A `records` row as the spool keeps it. */
export interface SalvagedRecord {
  seq: number;
  id: string;
  received_at_ms: number;
  row_format: string;
  rows: number;
  rejects: number;
  row_data: Uint8Array;
  reject_data: Uint8Array;
}

export interface Salvage {
  records: SalvagedRecord[];
  /** The batch saved for the replayer, when it could be read. */
  plan: { from_seq: number; to_seq: number } | undefined;
  /** The ids of the saved batch's records (newline-separated, in seq order), when they could be read. */
  planIds?: string;
  /** Dedup entries that could be read (redeliveries of these bodies stay duplicates). */
  seen: Array<{ id: string; at_ms: number }>;
  /**
   * Records the file held that could not be read: the live seqs run from the replay watermark (`replayed`) to the
   * last seq given (`sqlite_sequence`), so every one of them not read was lost, the first and last included. When
   * either end cannot be read, the count covers the seqs between the first and last records read only: a lower
   * bound (`lostExact` false), and with nothing read at all, unknown.
   */
  lostRecords: number;
  /** lostRecords is the exact count (both ends of the live seqs were read), not a lower bound. */
  lostExact: boolean;
  /** The header was rebuilt before anything could be read. */
  headerRebuilt: boolean;
}

const HEADER_BYTES = 100;
const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
const PAGE_SIZES = [4096, 1024, 2048, 8192, 16384, 32768, 65536, 512];

/** Reads what it can of the damaged spool at `path` (with `path`-wal), working on copies under `scratchDir`. */
export function salvageSpool(path: string, scratchDir: string): Salvage {
  rmSync(scratchDir, { recursive: true, force: true });
  mkdirSync(scratchDir, { recursive: true, mode: 0o700 });
  const copy = join(scratchDir, 'salvage.sqlite');
  const empty: Salvage = { records: [], plan: undefined, seen: [], lostRecords: 0, lostExact: false, headerRebuilt: false };
  try {
    if (!existsSync(path)) return empty;
    copyFileSync(path, copy);
    if (existsSync(`${path}-wal`)) copyFileSync(`${path}-wal`, `${copy}-wal`);
    let headerRebuilt = false;
    let db = tryOpen(copy);
    if (!db) {
      for (const pageSize of pageSizeCandidates(copy)) {
        writeHeader(copy, freshHeader(scratchDir, pageSize));
        headerRebuilt = true;
        db = tryOpen(copy);
        if (db) break;
      }
    }
    if (!db) return { ...empty, headerRebuilt };
    try {
      const planIds = tryGet(() => db.prepare<[], { ids: string }>('SELECT ids FROM plan_ids WHERE one = 1').get()?.ids);
      return {
        ...readRecords(db),
        plan: tryGet(() => db.prepare<[], { from_seq: number; to_seq: number }>('SELECT from_seq, to_seq FROM plan WHERE one = 1').get()),
        ...(typeof planIds === 'string' ? { planIds } : {}),
        seen: readSeen(db),
        headerRebuilt,
      };
    } finally {
      db.close();
    }
  } finally {
    rmSync(scratchDir, { recursive: true, force: true });
  }
}

/** The database opened with its schema readable, or undefined. */
function tryOpen(path: string): SqlDatabase | undefined {
  let db: SqlDatabase | undefined;
  try {
    db = openSqlite(path);
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    return db;
  } catch {
    try {
      db?.close();
    } catch {
      // nothing more to do with a database that would not open
    }
    return undefined;
  }
}

function tryGet<T>(read: () => T): T | undefined {
  try {
    return read();
    // Stryker disable next-line BlockStatement: an empty catch returns undefined too
  } catch {
    return undefined;
  }
}

function readRecords(db: SqlDatabase): { records: SalvagedRecord[]; lostRecords: number; lostExact: boolean } {
  const records: SalvagedRecord[] = [];
  // `seq >= after + 1`, not `seq > after`: SQLite seeks the latter from `after`'s own leaf, the damaged one.
  const next = db.prepare<[number], SalvagedRecord>('SELECT * FROM records WHERE seq >= ? ORDER BY seq LIMIT 1');
  // The highest seq ever given (AUTOINCREMENT; no row: none given yet), undefined when it cannot be read.
  const sequence = tryGet(() => {
    const row = db.prepare<[], { seq: number }>("SELECT seq FROM sqlite_sequence WHERE name = 'records'").get();
    return row === undefined ? 0 : row.seq;
  });
  // Every seq up to this one was replayed into the store (sqlite-spool.ts writes it with each replay's delete).
  const through = tryGet(() => db.prepare<[], { through_seq: number }>('SELECT through_seq FROM replayed WHERE one = 1').get()?.through_seq);
  // The highest seq ever given, else the table's own maximum: where the scan may stop.
  const lastSeq =
    (sequence !== undefined && sequence > 0 ? sequence : undefined) ??
    // Stryker disable next-line OptionalChaining: an aggregate always returns its one row
    tryGet(() => db.prepare<[], { m: number | null }>('SELECT max(seq) AS m FROM records').get()?.m ?? undefined);
  let after = 0;
  let firstSeq: number | undefined;
  /** The first record at or after `from`; `failed` when the seek meets a page SQLite cannot parse. */
  const seek = (from: number): { failed: true } | { failed: false; row: SalvagedRecord | undefined } => {
    try {
      return { failed: false, row: next.get(from) };
    } catch {
      return { failed: true };
    }
  };
  for (;;) {
    if (lastSeq !== undefined && after >= lastSeq) break;
    let found = seek(after + 1);
    if (found.failed) {
      // The leaf holding the keys from after + 1 on is damaged. Seqs only grow (AUTOINCREMENT), so the live records
      // of a long-running spool start far above 1: stepping one seq at a time would give up long before the next
      // readable leaf. The first key whose seek passes the damage is found by doubling steps, then halving back.
      let bad = after + 1;
      let good: number | undefined;
      for (let step = 1; ; step *= 2) {
        const probe = lastSeq !== undefined ? Math.min(bad + step, lastSeq) : bad + step;
        if (probe <= bad || probe > Number.MAX_SAFE_INTEGER) break;
        const at = seek(probe);
        if (!at.failed) {
          good = probe;
          found = at;
          break;
        }
        bad = probe;
      }
      if (good === undefined) break;
      let hi: number = good;
      while (hi - bad > 1) {
        const mid: number = bad + Math.floor((hi - bad) / 2);
        const at = seek(mid);
        if (at.failed) bad = mid;
        else {
          hi = mid;
          found = at;
        }
      }
    }
    if (found.failed) break;
    const row = found.row;
    if (!row) break;
    after = row.seq;
    if (!wellFormed(row)) continue;
    firstSeq ??= row.seq;
    records.push(row);
  }
  // Live records are one run of seqs (appended at the end, replayed from the start): (through, sequence]. Every seq
  // of it not read was lost, the first records included (issue 44.5: a lost first record was "at least 0 lost").
  const inRun = records.every((r) => through !== undefined && sequence !== undefined && r.seq > through && r.seq <= sequence);
  if (through !== undefined && sequence !== undefined && sequence >= through && inRun) {
    return { records, lostRecords: sequence - through - records.length, lostExact: true };
  }
  // An end unreadable: what lies between the first and last records read, a lower bound.
  const span = records.length > 0 && lastSeq !== undefined ? lastSeq - (firstSeq ?? lastSeq) + 1 : records.length;
  return { records, lostRecords: Math.max(0, span - records.length), lostExact: false };
}

/** A row whose cells have the types the spool wrote (garbage can read back as other types). */
function wellFormed(r: SalvagedRecord): boolean {
  if (typeof r.id !== 'string' || r.id.length === 0 || r.id.length > 1024) return false;
  if (!Number.isSafeInteger(r.received_at_ms) || !Number.isSafeInteger(r.rows) || !Number.isSafeInteger(r.rejects)) return false;
  if (!(r.row_data instanceof Uint8Array) || !(r.reject_data instanceof Uint8Array)) return false;
  try {
    const format = JSON.parse(r.row_format) as { format?: unknown };
    return typeof format.format === 'string';
    // Stryker disable next-line BlockStatement: an empty catch returns undefined, which the caller reads as false too
  } catch {
    return false;
  }
}

function readSeen(db: SqlDatabase): Array<{ id: string; at_ms: number }> {
  const seen: Array<{ id: string; at_ms: number }> = [];
  try {
    for (const s of db.prepare<[], { id: string; at_ms: number }>('SELECT id, at_ms FROM seen').iterate()) {
      if (typeof s.id === 'string' && Number.isSafeInteger(s.at_ms)) seen.push(s);
    }
  } catch {
    // the rest of the index is unreadable: those bodies, redelivered, are stored again (logs collapse copies)
  }
  return seen;
}

/** The page size the WAL's header names (bytes 8-11), then every legal size, the default first. */
function pageSizeCandidates(path: string): number[] {
  const sizes = [...PAGE_SIZES];
  const wal = `${path}-wal`;
  if (existsSync(wal) && statSync(wal).size >= 32) {
    const head = readBytes(wal, 0, 32);
    const size = head.readUInt32BE(8);
    if (PAGE_SIZES.includes(size)) sizes.unshift(size);
  }
  const fileSize = statSync(path).size;
  return [...new Set(sizes)].filter((s) => fileSize % s === 0 || s === sizes[0]);
}

/** The 100-byte header of a fresh WAL-mode SQLite file of `pageSize`, its content fields cleared. */
function freshHeader(dir: string, pageSize: number): Buffer {
  const path = join(dir, `header-${pageSize}.sqlite`);
  rmSync(path, { force: true });
  const db = openSqlite(path);
  db.exec(`PRAGMA page_size = ${pageSize}; PRAGMA journal_mode = WAL; CREATE TABLE t (x INTEGER);`);
  db.close();
  const header = Buffer.from(readBytes(path, 0, HEADER_BYTES));
  // Stryker disable next-line ObjectLiteral,BooleanLiteral: the file was just written, so there is something to remove either way
  rmSync(path, { force: true });
  if (!header.subarray(0, 16).equals(SQLITE_MAGIC)) throw new Error('salvage: a fresh SQLite file has no SQLite header');
  header.writeUInt32BE(0, 28); // database size in pages: 0 = take it from the file size
  header.writeUInt32BE(0, 32); // first freelist trunk page: none (free pages are leaked, never read)
  header.writeUInt32BE(0, 36); // freelist pages
  return header;
}

function writeHeader(path: string, header: Buffer): void {
  const fd = openSync(path, 'r+');
  try {
    writeSync(fd, header, 0, header.length, 0);
  } finally {
    closeSync(fd);
  }
}

function readBytes(path: string, offset: number, length: number): Buffer {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(length);
    const n = readSync(fd, buf, 0, length, offset);
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}
