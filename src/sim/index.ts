// The platform simulator, in-process: `startSim()` serves the Platform APIs of a deterministic simulated world
// over HTTP and exposes the ground truth, the virtual clock and the pushers (webhooks, log drain).
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { SimModel } from './model.js';
import type { World } from './world.js';
import { FaultPlan, RETRYABLE_FAULTS, type FaultKind } from './faults.js';
import { createSimServer, RequestLog } from './server.js';
import type { CacheLimits } from './caches.js';
import { Webhooks, type WebhookDelivery } from './webhooks.js';
import { Drain, type DrainPushOptions, type DrainPushResult } from './drain.js';
import { createTruth, type Truth } from './truth.js';
import { FrontEnd, type FrontEndTarget } from './frontend.js';
import { createLogger, type Logger } from '../log.js';
import type { Scenario } from './scenario.js';

export type { FaultKind } from './faults.js';
export type { Truth, UsageTruthRow, RequestDayTruth, RequestTruth, AppTruth, EventTruth, RevisionTruth, EfficiencyTruthRow } from './truth.js';
export type { RightSizingTruth, RunnerMetricsSample } from './runner-metrics.js';
export type { World, App, Endpoint, MachineType, Owner, Price, ModelInfo } from './world.js';
export type { WebhookDelivery, WebhookAttempt } from './webhooks.js';
export type { FrontEndTarget } from './frontend.js';
export type { DrainRecord, DrainBatch, DrainPushOptions, DrainPushResult } from './drain.js';
export type { Timeframe } from './time.js';
export { ANALYTICS_METRICS, BASE_METRICS } from './analytics.js';
export { RETRYABLE_FAULTS, ALL_FAULTS } from './faults.js';
export { DEFAULT_CACHE_LIMITS, MINIMAL_CACHE_LIMITS, type CacheLimits } from './caches.js';

export const DEFAULT_NOW = '2026-11-21T12:00:00Z';
/** Calls `requestLog()` returns at most (the first ones); a standalone simulator keeps none. */
export const DEFAULT_REQUEST_LOG_LIMIT = 100_000;

export interface SimOptions {
  /** Default 1. */
  seed?: number;
  /** Injected events (src/sim/scenario.ts), listed by the truth endpoint (kind=scenario). */
  scenario?: Scenario;
  /** Default 2026-11-21T12:00:00Z. */
  now?: string | Date;
  /** History before now, days (default 35). */
  days?: number;
  /** Apps the caller owns (default 60); three more belong to another owner. */
  apps?: number;
  /** Mean requests per hour per endpoint (default 20); benchmarks raise it. */
  requestsPerHour?: number;
  faultRate?: number;
  /** Late billing (fault injection): this share of requests is billed `days` (default 3) later than usual. */
  lateBilling?: { rate: number; days?: number };
  /** Fault kinds drawn from (default the retryable ones). */
  faultKinds?: FaultKind[];
  /** How late a `slow` fault answers (default 30000). */
  slowMs?: number;
  /** Seconds in `x-ratelimit-reset` / `Retry-After` of a rate_limit fault (default 1). */
  retryAfterSeconds?: number;
  apiKey?: string;
  adminKey?: string;
  host?: string;
  port?: number;
  webhookUrl?: string;
  /** Backoff before the first webhook retry, doubled each retry (default 1000; tests use a few ms). */
  webhookBackoffBaseMs?: number;
  /** Longest wait between two webhook attempts (default 600000). */
  webhookMaxBackoffMs?: number;
  webhookTimeoutMs?: number;
  /** Share of delivered webhooks delivered again (default 0.05). */
  webhookRepeatRate?: number;
  drainUrl?: string;
  /** HMAC secret of the log drain (random, 64 hex characters, when omitted). */
  drainSecret?: string;
  drainMalformedRate?: number;
  drainGzip?: boolean;
  drainTimeoutMs?: number;
  /** Let the virtual clock run with wall time (sandbox use). Default false: the clock moves only when told. */
  realtime?: boolean;
  /** Where the simulator reports its own failures (default: a `warn`-level logger). */
  logger?: Logger;
  /** How many platform calls `requestLog()` keeps (default DEFAULT_REQUEST_LOG_LIMIT; 0 when nobody reads it). */
  requestLogLimit?: number;
  /** Add the simulator's own memory (RSS, heap, cache sizes) to /metrics; it varies between runs (CLI: on). */
  selfMetrics?: boolean;
  /**
   * Serve exactly what platform-interface.md lists (issue 50.1): no notes-only endpoint (models pricing and billing
   * events, the queue read, the logs paths, /v1/serverless/metrics answer 404), analytics `expand` refused with 422
   * for a name outside the interface's list, success and error rates instead of counts, runner history 24 hours
   * back. What it serves has the same ground truth.
   */
  strictInterface?: boolean;
  /** Bounds of the caches of generated data (default DEFAULT_CACHE_LIMITS; MINIMAL_CACHE_LIMITS keeps nothing). */
  cacheLimits?: CacheLimits;
}

export interface Sim {
  url: string;
  keys: { api: string; admin: string };
  clock: { now(): Date; set(t: string | Date): void; advance(ms: number): void };
  truth: Truth;
  world: World;
  stats(): { requestsServed: number; faultsInjected: Record<string, number>; recordsServed: number };
  requestLog(): Array<{ method: string; path: string; query: Record<string, string | string[]> }>;
  /** Change the fault rate (and kinds) of the running simulator. */
  setFaults(rate: number, kinds?: FaultKind[]): void;
  /** Answer paths matching `pattern` with a 200 whose body never ends (null: stop); a lying platform for tests. */
  setEndless(pattern: RegExp | null): void;
  webhooks: {
    /** The key set served at /.well-known/jwks.json. */
    jwks(): { keys: Array<{ kty: 'OKP'; crv: 'Ed25519'; x: string; kid: string }> };
    deliver(opts: { requestId: string; url?: string; body?: unknown }): Promise<WebhookDelivery>;
    sent(): WebhookDelivery[];
    rotate(): void;
    /** Where clock-driven deliveries go from now on (set after start when the receiver's port is known). */
    setUrl(url: string | undefined): void;
    /** Resolves when all deliveries (retries, repeats) have settled. */
    idle(): Promise<void>;
  };
  /** A web front end of the caller's, reporting to a Faro receiver (demo mode). */
  frontEnd: {
    setTarget(target: FrontEndTarget | undefined): void;
    payloads(fromMs: number, toMs: number): Array<Record<string, unknown>>;
    /** Payloads sent since a target with `record` was set, with the receiver's status (null: no answer). */
    sent(): Array<{ payload: Record<string, unknown>; status: number | null }>;
    idle(): Promise<void>;
  };
  drain: {
    secret: string;
    push(opts?: DrainPushOptions): Promise<DrainPushResult>;
    idle(): Promise<void>;
    enable(): void;
    /** Where clock-driven batches go from now on. */
    setUrl(url: string | undefined): void;
    readonly disabled: boolean;
  };
  /** The live log stream (POST /v1/serverless/logs/stream). */
  logStream: {
    /** Streams open now. */
    readonly open: number;
    /** Cuts every open stream as a network failure would; returns how many. */
    drop(): number;
  };
  close(): Promise<void>;
}

export async function startSim(opts: SimOptions = {}): Promise<Sim> {
  const nowMs = opts.now === undefined ? Date.parse(DEFAULT_NOW) : opts.now instanceof Date ? opts.now.getTime() : Date.parse(opts.now);
  if (!Number.isFinite(nowMs)) throw new Error(`startSim: now is not a time: ${String(opts.now)}`);
  const model = new SimModel({
    seed: opts.seed ?? 1,
    nowMs,
    days: opts.days ?? 35,
    apps: opts.apps ?? 60,
    requestsPerHour: opts.requestsPerHour ?? 20,
    realtime: opts.realtime ?? false,
    cacheLimits: opts.cacheLimits,
    scenario: opts.scenario,
    lateBilling: opts.lateBilling ? { rate: opts.lateBilling.rate, delayMs: (opts.lateBilling.days ?? 3) * 86_400_000 } : undefined,
  });
  const keys = {
    api: opts.apiKey ?? `sim_api_${randomBytes(16).toString('hex')}`,
    admin: opts.adminKey ?? `sim_admin_${randomBytes(16).toString('hex')}`,
  };
  const faults = new FaultPlan(model.world.seed, opts.faultRate ?? 0, opts.faultKinds ?? RETRYABLE_FAULTS, model.caches);
  const webhooks = new Webhooks(model, {
    url: opts.webhookUrl,
    backoffBaseMs: opts.webhookBackoffBaseMs,
    maxBackoffMs: opts.webhookMaxBackoffMs,
    firstTimeoutMs: opts.webhookTimeoutMs,
    retryTimeoutMs: opts.webhookTimeoutMs,
    repeatRate: opts.webhookRepeatRate,
  });
  const drain = new Drain(model, {
    url: opts.drainUrl,
    secret: opts.drainSecret ?? randomBytes(32).toString('hex'),
    malformedRate: opts.drainMalformedRate,
    gzip: opts.drainGzip,
    timeoutMs: opts.drainTimeoutMs,
  });
  const frontEnd = new FrontEnd(model);
  const truth = createTruth(model, webhooks, drain);
  const stats = { requestsServed: 0, recordsServed: 0, faultsInjected: {} as Record<string, number> };
  const requestLog = new RequestLog(opts.requestLogLimit ?? DEFAULT_REQUEST_LOG_LIMIT);
  const lying: { endless: RegExp | null } = { endless: null };
  const { server, pendingTimers, logStreams } = createSimServer({
    model, keys, faults, webhooks, truth, stats, requestLog, selfMetrics: opts.selfMetrics ?? false,
    log: opts.logger ?? createLogger('warn'),
    slowMs: opts.slowMs ?? 30_000,
    retryAfterSeconds: opts.retryAfterSeconds ?? 1,
    configureFaults: (rate, kinds) => faults.configure(rate, kinds),
    lying,
    strictInterface: opts.strictInterface ?? false,
  });

  // Pushes follow the virtual clock: whatever finished between the old and the new "now" is delivered.
  let pushedUntil = model.clock.nowMs();
  const onClock = (): void => {
    const to = model.clock.nowMs();
    if (to > pushedUntil) {
      webhooks.onClock(pushedUntil, to);
      drain.onClock(pushedUntil, to);
      frontEnd.onClock(pushedUntil, to);
    }
    pushedUntil = Math.max(pushedUntil, to);
  };
  model.clock.onChange(onClock);
  const ticker = opts.realtime ? setInterval(onClock, 5000) : null;
  ticker?.unref();

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  return {
    url: `http://${host}:${address.port}`,
    keys,
    clock: {
      now: () => model.clock.now(),
      set: (t) => model.clock.set(t),
      advance: (ms) => model.clock.advance(ms),
    },
    truth,
    world: model.world,
    stats: () => ({ requestsServed: stats.requestsServed, recordsServed: stats.recordsServed, faultsInjected: { ...stats.faultsInjected } }),
    requestLog: () => requestLog.entries(),
    setFaults: (rate, kinds) => faults.configure(rate, kinds),
    setEndless: (pattern) => {
      lying.endless = pattern;
    },
    webhooks: {
      jwks: () => webhooks.jwks(),
      deliver: (o) => webhooks.deliver(o),
      sent: () => webhooks.sent(),
      rotate: () => webhooks.rotate(),
      setUrl: (url) => webhooks.setUrl(url),
      idle: () => webhooks.idle(),
    },
    drain: {
      secret: drain.secret,
      push: (o) => drain.push(o),
      idle: () => drain.idle(),
      enable: () => drain.enable(),
      setUrl: (url) => drain.setUrl(url),
      get disabled() {
        return drain.disabled;
      },
    },
    logStream: {
      get open() {
        return logStreams.size;
      },
      drop: () => logStreams.drop(),
    },
    frontEnd: {
      setTarget: (target) => frontEnd.setTarget(target),
      payloads: (fromMs, toMs) => frontEnd.payloads(fromMs, toMs),
      sent: () => frontEnd.sent(),
      idle: () => frontEnd.idle(),
    },
    async close() {
      if (ticker) clearInterval(ticker);
      frontEnd.close();
      webhooks.close();
      drain.close();
      logStreams.close();
      for (const t of pendingTimers) clearTimeout(t);
      pendingTimers.clear();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
