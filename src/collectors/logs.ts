// Logs history into the `logs` table, for what the drain did not deliver. A history item is turned back into the
// drain's line form (timestamp, message, level and its labels at top level) and mapped by the drain's own mapLine,
// so a record stored by either way is the same row. A record already stored (by the drain, or by an earlier run)
// is skipped: the platform notes identify a record by timestamp, app, request id and message; we add the worker,
// because two runners of one app can log the same line (no request id) in the same millisecond.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { JobContext } from './job.js';
import { LogRecord, platformPaths } from '../platform/index.js';
import { mapLineSafely, LOG_ROW_COLUMNS, unescapeTsvField } from './log-line.js';
import { dropCopiesOfDrainLines, insertLogRows, storedLogKeys, type LogOrigin } from '../store/tables/logs.js';
import { toDateTime64 } from '../values.js';
import { collectorRejects, commitRows, describeZodIssue, mapLimit, type CollectorRejects } from './common.js';
import type { AppRef } from './endpoints.js';

/** The platform's largest history page. */
export const HISTORY_PAGE_LIMIT = 1000;
/** Apps paged at once. */
const CONCURRENCY = 4;

// Loose envelope: each item is validated on its own, so one bad record does not cost its page.
const HistoryPage = z.looseObject({ items: z.array(z.unknown()) });

/** A window of log time, [fromMs, toMs). */
export interface LogWindow {
  fromMs: number;
  toMs: number;
}

export interface HistoryFillResult {
  /** Records the platform returned (each once, even when pages overlap). */
  received: number;
  /** Records not stored before, now stored. */
  stored: number;
  rejected: number;
}

/** A log record's identity across ways in: timestamp (DateTime64 text), app, request id, worker, message. */
export function recordKey(timestamp: string, app: string, requestId: string, worker: string, message: string): string {
  return `${timestamp}\u0000${app}\u0000${requestId}\u0000${worker}\u0000${message}`;
}

/** The drain's line form of a history (or stream) item: the four named fields and the labels at top level. */
export function drainLineOf(item: LogRecord): Record<string, unknown> {
  const labels = item.labels && typeof item.labels === 'object' && !Array.isArray(item.labels) ? (item.labels as Record<string, unknown>) : {};
  const line: Record<string, unknown> = { timestamp: item.timestamp, message: item.message, level: item.level, ...labels };
  if (line.svc_app_name === undefined && item.app) line.svc_app_name = item.app;
  return line;
}

/**
 * A batch of records that came another way than the drain, as `logs` rows: mapped by mapLine, then deduplicated
 * against each other and against what is stored in their time span. Returns the rows to insert.
 */
export class LogRowBatch {
  private readonly rows: string[] = [];
  private readonly keys = new Set<string>();
  private minTs: string | null = null;
  private maxTs: string | null = null;
  readonly batchId: string;
  private readonly receivedAt = toDateTime64(Date.now());

  constructor(private readonly origin: Exclude<LogOrigin, 'drain'>, idSeed: string, private readonly rejects: CollectorRejects) {
    this.batchId = uuidFromText(`${origin}\n${idSeed}`);
  }

  get size(): number {
    return this.rows.length;
  }

  /** Adds one record in the drain's line form; false when it repeats one of this batch or is refused. */
  add(line: Record<string, unknown>, raw: unknown = line): boolean {
    const outcome = mapLineSafely(JSON.stringify(line), this.rows.length + 1, { receivedAt: this.receivedAt, batchId: this.batchId });
    if (!outcome.ok) {
      this.rejects.add(raw, outcome.reason);
      return false;
    }
    const f = outcome.row.split('\t');
    // Columns of LOG_ROW_COLUMNS: 0 timestamp, 2 app, 4 request_id, 8 worker, 11 message (TSV-escaped; stored text is not).
    const key = recordKey(f[0], unescapeTsvField(f[2]), unescapeTsvField(f[4]), unescapeTsvField(f[8]), unescapeTsvField(f[11]));
    if (this.keys.has(key)) return false;
    this.keys.add(key);
    this.rows.push(outcome.row);
    if (this.minTs === null || f[0] < this.minTs) this.minTs = f[0];
    if (this.maxTs === null || f[0] > this.maxTs) this.maxTs = f[0];
    return true;
  }

  /** Stores the rows not already in `logs`; returns how many were stored. */
  async commit(ctx: Pick<JobContext, 'runtime'>): Promise<number> {
    if (this.rows.length === 0 || this.minTs === null || this.maxTs === null) return 0;
    const store = ctx.runtime.store;
    const apps = [...new Set([...this.keys].map((k) => k.split('\u0000')[1]))];
    const stored = await storedLogKeys(store, { from: this.minTs, to: this.maxTs, apps });
    const present = new Set(stored.map((r) => recordKey(r.ts, r.app, r.request_id, r.worker, r.message)));
    const fresh: string[] = [];
    let i = 0;
    for (const key of this.keys) {
      if (!present.has(key)) fresh.push(this.rows[i]);
      i++;
    }
    if (fresh.length === 0) return 0;
    const token = createHash('sha256').update(this.batchId).update(fresh.join('\n')).digest('hex');
    await insertLogRows(store, LOG_ROW_COLUMNS, fresh, this.origin, token);
    // The check above only saves work: another writer may store some of these records between it and the insert
    // (a spool replaying old lines on another instance, a second fill of this span). The table collapses copies
    // (sql/023: one row per record as read); removing ours when the drain's is there frees the space sooner.
    // A refusal keeps them; the scheduled run's own pass over its span reports it.
    const { dropped } = await dropCopiesOfDrainLines(store, { from: this.minTs, to: this.maxTs, apps });
    return Math.max(0, fresh.length - dropped);
  }
}

/**
 * Pages logs history of each app over each window and stores the records not stored yet. Resolves once they
 * are committed.
 */
export async function fillFromHistory(
  ctx: JobContext,
  apps: readonly AppRef[],
  windows: readonly LogWindow[],
  pageLimit = HISTORY_PAGE_LIMIT,
): Promise<HistoryFillResult> {
  const rejects = collectorRejects('logs');
  const result: HistoryFillResult = { received: 0, stored: 0, rejected: 0 };
  const calls = windows.flatMap((w) => apps.map((app) => ({ app, w })));
  await mapLimit(calls, CONCURRENCY, async ({ app, w }) => {
    const batch = new LogRowBatch('history', `${app.endpoint_id}\n${w.fromMs}\n${w.toMs}`, rejects);
    const pages = ctx.platform.paginate(platformPaths.logsHistory, {
      method: 'POST',
      body: [],
      query: { app_id: app.endpoint_id, start: new Date(w.fromMs).toISOString(), end: new Date(w.toMs).toISOString(), limit: pageLimit },
      schema: HistoryPage,
      ctx: ctx.call,
    });
    for await (const page of pages) {
      for (const raw of page.items) {
        const parsed = LogRecord.safeParse(raw);
        if (!parsed.success) {
          rejects.add(raw, describeZodIssue(parsed.error));
          continue;
        }
        if (batch.add(drainLineOf(parsed.data), raw)) result.received++;
      }
    }
    const stored = await batch.commit(ctx);
    result.stored += stored;
    ctx.addRows(stored);
  });
  result.rejected = rejects.rows.length;
  await commitRows(ctx, [], rejects, { windows: windows.length, apps: apps.length });
  return result;
}

/** A UUID-shaped id derived from a text (stable: the same window always gets the same batch id). */
function uuidFromText(text: string): string {
  const h = createHash('sha256').update(text).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

