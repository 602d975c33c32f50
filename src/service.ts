import { createServer } from 'node:net';
import { join } from 'node:path';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { ConfigError, isDemoMode, isLoopbackHost, MIN_TOKEN_LENGTH, type Config } from './config.js';
import { createCommandLogger, createLogger, type Logger } from './log.js';
import { createRegistry, gauge } from './metrics.js';
import { openStore, StoreUnavailableError, type Store } from './store/client.js';
import { classifyStoreError, storeErrorCode } from './store/errors.js';
import { migrate, MigrationError, pendingMigrations, type MigrateResult } from './store/migrate.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { BatchWriter } from './store/writer.js';
import { activeReadGate } from './store/read-lanes.js';
import { healthRoutes } from './http/health.js';
import { installHostCheck } from './http/host-check.js';
import { installProblemHandlers, problemClientErrorHandler, problemFrameworkError, sendProblem } from './http/problem.js';
import { DRAIN_PATH, drainPath, redactDrainPath } from './ingest/drain/auth.js';
import type { Component, Extension, Runtime } from './runtime.js';
import { commandHost } from './http/command-host.js';
import { retryDelayMs, STORE_STARTUP_RETRY } from './retry.js';

export interface Service extends Runtime {
  app: FastifyInstance;
  /** http://host:port the service listens on. */
  url: string;
  /** Stop accepting requests, stop the scheduler, flush the writer, close the store: in that order. */
  close(): Promise<void>;
}

export interface ServiceOptions {
  logger?: Logger;
  registry?: Registry;
  /** Registers routes and starts background work once the store is ready. */
  extensions?: Extension[];
  /** The clock answers are given at (default: the machine's). */
  now?: () => Date;
}

/**
 * With COLLECTOR_SHARD, shard 0 applies the migrations; the other instances wait until the store has them all (then
 * `migrate` finds nothing to do), so two instances never run the same DDL at once.
 */
async function waitForMigrations(store: Store, logger: Logger, shard: { index: number; count: number }): Promise<void> {
  for (let waited = 0; ; waited++) {
    // Before shard 0 has created schema_migrations, reading it fails: everything is pending then.
    const pending = await pendingMigrations(store).catch(() => ['(none applied yet)']);
    if (pending.length === 0) return;
    if (waited % 30 === 0) {
      logger.info({ pending, shard }, `collector shard ${shard.index}/${shard.count}: waiting for shard 0 to apply ${pending.length} migration(s)`);
    }
    await sleep(1000);
  }
}

/**
 * The migrations, with a transient store error (a lost answer, a 503, a reset connection: classifyStoreError) retried
 * with backoff until `deadlineMs`; every statement is idempotent and the ledger insert carries a deduplication token,
 * so a retry repeats nothing. A permanent error, or one past the deadline, is one line (StoreUnavailableError).
 */
async function migrateWithRetry(store: Store, logger: Logger, deadlineMs: number): Promise<MigrateResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await migrate(store, { logger });
    } catch (err) {
      const storeError = err instanceof MigrationError ? err.cause : err;
      // A MigrationError of our own (a changed file, a name clash) carries no store error: no retry mends it.
      if (storeError === undefined) throw err;
      const transient = classifyStoreError(storeError) === 'transient';
      if (!transient || Date.now() >= deadlineMs) {
        if (err instanceof MigrationError) throw err;
        if (!transient) throw new MigrationError(`the migrations could not run on ${store.location}: ${storeErrorCode(storeError)}`, undefined, storeError);
        throw new StoreUnavailableError(store.location, new Error(`the migrations met ${storeErrorCode(storeError)} until CLICKHOUSE_CONNECT_TIMEOUT_MS ran out`));
      }
      const delayMs = Math.min(retryDelayMs(STORE_STARTUP_RETRY, attempt), Math.max(0, deadlineMs - Date.now()));
      logger.warn({ store: store.location, attempt, err: storeErrorCode(storeError), retryInMs: delayMs }, 'store error while migrating; retrying');
      await sleep(delayMs);
    }
  }
}

/** Opens and migrates the store, builds the writer: what `serve` and the one-shot commands share. */
export async function openRuntime(
  config: Config,
  opts: { logger?: Logger; registry?: Registry; now?: () => Date; writerMaxAttempts?: number } = {},
): Promise<Runtime> {
  const logger = opts.logger ?? createLogger(config.LOG_LEVEL);
  const registry = opts.registry ?? createRegistry();
  const deadlineMs = Date.now() + config.CLICKHOUSE_CONNECT_TIMEOUT_MS;
  const store = await openStore({
    url: config.CLICKHOUSE_URL,
    username: config.CLICKHOUSE_USER,
    password: config.CLICKHOUSE_PASSWORD,
    database: config.CLICKHOUSE_DATABASE,
    cluster: config.CLICKHOUSE_CLUSTER,
    dataDir: config.DATA_DIR,
    connectTimeoutMs: config.CLICKHOUSE_CONNECT_TIMEOUT_MS,
    embedded: { maxMemoryBytes: config.EMBEDDED_MAX_MEMORY_BYTES, cacheBytes: config.EMBEDDED_CACHE_BYTES, heavyReads: config.EMBEDDED_HEAVY_READS_MAX, heavyWaiting: config.EMBEDDED_HEAVY_READS_MAX_WAITING },
    logger,
  });
  try {
    const shard = config.COLLECTOR_SHARD;
    if (shard && shard.index > 0) await waitForMigrations(store, logger, shard);
    const result = await migrateWithRetry(store, logger, deadlineMs);
    const applied = result.applied.length;
    logger.info(
      { store: store.location, mode: store.mode, applied, already: result.skipped },
      applied > 0 ? `store ready: ${applied} migration(s) applied, ${result.skipped} already` : 'store ready: schema up to date',
    );
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
  gauge(registry, {
    name: 'tallyhouse_store_reads',
    help: 'Reads of the embedded store by lane and state: interactive running, heavy running, heavy waiting for one of EMBEDDED_HEAVY_READS_MAX slots; interactive working counts the route handlers and MCP calls heavy reads hold back for',
    labelNames: ['lane', 'state'] as const,
    collect() {
      const stats = activeReadGate()?.stats();
      if (!stats) return;
      this.set({ lane: 'interactive', state: 'running' }, stats.interactiveRunning);
      this.set({ lane: 'heavy', state: 'running' }, stats.heavyRunning);
      this.set({ lane: 'heavy', state: 'waiting' }, stats.heavyWaiting);
      // Route handlers and MCP calls in the interactive lane: heavy reads hold back while this is above 0.
      this.set({ lane: 'interactive', state: 'working' }, stats.interactiveWork);
    },
  });
  const writer = new BatchWriter(store, {
    maxRows: config.WRITER_MAX_ROWS,
    maxBytes: config.WRITER_MAX_BYTES,
    flushIntervalMs: config.WRITER_FLUSH_INTERVAL_MS,
    maxTransientAttempts: opts.writerMaxAttempts,
    infileDir: join(config.DATA_DIR, 'tmp', 'writer'),
    logger: logger.child({ component: 'writer' }),
    registry,
  });
  return { config, logger, registry, store, writer, now: opts.now ?? (() => new Date()) };
}

/** How long a stop lets busy connections finish their requests before closing them (within SHUTDOWN_TIMEOUT_MS). */
const SHUTDOWN_GRACE_MS = 3_000;

/** Attempts of a batch in a one-shot command before it fails (src/store/writer.ts). */
export const COMMAND_WRITE_ATTEMPTS = 8;

/**
 * What a one-shot command runs on: the service's runtime when the service hosts the command for a CLI beside it,
 * else a runtime opened for the command and closed after it.
 */
export async function withCommandRuntime<T>(config: Config, fn: (rt: Runtime) => Promise<T>): Promise<T> {
  const host = commandHost();
  if (host) return fn(host.runtime);
  // A command ends: a batch the store keeps refusing (a full disk) fails it after 8 attempts (about a minute)
  // instead of retrying for ever.
  const rt = await openRuntime(config, { logger: createCommandLogger(config.CLI_LOG_LEVEL), writerMaxAttempts: COMMAND_WRITE_ATTEMPTS });
  try {
    return await fn(rt);
  } finally {
    await closeRuntime(rt);
  }
}

export async function closeRuntime(rt: Runtime): Promise<void> {
  try {
    await rt.writer.close();
  } finally {
    await rt.store.close();
  }
}

/** A request slower than this is logged at warn. */
const SLOW_REQUEST_MS = 2_000;

export class PortInUseError extends Error {
  constructor(host: string, port: number) {
    super(`port ${port} on ${host} is already in use (another Tallyhouse?): stop that process or set TALLYHOUSE_PORT to a free port`);
    this.name = 'PortInUseError';
  }
}

/** Binds and releases the port, so a conflict is found before anything starts (the real bind comes last). */
export async function assertPortFree(host: string, port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => reject(err.code === 'EADDRINUSE' ? new PortInUseError(host, port) : err));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/** What a person starting Tallyhouse needs to know, as fields of the "listening" line. */
function startupBanner(config: Config, rt: Runtime, url: string): Record<string, unknown> {
  const today = rt.now().toISOString().slice(0, 10);
  const monthStart = `${today.slice(0, 7)}-01`;
  const tomorrow = new Date(Date.parse(today) + 86_400_000).toISOString().slice(0, 10);
  return {
    url,
    mode: isDemoMode(config) ? 'demo (built-in platform simulator)' : 'platform',
    store: `${rt.store.mode} ${rt.store.location}`,
    api: `${url}/api/v1`,
    openapi: `${url}/api/v1/openapi.json`,
    metrics: `${url}/metrics`,
    logDrain: `POST ${url}${config.LOG_DRAIN_URL_TOKEN ? redactDrainPath(drainPath(config.LOG_DRAIN_URL_TOKEN)) : DRAIN_PATH}`,
    example: `curl '${url}/api/v1/cost?from=${monthStart}&to=${tomorrow}&group_by=app'`,
    dashboards: 'dashboards/ (Grafana provisioning; docker compose up runs Grafana with them)',
  };
}

/**
 * API_TOKENS set says the operator means the query API to be private; /metrics carries the same cost per app, and
 * without METRICS_TOKEN any process that reaches the loopback port reads it (issue 49.7: documented, not warned).
 */
export function warnOpenMetrics(config: Pick<Config, 'API_TOKENS' | 'METRICS_TOKEN'>, logger: Logger): void {
  if ((config.API_TOKENS ?? []).length > 0 && !config.METRICS_TOKEN) {
    logger.warn(
      { variable: 'METRICS_TOKEN' },
      'API_TOKENS is set but METRICS_TOKEN is not: GET /metrics (month-to-date cost per app, budgets) answers without a token to anyone who reaches the port; set METRICS_TOKEN',
    );
  }
}

export async function startService(config: Config, opts: ServiceOptions = {}): Promise<Service> {
  if (!config.METRICS_TOKEN && !isLoopbackHost(config.HOST)) {
    // Like the query API: cost per app is not served to anyone who can reach a public address.
    throw new ConfigError([
      {
        variable: 'METRICS_TOKEN',
        expected: `a token of at least ${MIN_TOKEN_LENGTH} characters when HOST is not a loopback address: GET /metrics carries month-to-date cost per app`,
      },
      // Named together (issue 30.8): API_TOKENS was named only on the next start, once METRICS_TOKEN was set.
      ...((config.API_TOKENS ?? []).length === 0
        ? [{ variable: 'API_TOKENS', expected: `comma-separated tokens of at least ${MIN_TOKEN_LENGTH} characters each when HOST is not a loopback address: the query API answers cost and logs` }]
        : []),
    ]);
  }
  if ((config.API_TOKENS ?? []).length === 0 && !isLoopbackHost(config.HOST)) {
    throw new ConfigError([
      { variable: 'API_TOKENS', expected: `comma-separated tokens of at least ${MIN_TOKEN_LENGTH} characters each when HOST is not a loopback address: the query API answers cost and logs` },
    ]);
  }
  // The port first: a busy port is one line before the store, the simulator or a job has started.
  if (config.PORT !== 0) await assertPortFree(config.HOST, config.PORT);
  const rt = await openRuntime(config, opts);
  warnOpenMetrics(config, rt.logger);
  const app = Fastify({
    loggerInstance: rt.logger.child({ component: 'http' }),
    // Routine requests (the drain pushes every few seconds) log at debug; errors and slow requests at warn.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 1024 * 1024,
    // Behind compose/k8s a stuck client must not hold shutdown hostage.
    forceCloseConnections: 'idle',
    // Requests that still arrive on an open connection while the service stops are answered 503 by the hook below,
    // as a problem document (fastify's own answer had another shape); so are the errors Node meets before a request.
    return503OnClosing: false,
    clientErrorHandler: problemClientErrorHandler,
    // The router's own refusals (a bad percent-encoding, an over-long path parameter) as problem documents too,
    // with a fixed text: fastify's echoed the whole path back.
    frameworkErrors: problemFrameworkError,
    // A request (a push body above all) not received whole within PUSH_BODY_TIMEOUT_MS: Node answers 408 and closes
    // the connection; checked often enough that the deadline holds to a small fraction (src/ingest/body-budget.ts).
    // headersTimeout must not exceed it: Node then swaps the two, and the body deadline becomes the headers' 60 s.
    requestTimeout: config.PUSH_BODY_TIMEOUT_MS,
    http: {
      headersTimeout: Math.min(60_000, config.PUSH_BODY_TIMEOUT_MS),
      connectionsCheckingInterval: Math.max(100, Math.min(5_000, Math.floor(config.PUSH_BODY_TIMEOUT_MS / 10))),
    },
  }) as unknown as FastifyInstance;
  // First of all hooks, so every route (API, /metrics, push endpoints, admin) refuses a rebound Host.
  installHostCheck(app, config);
  // Every error any route answers is application/problem+json (src/http/problem.ts), unknown paths included.
  installProblemHandlers(app);
  let stopping = false;
  app.addHook('onRequest', async (_request, reply) => {
    if (stopping) return sendProblem(reply.header('connection', 'close'), 503, 'the service is stopping; retry (on another instance)', { code: 'stopping' });
  });
  // Whatever answers a request while the service stops (a hook before the one above), the connection then closes:
  // a client sending on it steadily would otherwise keep it busy, and the stop waiting for it.
  app.addHook('onSend', async (_request, reply, payload) => {
    if (stopping) reply.header('connection', 'close');
    return payload;
  });
  // A refused request's reason, from the error body it is answered with (issue 30.13: every 400 was logged as
  // "WARN request failed" with no reason, so the log could not say what the client got wrong).
  const reasons = new WeakMap<object, string>();
  app.addHook('onSend', async (request, reply, payload) => {
    if (reply.statusCode >= 400 && typeof payload === 'string' && payload.length <= 16_384 && payload.startsWith('{')) {
      try {
        const body = JSON.parse(payload) as { detail?: unknown; error?: { message?: unknown } | string; message?: unknown };
        const reason = body.detail ?? (typeof body.error === 'object' ? body.error?.message : body.message ?? body.error);
        if (typeof reason === 'string') reasons.set(request, reason.slice(0, 500));
      } catch {
        // not JSON after all: no reason to add
      }
    }
    return payload;
  });
  app.addHook('onResponse', async (request, reply) => {
    const fields = { method: request.method, url: redactDrainPath(request.url), statusCode: reply.statusCode, durationMs: Math.round(reply.elapsedTime), reason: reasons.get(request) };
    // A client's mistake (4xx) is the client's to fix: info with the reason; the service's own failures warn.
    if (reply.statusCode >= 500) request.log.warn(fields, 'request failed');
    else if (reply.statusCode >= 400) request.log.info(fields, `request refused (${reply.statusCode})${fields.reason ? `: ${fields.reason}` : ''}`);
    else if (reply.elapsedTime >= SLOW_REQUEST_MS) request.log.warn(fields, 'slow request');
    else request.log.debug(fields, 'request completed');
  });
  await app.register(healthRoutes, { store: rt.store, registry: rt.registry, metricsToken: config.METRICS_TOKEN });
  const components: Component[] = [];
  for (const extend of opts.extensions ?? []) {
    const component = await extend({ ...rt, app });
    if (component) components.push(component);
  }
  // With the web console (src/console/), / is its front door (a relative redirect, so it holds under a proxy's
  // path prefix); without it, a list of what is here.
  const hasConsole = app.hasRoute({ method: 'GET', url: '/console/' });
  app.get('/', async (_request, reply) =>
    hasConsole
      ? reply.redirect('console/', 302)
      : { service: 'tallyhouse', links: { api: '/api/v1', openapi: '/api/v1/openapi.json', metrics: '/metrics', health: '/healthz', ready: '/readyz' } },
  );
  try {
    await app.listen({ port: config.PORT, host: config.HOST });
  } catch (err) {
    for (const c of components.reverse()) await c.stop().catch(() => undefined);
    await closeRuntime(rt);
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const url = `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${port}`;
  const consoleUrl = hasConsole ? `${config.PUBLIC_URL ?? url}/console/` : undefined;
  rt.logger.info(
    { ...(consoleUrl ? { console: consoleUrl } : {}), ...startupBanner(config, rt, url) },
    `${consoleUrl ? `console ${consoleUrl} | ` : ''}tallyhouse listening on ${url}; try: curl ${url}/api/v1`,
  );

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      stopping = true;
      // Connections still busy after a grace period are closed: a stop never waits on a client.
      const grace = setTimeout(() => {
        rt.logger.warn({ graceMs: SHUTDOWN_GRACE_MS }, 'connections still busy while stopping: closing them');
        app.server.closeAllConnections();
      }, SHUTDOWN_GRACE_MS);
      const started = Date.now();
      try {
        await app.close();
      } finally {
        clearTimeout(grace);
      }
      // A slow part of the stop names itself (a stop past SHUTDOWN_TIMEOUT_MS exits 1: the log says where it was).
      const slow = (part: string, since: number) => {
        if (Date.now() - since >= 1_000) rt.logger.warn({ part, ms: Date.now() - since }, `stopping: ${part} took a while`);
      };
      slow('the HTTP server and its hooks', started);
      for (const c of [...components].reverse()) {
        const since = Date.now();
        try {
          await c.stop();
        } catch (err) {
          rt.logger.error({ err, component: c.name }, 'component did not stop cleanly');
        }
        slow(`component ${c.name}`, since);
      }
      const pending = rt.writer.pending();
      if (Object.keys(pending).length > 0) rt.logger.info({ pending }, 'flushing buffered rows');
      await closeRuntime(rt);
      rt.logger.info('tallyhouse stopped');
    })();
    return closing;
  };
  return { ...rt, app, url, close };
}
