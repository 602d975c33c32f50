import type { z } from 'zod';
import type { JobContext } from './job.js';
import type { TableDef } from '../store/tables/table.js';
import { REJECTS_TABLE, type RejectRow } from '../store/writer.js';

// What every collector shares: the reason a record is refused, the rejects it collects, and committing rows with
// their rejects before a checkpoint moves.

export function describeZodIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  return `${issue.path.join('.') || '(record)'}: ${issue.message}`;
}

export interface CollectorRejects {
  source: string;
  rows: RejectRow[];
  add(raw: unknown, reason: string): void;
}

export function collectorRejects(name: string): CollectorRejects {
  const source = `collector:${name}`;
  const rows: RejectRow[] = [];
  return {
    source,
    rows,
    add(raw, reason) {
      rows.push({ source, reason, raw: JSON.stringify(raw) ?? String(raw) });
    },
  };
}

/**
 * Writes rows to their tables and rejects to ingest_rejects, and resolves once all are committed (the caller
 * may then save a checkpoint). Counts the rows for job_runs and warns once when some were not stored.
 */
/** Rows bound for one table, checked against its row type where they are built: `tableWrite(table, rows)`. */
export interface TableWrite {
  table: TableDef<z.ZodObject>;
  rows: readonly object[];
}

export function tableWrite<S extends z.ZodObject>(table: TableDef<S>, rows: ReadonlyArray<z.input<S>>): TableWrite {
  return { table, rows };
}

export async function commitRows(
  ctx: JobContext,
  writes: readonly TableWrite[],
  rejects: CollectorRejects,
  context: Record<string, unknown> = {},
): Promise<{ written: number; refused: number }> {
  const writer = ctx.runtime.writer;
  const pending = writes.filter((w) => w.rows.length > 0).map((w) => writer.insertLines(w.table, w.rows.map((r) => JSON.stringify(r))));
  const rejected = rejects.rows.length > 0 ? writer.reject(rejects.rows.splice(0)) : null;
  await Promise.all([...writes.map((w) => writer.flush(w.table)), ...(rejected ? [writer.flush(REJECTS_TABLE)] : [])]);
  const results = await Promise.all(pending);
  const rejectResult = rejected ? await rejected : { written: 0, rejected: 0 };
  const written = results.reduce((n, r) => n + r.written, 0);
  const refused = results.reduce((n, r) => n + r.rejected, 0);
  if (refused > 0 || rejectResult.written + rejectResult.rejected > 0) {
    ctx.log.warn(
      { ...context, malformed: rejectResult.written + rejectResult.rejected, refused },
      `some records of ${rejects.source} were not stored; they are in ingest_rejects with the reason`,
    );
  }
  ctx.addRows(written);
  return { written, refused };
}

/** Runs `fn` over `items` with at most `limit` at a time; results in input order. The first failure rejects. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        results[i] = await fn(items[i], i);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
}
