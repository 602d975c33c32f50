import { z } from 'zod';
import { defineTable, namedQuery, chNumber } from './table.js';
import type { Store } from '../client.js';
import { applyTtlDays } from '../retention.js';
import { insertEncoded } from '../insert.js';
import { classifyStoreError, describeStoreError } from '../errors.js';
import type { Logger } from '../../log.js';

/** A `logs` row as the log drain writes it (src/collectors/log-line.ts builds the JSON text directly). */
export const LogRow = z.object({
  timestamp: z.string(), // DateTime64(3) text, UTC
  level: z.string(),
  app: z.string(), // svc_app_name
  app_id: z.string(), // svc_app_id
  request_id: z.string(), // svc_request_id
  job_id: z.string(), // svc_job_id
  endpoint: z.string(), // svc_endpoint
  node: z.string(), // svc_node_id
  worker: z.string(), // svc_worker_id
  source: z.string(), // svc_source
  isolate_source: z.string(), // svc_isolate_source
  message: z.string(),
  attributes: z.record(z.string(), z.string()), // every other key of the line
  received_at: z.string(),
  batch_id: z.uuid(), // the delivery
  line: z.number().int().positive(), // 1-based line number within the delivery
  origin: z.enum(['drain', 'history', 'tail']).optional(), // how the row arrived (default drain)
  stored_at: z.string().optional(), // stamped by the store at insert
  copy_rank: z.undefined().optional(), // MATERIALIZED by the store (sql/023): which copy of a record a merge keeps; never written
});
export type LogRow = z.input<typeof LogRow>;

export const logs = defineTable('logs', LogRow);

// One record, one row (sql/023, ARCHITECTURE.md "Logs: one record, one copy"): `logs` is a ReplacingMergeTree over
// the record's identity, and copies (two history fills of one span, the drain and history) stay as separate rows
// until a background merge collapses them. Every read that lists or counts lines reads `FROM logs FINAL`, which
// collapses them first; copies live in one partition (the identity holds the timestamp), so FINAL merges within
// partitions only.
const LOGS = 'logs FINAL';

const LogLineOut = z.object({
  timestamp: z.string(),
  level: z.string(),
  app: z.string(),
  request_id: z.string(),
  job_id: z.string(),
  endpoint: z.string(),
  node: z.string(),
  worker: z.string(),
  source: z.string(),
  isolate_source: z.string(),
  message: z.string(),
  attributes: z.record(z.string(), z.string()),
  batch_id: z.string(),
  line: chNumber,
});

// DateTime64 and UUID columns come back as text in JSONEachRow; no aliases that would shadow a column in WHERE.
const SELECT_LINE = `SELECT timestamp, level, app, request_id, job_id, endpoint, node, worker, source,
          isolate_source, message, attributes, batch_id, line
   FROM ${LOGS}`;

/** One app's lines in [from, to), oldest first: a range scan of the primary key (app, timestamp). */
export const appLogs = namedQuery(
  'app_logs',
  `${SELECT_LINE}
   WHERE app = {app:String} AND timestamp >= {from:DateTime64(3, 'UTC')} AND timestamp < {to:DateTime64(3, 'UTC')}
   ORDER BY timestamp, batch_id, line
   LIMIT {limit:UInt32}`,
  LogLineOut,
);

/**
 * Every line of one request, oldest first (the request_id bloom filter skips the granules without it). The filter
 * may skip granules before FINAL: the copies of a record share its request_id, so none of them is skipped.
 */
export const requestLogs = namedQuery(
  'request_logs',
  `${SELECT_LINE}
   WHERE request_id = {request_id:String}
   ORDER BY timestamp, batch_id, line
   SETTINGS use_skip_indexes_if_final = 1`,
  LogLineOut,
);

/** Makes the `logs` TTL say `days` (LOG_RETENTION_DAYS); 023's table has none until this runs (012 wrote 30). */
export function applyLogRetention(store: Pick<Store, 'client' | 'cluster'>, days: number, logger?: Logger): Promise<boolean> {
  return applyTtlDays(store, 'logs', 'timestamp', days, { logger, rewriteExistingParts: true });
}

/** Severities of the levels a search may ask for (any case as sent); a level nobody knows counts as INFO. */
export const LOG_LEVELS = { TRACE: 5, DEBUG: 10, INFO: 20, NOTICE: 25, WARN: 30, WARNING: 30, ERROR: 40, CRITICAL: 50, FATAL: 50 } as const;
export type LogLevel = keyof typeof LOG_LEVELS;

// An expression of the constant table above (names and numbers of ours, never a request's value).
const SEVERITY_SQL = `multiIf(${Object.entries(LOG_LEVELS)
  .map(([name, n]) => `upper(level) = '${name}', ${n}`)
  .join(', ')}, 20)`;

const searchedLineFields = {
  level: z.string(),
  app: z.string(),
  endpoint: z.string(),
  request_id: z.string(),
  job_id: z.string(),
  node: z.string(),
  worker: z.string(),
  source: z.string(),
  message: z.string(),
};

/** The filters and order of the query API's log search (searchLogs and searchLogSizes read the same lines). */
const SEARCH_WHERE = `WHERE timestamp >= {from:DateTime64(3, 'UTC')} AND timestamp < {to:DateTime64(3, 'UTC')}
     AND (length({apps:Array(String)}) = 0 OR has({apps:Array(String)}, app))
     AND ${SEVERITY_SQL} >= {min_severity:UInt8}
     AND ({request_id:String} = '' OR request_id = {request_id:String})
     AND ({contains:String} = '' OR positionCaseInsensitiveUTF8(message, {contains:String}) > 0)
     AND ({has_cursor:UInt8} = 0 OR (timestamp, batch_id, line) < ({after_t:DateTime64(3, 'UTC')}, {after_b:UUID}, {after_l:UInt32}))
   ORDER BY timestamp DESC, batch_id DESC, line DESC`;

/** The query API's log search: newest first, after a cursor position (timestamp, batch, line). */
export const searchLogs = namedQuery(
  'search_logs',
  // Text aliases of their own: an alias named like its column would replace the column in WHERE and ORDER BY.
  `SELECT toString(timestamp) AS ts_text, level, app, endpoint, request_id, job_id, node, worker, source, message,
          toString(batch_id) AS batch_text, line
   FROM ${LOGS}
   ${SEARCH_WHERE}
   LIMIT {limit:UInt32}`,
  z
    .object({ ts_text: z.string(), ...searchedLineFields, batch_text: z.string(), line: chNumber })
    .transform(({ ts_text, batch_text, ...r }) => ({ ...r, timestamp: ts_text, batch_id: batch_text })),
);

/**
 * The stored size (bytes of the text fields) of each line searchLogs would return, without the lines: GET /logs
 * sizes a page before reading it, so a page of huge lines is cut at its byte bound instead of read whole.
 */
export const searchLogSizes = namedQuery(
  'search_log_sizes',
  `SELECT length(message) + length(level) + length(app) + length(endpoint) + length(request_id) + length(job_id)
            + length(node) + length(worker) + length(source) AS line_bytes
   FROM ${LOGS}
   ${SEARCH_WHERE}
   LIMIT {limit:UInt32}`,
  z.object({ line_bytes: chNumber }),
);

/** A found line as the query API answers it (GET /logs): the same fields, the time as ISO 8601 UTC. */
export const FoundLogLine = z.object({
  timestamp: z.string().describe('ISO 8601, UTC'),
  ...searchedLineFields,
  batch_id: z.string().describe('the delivery'),
  line: z.number().int().describe('1-based line number within the delivery'),
});

/** How a `logs` row arrived: pushed by the drain, paged from logs history, or followed by `logs tail --store`. */
export type LogOrigin = 'drain' | 'history' | 'tail';

/**
 * Inserts TabSeparated rows of mapLine's columns (src/collectors/log-line.ts, LOG_ROW_COLUMNS) that came by
 * history or the tail, or the drain's lines `tallyhouse spool salvage` reads from a damaged spool file (the drain's
 * own lines go through its spool and replayer). The token makes a retried insert of the same rows a no-op.
 */
export async function insertLogRows(
  store: Pick<Store, 'client' | 'mode'>,
  columns: readonly string[],
  rows: readonly string[],
  origin: LogOrigin,
  dedupToken: string,
): Promise<void> {
  if (rows.length === 0) return;
  await insertEncoded(store, {
    table: 'logs',
    columns: [...columns, 'origin'],
    format: 'TabSeparated',
    parts: rows.map((r) => `${r}\t${origin}\n`),
    settings: { insert_deduplication_token: dedupToken, async_insert: 0, max_partitions_per_insert_block: '0' },
    fileTag: `${origin}-${dedupToken.slice(0, 12)}`,
  });
}

/**
 * What identifies a log record whichever way it came (the platform notes: timestamp, app, request id and
 * message; and the worker, see src/collectors/logs.ts), for the lines stored in [from, to] of some apps.
 */
export const storedLogKeys = namedQuery(
  'stored_log_keys',
  `SELECT toString(timestamp) AS ts, app, request_id, worker, message
   FROM logs
   WHERE timestamp >= {from:DateTime64(3, 'UTC')} AND timestamp <= {to:DateTime64(3, 'UTC')}
     AND (length({apps:Array(String)}) = 0 OR has({apps:Array(String)}, app))`,
  z.object({ ts: z.string(), app: z.string(), request_id: z.string(), worker: z.string(), message: z.string() }),
);

/** Rows that came by history or the tail in [from, to] of some apps. */
const NOT_DRAIN_IN_SPAN = `origin != 'drain'
   AND timestamp >= {from:DateTime64(3, 'UTC')} AND timestamp <= {to:DateTime64(3, 'UTC')} AND has({apps:Array(String)}, app)`;

/** Those of them whose record the drain stored too. */
const COPIES_OF_DRAIN_LINES = `${NOT_DRAIN_IN_SPAN}
   AND (timestamp, app, request_id, worker, message) IN (
     SELECT timestamp, app, request_id, worker, message FROM logs
     WHERE origin = 'drain' AND timestamp >= {from:DateTime64(3, 'UTC')} AND timestamp <= {to:DateTime64(3, 'UTC')}
       AND has({apps:Array(String)}, app))`;

/**
 * One record, two copies: when a record came by the drain and by history (or the tail), the drain's copy stays and
 * the other is deleted (a lightweight DELETE, only when there is one). Every writer of `logs` calls this after its
 * insert of records that history may have filled too, so whichever of two racing writers inserts last sees both
 * copies: the drain spool replaying old lines, and the logs job filling what looked like a gap (ARCHITECTURE.md,
 * logs). Returns how many copies were deleted. A store that refuses the DELETE for good (no ALTER DELETE grant, a
 * read-only store) keeps the copies: `refused` says why, for the caller to report, rather than stopping the drain
 * or the job; a transient failure (the store down, overloaded, slow) throws, for the caller to retry.
 */
export async function dropCopiesOfDrainLines(
  store: Pick<Store, 'client'>,
  span: { from: string; to: string; apps: string[] },
): Promise<{ dropped: number; refused?: string }> {
  if (span.apps.length === 0) return { dropped: 0 };
  const count = async (where: string): Promise<number> => {
    const rs = await store.client.query({ query: `SELECT count() AS n FROM logs WHERE ${where}`, query_params: span, format: 'JSONEachRow' });
    return Number((await rs.json<{ n: string | number }>())[0]?.n ?? 0);
  };
  // Most spans hold drain lines only: a read of the span's non-drain rows (no set of drain keys built) says so.
  if ((await count(NOT_DRAIN_IN_SPAN)) === 0) return { dropped: 0 };
  const n = await count(COPIES_OF_DRAIN_LINES);
  if (n === 0) return { dropped: 0 };
  try {
    // On a cluster the table is Replicated: the delete replicates by itself, and its subquery needs this setting.
    await store.client.command({
      query: `DELETE FROM logs WHERE ${COPIES_OF_DRAIN_LINES}`,
      query_params: span,
      clickhouse_settings: { allow_nondeterministic_mutations: 1 },
    });
  } catch (err) {
    if (classifyStoreError(err) === 'transient') throw err;
    return { dropped: 0, refused: describeStoreError(err) };
  }
  return { dropped: n };
}

/** The seconds in [from, to) in which the drain delivered at least one line (any app), in order. */
export const drainSeconds = namedQuery(
  'drain_seconds',
  `SELECT DISTINCT toUnixTimestamp(timestamp) AS s
   FROM logs
   WHERE origin = 'drain' AND timestamp >= {from:DateTime64(3, 'UTC')} AND timestamp < {to:DateTime64(3, 'UTC')}
   ORDER BY s`,
  z.object({ s: chNumber }),
);

/**
 * Lines stored after a position (the live feed): (stored_at, batch, line), so that a reader pages through any number
 * of lines stamped alike; oldest stored first; rows older than `received_since` are skipped. `stored_at >=` repeats
 * the tuple's first field so that the stored_at minmax index (sql/023) skips the parts stored before it (the feed
 * polls four times a second). Every stored copy is a line here, a second copy of a record too (sql/023). Hiding a
 * copy here costs too much: not FINAL (stored_at is no key column, so FINAL merges the whole table on every page),
 * and a filter against the record's other copies scans the table for them (1.2-1.6 s a page on 2.1M rows with a fill
 * of 150,000 rows to page through); the route skips copies while moving its position past them, with one keyed read
 * per page (storedCopiesOf).
 */
export const logsStoredSince = namedQuery(
  'logs_stored_since',
  `SELECT toString(stored_at) AS stored_text, toString(timestamp) AS ts_text, level, app, endpoint, request_id, job_id, node, worker,
          source, message, toString(batch_id) AS batch_text, line, origin
   FROM logs
   WHERE stored_at >= {since:DateTime64(3, 'UTC')}
     AND (stored_at, batch_id, line) > ({since:DateTime64(3, 'UTC')}, {after_b:UUID}, {after_l:UInt32})
     AND received_at >= {received_since:DateTime64(3, 'UTC')}
   ORDER BY stored_at, batch_id, line
   LIMIT {limit:UInt32}`,
  z
    .object({ stored_text: z.string(), ts_text: z.string(), ...searchedLineFields, batch_text: z.string(), line: chNumber, origin: z.string() })
    .transform(({ ts_text, batch_text, stored_text, ...r }) => ({ ...r, timestamp: ts_text, batch_id: batch_text, stored_at: stored_text })),
);

/**
 * Every stored copy of some records (the live feed's page: parallel arrays of their identity, the time as
 * DateTime64(3) text), with its position (stored_at, batch, line), so the feed shows each record once: its first
 * stored copy. Copies a lightweight DELETE removed (dropCopiesOfDrainLines: a history copy once the drain's is
 * stored) still count until a merge drops them (`apply_deleted_mask = 0`): the feed may have shown that copy already.
 * One keyed read per page: the primary key (app, timestamp) narrows it to the page's apps and span.
 */
export const storedCopiesOf = namedQuery(
  'stored_copies_of',
  `SELECT toString(timestamp) AS ts, app, request_id, worker, message, toString(stored_at) AS stored_text, toString(batch_id) AS batch_text, line
   FROM logs
   WHERE has({apps:Array(String)}, app)
     AND timestamp >= {from:DateTime64(3, 'UTC')} AND timestamp <= {to:DateTime64(3, 'UTC')}
     AND (toString(timestamp), app, request_id, worker, message) IN (
       SELECT arrayJoin(arrayZip({key_ts:Array(String)}, {key_app:Array(String)}, {key_request:Array(String)}, {key_worker:Array(String)}, {key_message:Array(String)})))
   SETTINGS apply_deleted_mask = 0`,
  z.object({ ts: z.string(), app: z.string(), request_id: z.string(), worker: z.string(), message: z.string(), stored_text: z.string(), batch_text: z.string(), line: chNumber }),
);

/** The store's own clock (it stamps stored_at), as DateTime64(3) text. */
export const storeNow = namedQuery('store_now', `SELECT toString(now64(3)) AS now`, z.object({ now: z.string() }));
