import { drainPending, Session } from 'chdb';
import { installReadGate } from './read-lanes.js';
import { createChdbConnection } from 'chdb/connection';
import type { ClickHouseSettings } from '@clickhouse/client';
import type { Connection } from '@clickhouse/client/dist/common/connection.js';
import type { Readable } from 'node:stream';

// Settings that only mean something to ClickHouse's HTTP layer; the embedded engine rejects them.
const HTTP_ONLY = new Set([
  'wait_end_of_query',
  'send_progress_in_http_headers',
  'http_response_buffer_size',
  'http_headers_progress_interval_ms',
  'http_send_progress_interval_ms',
  'enable_http_compression',
  'http_zlib_compression_level',
  'default_format',
]);

const SETTING_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
// A trailing `SETTINGS name = value[, name = value]` (numbers, identifiers or quoted strings as values).
const OWN_SETTINGS = /\sSETTINGS\s+\w+\s*=\s*(?:'[^']*'|[\w.]+)(?:\s*,\s*\w+\s*=\s*(?:'[^']*'|[\w.]+))*$/i;

function settingLiteral(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'boolean') return value ? '1' : '0';
  return `'${String(value).replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/**
 * Moves per-query settings into the statement's own SETTINGS clause.
 *
 * chdb/connection applies settings with `SET k = v; <sql>`, which changes the whole session:
 * an `insert_deduplication_token` would then silently apply to every later insert, and
 * concurrent statements would race on it. A SETTINGS clause is scoped to its statement.
 */
export function inlineSettings(sql: string, settings: ClickHouseSettings | undefined): string {
  const parts = statementSettings(settings).map(([name, value]) => `${name} = ${settingLiteral(value)}`);
  if (parts.length === 0) return sql;
  const format = /\s+FORMAT\s+\w+\s*$/i.exec(sql);
  const body = (format ? sql.slice(0, format.index) : sql).replace(/[\s;]+$/, '');
  const tail = format ? sql.slice(format.index) : '';
  // A statement that ends with a SETTINGS clause of its own gets ours added to it (a second clause is a syntax error).
  if (OWN_SETTINGS.test(body)) return `${body},\n${parts.join(', ')}${tail}`;
  // On its own line, so a trailing `-- comment` in the statement cannot swallow it.
  return `${body}\n${`SETTINGS ${parts.join(', ')}`}${tail}`;
}

/** The settings a statement's SETTINGS clause takes: those the HTTP layer consumes are left out, names checked. */
export function statementSettings(settings: ClickHouseSettings | undefined): Array<[string, unknown]> {
  const entries: Array<[string, unknown]> = [];
  for (const [name, value] of Object.entries(settings ?? {})) {
    if (value === undefined || HTTP_ONLY.has(name)) continue;
    if (!SETTING_NAME.test(name)) throw new Error(`invalid ClickHouse setting name ${JSON.stringify(name)}`);
    entries.push([name, value]);
  }
  return entries;
}

export { SESSION_SETTINGS } from './settings.js';

export interface EmbeddedLimits {
  /** The engine's whole memory (max_server_memory_usage): a query or merge beyond it fails rather than grow. */
  maxMemoryBytes: number;
  /** Each of the mark caches (mark_cache_size, index_mark_cache_size); the uncompressed cache stays off. */
  cacheBytes: number;
  /** Heavy reads handed to the engine at once (EMBEDDED_HEAVY_READS_MAX; src/store/read-lanes.ts); default 1. */
  heavyReads?: number;
  /** Heavy reads of requests that may wait for a slot (EMBEDDED_HEAVY_READS_MAX_WAITING); beyond, a 503. */
  heavyWaiting?: number;
}


/**
 * The engine's server settings for the embedded store. The defaults of a ClickHouse server (5 GiB mark caches, a
 * memory limit of 90% of the machine) suit a database server, not a library inside a service: these bound it.
 */
export function engineArgs(limits: EmbeddedLimits | undefined): string[] {
  if (!limits) return [];
  return [
    `--max_server_memory_usage=${limits.maxMemoryBytes}`,
    `--mark_cache_size=${limits.cacheBytes}`,
    `--index_mark_cache_size=${limits.cacheBytes}`,
    '--uncompressed_cache_size=0',
  ];
}

/**
 * A chDB connection for `createClient({ connection })` whose per-query settings stay per query. The engine is
 * started first by a Session of ours with `limits` as its server settings (chdb/connection takes no engine
 * arguments; it then attaches to the engine already running on that path), held until the connection closes.
 */
export function createEmbeddedConnection(path: string, limits?: EmbeddedLimits): Connection<Readable> {
  const engine = limits ? new Session(path, { connectionArgs: engineArgs(limits) }) : null;
  let inner: Connection<Readable>;
  try {
    inner = createChdbConnection({ path }) as unknown as Connection<Readable>;
  } catch (err) {
    engine?.close();
    throw err;
  }
  const scoped = <P extends { query: string; clickhouse_settings?: ClickHouseSettings }>(params: P): P => ({
    ...params,
    query: inlineSettings(params.query, params.clickhouse_settings),
    clickhouse_settings: {},
  });
  const gate = installReadGate(limits?.heavyReads ?? 1, limits?.heavyWaiting);
  return {
    ping: (p) => inner.ping(p),
    // Reads and commands (a job's INSERT ... SELECT rebuilding a rollup is a big read) pass the gate: interactive
    // first. Inserts go straight to the engine: the drain's acknowledgements wait for them.
    query: (p) => gate.run(() => inner.query(scoped(p))),
    insert: (p) => inner.insert(scoped(p)),
    exec: (p) => inner.exec(scoped(p)),
    command: (p) => gate.run(() => inner.command(scoped(p))),
    close: async () => {
      try {
        await inner.close();
      } finally {
        engine?.close();
        // close() returns before the engine has let go when a query is still running on one of its threads (an
        // aborted one keeps computing): exiting then tore the engine down under it, a SIGSEGV after "tallyhouse
        // stopped" (seen in 2 of 8 demo start-and-stop runs). Wait until nothing native is left running.
        await drainPending();
      }
    },
  };
}
