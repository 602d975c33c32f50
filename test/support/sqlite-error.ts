// What the spool's SQLite driver puts on an error it raises (src/ingest/drain/spool/sqlite-db.ts: node:sqlite from
// Node 24 on, better-sqlite3 before): better-sqlite3 names the extended result code; node:sqlite gives
// ERR_SQLITE_ERROR and the code's number. The numbers are SQLite's (https://www.sqlite.org/rescode.html).
const RESULT_CODES = { SQLITE_ERROR: 1, SQLITE_CANTOPEN: 14, SQLITE_CONSTRAINT_NOTNULL: 19 | (5 << 8) } as const;

/** The spool's driver on this Node, as openSqlite chooses it. */
export const SPOOL_SQLITE_DRIVER = Number(process.versions.node.split('.')[0]) >= 24 ? 'node:sqlite' : 'better-sqlite3';

/** The fields an error of this SQLite result code carries from the spool's driver, for toMatchObject. */
export function sqliteError(name: keyof typeof RESULT_CODES): { code: string; errcode?: number } {
  return SPOOL_SQLITE_DRIVER === 'node:sqlite' ? { code: 'ERR_SQLITE_ERROR', errcode: RESULT_CODES[name] } : { code: name };
}
