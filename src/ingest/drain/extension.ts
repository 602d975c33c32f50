// The log drain as a part of the service: the spool, its replayer, the parser threads and the route, started
// and stopped in that order. Design and limits: README.md beside this file.
import { join } from 'node:path';
import type { Extension } from '../../runtime.js';
import { applyLogRetention } from '../../store/tables/logs.js';
import { resolveDrainAuth, type DrainAuth } from './auth.js';
import { createDrainMetrics } from './metrics.js';
import { ParserPool } from './parser-pool.js';
import { drainRoutes, ReadingSlots } from './receive.js';
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
  /** Request bodies read at once (default 4); a signed body is held whole until its signature is checked. */
  maxBodiesReading?: number;
  /** Largest replay batch (default 100,000 rows / 16 MiB): bigger batches, fewer parts; smaller, less memory. */
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
    });
    const metrics = createDrainMetrics(rt.registry, () => spool);
    const replayer = new SpoolReplayer({
      spool,
      store: rt.store,
      writer: rt.writer,
      logger,
      metrics,
      lingerMs: rt.config.WRITER_FLUSH_INTERVAL_MS,
      maxBatchRows: options.replayMaxBatchRows,
      maxBatchBytes: options.replayMaxBatchBytes,
      infileDir: spool.stagingDir,
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
      reading: new ReadingSlots(options.maxBodiesReading ?? 4),
    });
    options.onStarted?.({ spool, replayer, auth });
    return {
      name: 'log-drain',
      async stop() {
        await parsers.close();
        await replayer.stop();
        await spool.close();
        if (spool.bytes > 0) logger.info({ bytes: spool.bytes, lines: spool.pendingRows }, 'log drain spool kept for the next start');
      },
    };
  };
}
