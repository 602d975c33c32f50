// The pages of a spool file, for tests that damage one on purpose (sqlite's dbstat view).
import Database from 'better-sqlite3';

/** The leaves of `records` in key order, with their cell counts, and the file's page size. */
export function leavesOf(file: string): { pageSize: number; leaves: Array<{ pageno: number; ncell: number }> } {
  const db = new Database(file, { readonly: true });
  try {
    const pageSize = Number(db.pragma('page_size', { simple: true }));
    const leaves = (db.prepare("SELECT path, pageno, ncell FROM dbstat WHERE name = 'records' AND pagetype = 'leaf'").all() as Array<{ path: string; pageno: number; ncell: number }>).sort((a, b) =>
      a.path < b.path ? -1 : 1,
    );
    return { pageSize, leaves };
  } finally {
    db.close();
  }
}
