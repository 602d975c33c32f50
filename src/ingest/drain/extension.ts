// The log drain as a part of the service: the spool, its replayer, the parser threads and the route, started
// and stopped in that order. Design and limits: README.md beside this file.
import { join } from 'node:path';
import type { Extension, Runtime } from '../../runtime.js';
import { applyLogRetention, dropCopiesOfDrainLines } from '../../store/tables/logs.js';
import { toDateTime64 } from '../../values.js';
import { resolveDrainAuth, type DrainAuth } from './auth.js';
import { createDrainMetrics } from './metrics.js';
import { ParserPool } from './parser-pool.js';
import { unescapeTsvField } from '../../collectors/log-line.js';
import { pushBudgets } from '../body-budget.js';
import { drainRoutes } from './receive.js';
import { DiskPressure } from './disk-pressure.js';
import { addReadinessCondition } from '../../http/health.js';
import { SpoolReplayer } from './replay.js';
import { openSpool } from './spool/open-spool.js';
import type { Spool } from './spool/spool.js';
import { StagingBudget } from './stage-body.js';

export interface LogDrainOptions {
  /** In demo mode: use this secret instead of a random one (e.g. the demo simulator's drain secret). */
  demoSecret?: string;
  /** Rows per request kept in memory before spilling (default 4 MiB); all requests together: stagingBudgetBytes. */
  stageMemoryBytes?: number;
  stagingBudgetBytes?: number;
  /** Parser worker threads (default: one per core beyond the first, at most 4; 0 = parse on the request thread). */
  parserThreads?: number;
  /**
   * Largest replay batch (default 100,000 rows / 16 MiB, 48 MiB with the embedded store): bigger batches, fewer parts
   * and less engine CPU per row; smaller, less memory.
   */
  replayMaxBatchRows?: number;
  replayMaxBatchBytes?: number;
  /** Called with the replayer once started (tests and benchmarks wait on whenReplayed()). */
  onStarted?: (drain: { spool: Spool; replayer: SpoolReplayer; auth: DrainAuth | undefined }) => void;
}

/**
 * The log drain: applies LOG_RETENTION_DAYS to `logs`, opens the spool under DATA_DIR/spool/logs (replaying
 * whatever a previous run left), and serves POST /v1/drains/logs. The spool is replayed even when the
 * endpoint is off, so lines accepted before a reconfiguration still reach the store.
 */
export function logDrainExtension(options: LogDrainOptions = {}): Extension {
  return async (rt) => {
    const logger = rt.logger.child({ component: 'log-drain' });
    await applyLogRetention(rt.store, rt.config.LOG_RETENTION_DAYS, logger);
    const auth = resolveDrainAuth(rt.config, logger, options.demoSecret);
    const spool = await openSpool({
      dir: join(rt.config.DATA_DIR, 'spool', 'logs'),
      maxBytes: rt.config.LOG_DRAIN_SPOOL_MAX_BYTES,
      logger,
      registry: rt.registry,
    });
    const metrics = createDrainMetrics(rt.registry, () => spool);
    const disk = new DiskPressure({ path: rt.config.DATA_DIR, minFreeBytes: rt.config.DISK_MIN_FREE_BYTES, backlogBytes: () => spool.bytes, registry: rt.registry });
    const removeReadiness = addReadinessCondition(rt.app.server, () => disk.reason());
    const replayer = new SpoolReplayer({
      spool,
      store: rt.store,
      writer: rt.writer,
      logger,
      metrics,
      lingerMs: rt.config.WRITER_FLUSH_INTERVAL_MS,
      maxBatchRows: options.replayMaxBatchRows,
      // The embedded engine reads the batch from a file: larger inserts cost it less per row (450,000 rows in
      // 100,000-row inserts: 2.0 CPU-s, in 45,000-row ones (16 MiB): 2.6). A server's batch streams from memory,
      // within the replay's share of the drain's memory (SERVER_REPLAY_MEMORY_BYTES).
      maxBatchBytes: options.replayMaxBatchBytes ?? (rt.store.mode === 'embedded' ? EMBEDDED_REPLAY_BATCH_BYTES : undefined),
      memoryBudgetBytes: rt.store.mode === 'embedded' ? undefined : SERVER_REPLAY_MEMORY_BYTES,
      infileDir: spool.stagingDir,
      afterInsert: (parts) => dropHistoryCopies(rt.store, parts, logger, metrics),
    });
    replayer.start();
    const parsers = new ParserPool(options.parserThreads, logger);
    await rt.app.register(drainRoutes, {
      auth,
      spool,
      writer: rt.writer,
      metrics,
      maxBodyBytes: rt.config.LOG_DRAIN_MAX_BODY_BYTES,
      stageMemoryBytes: options.stageMemoryBytes,
      budget: new StagingBudget(options.stagingBudgetBytes ?? 64 * 1024 * 1024),
      parsers,
      budgets: pushBudgets(rt.app.server, rt.config, rt.registry),
      disk,
    });
    options.onStarted?.({ spool, replayer, auth });
    return {
      name: 'log-drain',
      async stop() {
        removeReadiness();
        await parsers.close();
        await replayer.stop();
        await spool.close();
        if (spool.bytes > 0) logger.info({ bytes: spool.bytes, lines: spool.pendingRows }, 'log drain spool kept for the next start');
      },
    };
  };
}

/** The largest replay batch with the embedded store: 100,000 drain rows of ~400 bytes (maxBatchRows' default). */
const EMBEDDED_REPLAY_BATCH_BYTES = 48 * 1024 * 1024;

/**
 * The replayer's memory with a server store: batches of 8 MiB (ReplayerOptions.memoryBudgetBytes). bench drain
 * --store http, 2M lines, under load 20-28: with 16 MiB batches the main thread's array buffers peaked at 39-45 MB
 * and the service's RSS at 271-330 MB (goal under 300); in a run beside one of those, 4 MiB batches peaked at 34 MB
 * and 259 MB against 40 and 279, at the same insert rate (the server's: the batch streams to it).
 */
const SERVER_REPLAY_MEMORY_BYTES = 24 * 1024 * 1024;

/** Lines younger than this cannot have been filled from history yet: the logs job leaves the newest 5 minutes alone. */
const FRESH_MS = 60_000;

/**
 * After drain rows are stored: if some are old enough for the logs job to have filled them from history meanwhile
 * (lines that waited in the spool through an outage or a restart), the history copies of those records go
 * (dropCopiesOfDrainLines). Fresh lines, the usual case, cost one pass over the timestamps and no query.
 * A transient failure throws, so the replayer retries the batch (its insert is deduplicated by token; the count
 * before the DELETE finds nothing left once one went through). A refusal is warned and counted, and the batch
 * committed: a record stored twice is better than a drain that stops taking lines.
 */
async function dropHistoryCopies(
  store: Runtime['store'],
  parts: Buffer[],
  logger: Runtime['logger'],
  metrics: ReturnType<typeof createDrainMetrics>,
): Promise<void> {
  const freshFrom = toDateTime64(Date.now() - FRESH_MS);
  // Read in the rows' bytes: decoding a batch into one string per record doubled the replay's memory for the
  // length of the scan (a 16 MiB batch is as many bytes of strings) and cost more than the scan itself. The usual
  // batch (all fresh) costs one look at each row's first bytes (a 100,000-row batch: ~3 ms, where the range
  // took ~17 ms of the event loop); the range only for a batch that has old rows.
  if (!hasRowsBefore(parts, freshFrom)) return;
  const { min, max } = timestampRange(parts);
  if (min === undefined || max === undefined || min >= freshFrom) return;
  const apps = appsOf(parts);
  const { refused } = await dropCopiesOfDrainLines(store, { from: min, to: max, apps: [...apps] });
  if (refused) {
    metrics.copiesKept.inc();
    logger.warn(
      { from: min, to: max, apps: [...apps].slice(0, 20), error: refused },
      'the store refused to delete the history copies of replayed drain lines; those records may be stored twice',
    );
  }
}

const TAB = 0x09;
const NEWLINE = 0x0a;

/**
 * The least and greatest timestamp of the rows (TabSeparated in LOG_ROW_COLUMNS order, each ending with a newline:
 * the timestamp first, ASCII 'YYYY-MM-DD hh:mm:ss.fff', which sorts as bytes as it does as text).
 */
export function timestampRange(parts: readonly Buffer[]): { min: string | undefined; max: string | undefined } {
  let min: Buffer | undefined;
  let max: Buffer | undefined;
  for (const part of parts) {
    for (let start = 0; start < part.length; ) {
      let end = part.indexOf(NEWLINE, start);
      if (end === -1) end = part.length;
      let tab = part.indexOf(TAB, start);
      if (tab === -1 || tab > end) tab = end;
      const ts = part.subarray(start, tab);
      if (min === undefined || Buffer.compare(ts, min) < 0) min = ts;
      if (max === undefined || Buffer.compare(ts, max) > 0) max = ts;
      start = end + 1;
    }
  }
  return { min: min?.toString('latin1'), max: max?.toString('latin1') };
}

/**
 * Whether some row's timestamp sorts before `bound` (DateTime64 text, ASCII), as timestampRange's least would:
 * each row compared byte by byte up to its first difference, the scan ending at the first older row.
 */
export function hasRowsBefore(parts: readonly Buffer[], bound: string): boolean {
  const b = Buffer.from(bound, 'latin1');
  for (const part of parts) {
    for (let start = 0; start < part.length; ) {
      for (let i = 0; i < b.length; i++) {
        const c = part[start + i] as number | undefined;
        if (c === b[i]) continue;
        // A byte that sorts lower, or a field (tab, newline) or part that ends first: a shorter prefix sorts first.
        if (c === undefined || c < b[i]) return true;
        break;
      }
      const end = part.indexOf(NEWLINE, start);
      if (end === -1) break;
      start = end + 1;
    }
  }
  return false;
}

/** The distinct `app` values of the rows (the third column, unescaped: a timestamp and a level hold no tab). */
export function appsOf(parts: readonly Buffer[]): Set<string> {
  const apps = new Set<string>();
  let last: Buffer | undefined;
  for (const part of parts) {
    for (let start = 0; start < part.length; ) {
      let end = part.indexOf(NEWLINE, start);
      if (end === -1) end = part.length;
      const t1 = part.indexOf(TAB, start);
      const t2 = t1 === -1 ? -1 : part.indexOf(TAB, t1 + 1);
      if (t2 !== -1 && t2 < end) {
        let t3 = part.indexOf(TAB, t2 + 1);
        if (t3 === -1 || t3 > end) t3 = end;
        const app = part.subarray(t2 + 1, t3);
        // Rows of one app come in runs: decode only where the app changes.
        // As stored, not as escaped in the row (an app named team\web is team\\web in TabSeparated): the
        // copies' delete matches stored names.
        if (last === undefined || !app.equals(last)) apps.add(unescapeTsvField(app.toString('utf8')));
        last = app;
      }
      start = end + 1;
    }
  }
  return apps;
}
