// An empty spool file with the tables src/ingest/drain/spool/sqlite-spool.ts creates, in rollback-journal mode (so
// that a commit thread's own PRAGMAs are what turn on WAL), for tests that drive the commit thread or worker alone.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

const SCHEMA = `
CREATE TABLE records (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, received_at_ms INTEGER NOT NULL, row_format TEXT NOT NULL,
  rows INTEGER NOT NULL, rejects INTEGER NOT NULL, row_data BLOB NOT NULL, reject_data BLOB NOT NULL);
CREATE TABLE seen (id TEXT PRIMARY KEY, at_ms INTEGER NOT NULL) WITHOUT ROWID;`;

/** A new spool file (in a folder of its own under the system's temp folder, named from `prefix`) and its path. */
export function emptySpoolFile(prefix: string): string {
  const path = join(mkdtempSync(join(tmpdir(), `${prefix}-`)), 'spool.sqlite');
  const db = new Database(path);
  db.exec(SCHEMA);
  db.close();
  return path;
}
