// The SQLite connection under the spool: Node's own `node:sqlite` from Node 24 on, better-sqlite3 before that
// (Node 20 and 22 have no stable built-in). better-sqlite3 12 aborts Node 24 processes when V8 collects a
// statement after the environment is torn down (`Assertion failed: (env) != nullptr` in
// RemoveEnvironmentCleanupHook, at exit and sometimes mid-run), so it is not used there. Both are SQLite with the
// same file format: a spool written by one opens with the other.
import { createRequire } from 'node:module';

export interface SqlStatement<P extends unknown[], R> {
  run(...params: P): void;
  get(...params: P): R | undefined;
  all(...params: P): R[];
  iterate(...params: P): IterableIterator<R>;
}

export interface SqlDatabase {
  readonly driver: 'node:sqlite' | 'better-sqlite3';
  exec(sql: string): void;
  prepare<P extends unknown[], R = unknown>(sql: string): SqlStatement<P, R>;
  /** Runs `fn` in one transaction: committed when it returns, rolled back when it throws. */
  transaction(fn: () => void): void;
  close(): void;
}

const require = createRequire(import.meta.url);
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

/** Opens (creating) the database file with the driver this Node runs best. */
export function openSqlite(path: string): SqlDatabase {
  return NODE_MAJOR >= 24 ? openBuiltin(path) : openBetterSqlite(path);
}

/** What the spool uses of node:sqlite (its types are not in @types/node 20, the oldest Node this runs on). */
export interface BuiltinStatement {
  run(...params: unknown[]): unknown;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown>;
}
export interface BuiltinDatabase {
  exec(sql: string): void;
  prepare(sql: string): BuiltinStatement;
  close(): void;
}

/** node:sqlite's connection; `DatabaseSync` is a parameter so that a test on Node 20 (which has none) can hand in a stand-in. */
export function openBuiltin(path: string, DatabaseSync = (require('node:sqlite') as { DatabaseSync: new (path: string) => BuiltinDatabase }).DatabaseSync): SqlDatabase {
  const db = new DatabaseSync(path);
  let open = true;
  return {
    driver: 'node:sqlite',
    exec: (sql) => db.exec(sql),
    prepare<P extends unknown[], R>(sql: string): SqlStatement<P, R> {
      const st = db.prepare(sql);
      return {
        run: (...p) => void st.run(...p),
        get: (...p) => st.get(...p) as R | undefined,
        all: (...p) => st.all(...p) as R[],
        iterate: (...p) => st.iterate(...p) as IterableIterator<R>,
      };
    },
    transaction(fn) {
      db.exec('BEGIN IMMEDIATE');
      try {
        fn();
        db.exec('COMMIT');
      } catch (err) {
        db.exec('ROLLBACK');
        throw err;
      }
    },
    // Closing twice does nothing, as on better-sqlite3 (node:sqlite throws "database is not open").
    close: () => {
      if (!open) return;
      open = false;
      db.close();
    },
  };
}

function openBetterSqlite(path: string): SqlDatabase {
  const Database = require('better-sqlite3') as typeof import('better-sqlite3');
  const db = new Database(path);
  return {
    driver: 'better-sqlite3',
    exec: (sql) => void db.exec(sql),
    prepare<P extends unknown[], R>(sql: string): SqlStatement<P, R> {
      const st = db.prepare<P, R>(sql);
      return {
        run: (...p) => void st.run(...p),
        get: (...p) => st.get(...p),
        all: (...p) => st.all(...p),
        iterate: (...p) => st.iterate(...p),
      };
    },
    transaction: (fn) => db.transaction(fn)(),
    close: () => void db.close(),
  };
}

/**
 * The file is damaged (SQLITE_CORRUPT, SQLITE_NOTADB: a page or the header SQLite cannot parse), as either driver
 * reports it: better-sqlite3 names the code (`SQLITE_CORRUPT_INDEX`...), node:sqlite gives the number (`errcode`).
 * Classified by code, never by message (CONTRIBUTING.md rule 5).
 */
export function isDamagedFileError(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const { code, errcode } = err as { code?: unknown; errcode?: unknown };
  if (typeof code === 'string' && (code.startsWith('SQLITE_CORRUPT') || code.startsWith('SQLITE_NOTADB'))) return true;
  // Primary result codes: 11 SQLITE_CORRUPT, 26 SQLITE_NOTADB (extended codes keep them in the low byte).
  return typeof errcode === 'number' && [11, 26].includes(errcode & 0xff);
}
