// An empty spool file with the tables src/ingest/drain/spool/sqlite-spool.ts creates, in rollback-journal mode (so
// that a commit thread's own PRAGMAs are what turn on WAL), for tests that drive the commit thread or worker alone.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

/** The spool's tables as src/ingest/drain/spool/sqlite-spool.ts creates them, written out for tests. */
export const SPOOL_SCHEMA = `
CREATE TABLE records (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, received_at_ms INTEGER NOT NULL, row_format TEXT NOT NULL,
  rows INTEGER NOT NULL, rejects INTEGER NOT NULL, row_data BLOB NOT NULL, reject_data BLOB NOT NULL);
CREATE TABLE seen (id TEXT PRIMARY KEY, at_ms INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX seen_by_age ON seen (at_ms);
CREATE TABLE plan (one INTEGER PRIMARY KEY CHECK (one = 1), from_seq INTEGER NOT NULL, to_seq INTEGER NOT NULL);`;

/** A new spool file (in a folder of its own under the system's temp folder, named from `prefix`) and its path. */
export function emptySpoolFile(prefix: string): string {
  const path = join(mkdtempSync(join(tmpdir(), `${prefix}-`)), 'spool.sqlite');
  const db = new Database(path);
  db.exec(SPOOL_SCHEMA);
  db.close();
  return path;
}
