// A job context for collector tests that need neither a store nor a simulator (issue 31: mutation testing runs a
// module's tests once per mutant, and a store-backed file costs ~30 s a run here). The platform answers `paginate`
// from a function of (path, query); the writer records the rows each table was given; the store answers the named
// queries from a function of (sql, params). Only what the collectors call is implemented.
import { Readable } from 'node:stream';
import type { JobContext } from '../../src/collectors/job.js';
import { createRegistry } from '../../src/metrics.js';
import type { RejectRow } from '../../src/store/writer.js';

export interface PaginateCall {
  path: string;
  query: Record<string, unknown>;
  scope: unknown;
  method?: unknown;
  body?: unknown;
}

export interface FakeJob {
  ctx: JobContext;
  /** Every paginate call, in order. */
  calls: PaginateCall[];
  /** Rows handed to the writer, per table name (parsed back from the JSON lines). */
  rows: Record<string, Array<Record<string, unknown>>>;
  rejects: RejectRow[];
  queries: Array<{ sql: string; params: Record<string, unknown> }>;
  /** Statements sent with `exec` (inserts, with their body) and `command`. */
  execs: Array<{ sql: string; body: string; settings: unknown }>;
  commands: Array<{ sql: string; params: unknown }>;
  warnings: Array<{ fields: unknown; message: string }>;
  notes: string[];
  added: number[];
  registry: ReturnType<typeof createRegistry>;
}

export function fakeJob(opts: {
  pages: (path: string, query: Record<string, unknown>) => unknown[];
  query?: (sql: string, params: Record<string, unknown>) => unknown[];
  /** Answers getJson calls. */
  json?: (path: string, query: Record<string, unknown>) => unknown;
  now?: Date;
  /** Configuration the code under test reads (nothing else is set). */
  config?: Record<string, unknown>;
  /** Tables whose rows the writer refuses (each counted as rejected, none written). */
  refuse?: string[];
  /** Saved checkpoints, `job key` -> value; saves land here too. */
  checkpoints?: Map<string, string>;
}): FakeJob {
  const job: Omit<FakeJob, 'ctx'> = { calls: [], rows: {}, rejects: [], queries: [], execs: [], commands: [], warnings: [], notes: [], added: [], registry: createRegistry({ defaultMetrics: false }) };
  const writer = {
    insertLines(table: { name: string }, lines: string[]) {
      (job.rows[table.name] ??= []).push(...lines.map((l) => JSON.parse(l) as Record<string, unknown>));
      const refused = opts.refuse?.includes(table.name) ?? false;
      return Promise.resolve({ written: refused ? 0 : lines.length, rejected: refused ? lines.length : 0 });
    },
    reject(rows: readonly RejectRow[]) {
      job.rejects.push(...rows);
      return Promise.resolve({ written: rows.length, rejected: 0 });
    },
    flush: () => Promise.resolve(),
  };
  const store = {
    mode: 'server',
    client: {
      async exec({ query, values, clickhouse_settings }: { query: string; values: AsyncIterable<Buffer>; clickhouse_settings?: unknown }) {
        const chunks: Buffer[] = [];
        for await (const c of values) chunks.push(c);
        job.execs.push({ sql: query, body: Buffer.concat(chunks).toString(), settings: clickhouse_settings });
        return { stream: Readable.from([]) };
      },
      async command({ query, query_params }: { query: string; query_params?: unknown }) {
        job.commands.push({ sql: query, params: query_params });
        return {};
      },
      query({ query, query_params }: { query: string; query_params: Record<string, unknown> }) {
        job.queries.push({ sql: query, params: query_params });
        const out = opts.query ? opts.query(query, query_params) : [];
        return Promise.resolve({ json: () => Promise.resolve(out) });
      },
    },
  };
  const log = {
    info: () => undefined,
    debug: () => undefined,
    warn: (fields: unknown, message: string) => job.warnings.push({ fields, message }),
  };
  const ctx = {
    call: {},
    log,
    now: () => opts.now ?? new Date('2026-11-21T12:00:00Z'),
    note: (n: string) => job.notes.push(n),
    addRows: (n: number) => job.added.push(n),
    runtime: { writer, store, registry: job.registry, config: opts.config ?? {} },
    checkpoints: {
      get: async (jobName: string, key: string) => opts.checkpoints?.get(`${jobName} ${key}`) ?? null,
      save: async (jobName: string, key: string, value: string) => {
        opts.checkpoints?.set(`${jobName} ${key}`, value);
      },
    },
    platform: {
      async getJson(path: string, o: { query?: Record<string, unknown>; schema?: { parse(v: unknown): unknown } } = {}) {
        const query = o.query ?? {};
        job.calls.push({ path, query, scope: undefined });
        const value = opts.json ? opts.json(path, query) : {};
        return o.schema ? o.schema.parse(value) : value;
      },
      async *paginate(path: string, o: { query?: Record<string, unknown>; scope?: unknown; method?: unknown; body?: unknown; schema: { parse(v: unknown): unknown } }) {
        const query = o.query ?? {};
        job.calls.push({ path, query, scope: o.scope, ...(o.method === undefined ? {} : { method: o.method, body: o.body }) });
        for (const page of opts.pages(path, query)) yield o.schema.parse(page);
      },
    },
  } as unknown as JobContext;
  return { ...job, ctx };
}
