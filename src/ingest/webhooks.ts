// POST /v1/webhooks/queue: the platform's queue-completion webhooks. Verified as the interface's "Signature
// verification" says (four X-Svc-Webhook-* headers, a timestamp within 300 s, Ed25519 over
// "request_id\nuser_id\ntimestamp\nsha256hex(raw body)" with any key of the key set), then stored in
// webhook_deliveries (one row per request_id after merges: repeats and retries collapse). The answer waits for
// the store (a 2xx means the delivery is kept); a slow or unavailable store gets a 503 and the platform retries.
import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Counter, Histogram, type Registry } from 'prom-client';
import { request } from 'undici';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Extension } from '../runtime.js';
import { MAX_REJECT_RAW_BYTES, REJECTS_TABLE, type BatchWriter } from '../store/writer.js';
import { webhookDeliveries, type WebhookDeliveryRow } from '../store/tables/webhook-deliveries.js';
import { toDateTime64 } from '../values.js';
import { boundedJson, MAX_NESTING_DEPTH, valueDepth } from '../json-nesting.js';
import { BUSY_RETRY_AFTER_SECONDS, closeWithoutReading, defaultPushLimits, PushBudgets, pushBudgets, type BudgetLease } from './body-budget.js';
import { join } from 'node:path';
import { PlatformClient } from '../platform/index.js';
import { platformPaths } from '../platform/paths.js';
import { MetaResponse } from '../platform/schemas.js';
import { PlatformNotStarted, WEBHOOK_RANGES_FILE, WebhookSources } from './webhook-sources.js';
import { PROBLEM_SCHEMA, sendProblem } from '../http/problem.js';

export const WEBHOOK_PATH = '/v1/webhooks/queue';
export const TIMESTAMP_LEEWAY_SECONDS = 300;
/** Results over 1 MB exist (interface limits); a webhook body larger than this is refused (413). */
export const MAX_WEBHOOK_BODY_BYTES = 16 * 1024 * 1024;

const HEADERS = {
  requestId: 'x-svc-webhook-request-id',
  userId: 'x-svc-webhook-user-id',
  timestamp: 'x-svc-webhook-timestamp',
  signature: 'x-svc-webhook-signature',
} as const;

export type WebhookOutcome =
  | 'accepted'
  | 'missing_headers'
  | 'stale_timestamp'
  | 'invalid_signature'
  | 'keys_unavailable'
  | 'store_unavailable'
  | 'too_large'
  | 'busy'
  | 'forbidden_address';

/** The key set's URL: WEBHOOK_JWKS_URL, else SVC_BASE_URL/.well-known/jwks.json. */
export function jwksUrl(config: Pick<Config, 'WEBHOOK_JWKS_URL' | 'SVC_BASE_URL'>): string {
  return config.WEBHOOK_JWKS_URL ?? `${config.SVC_BASE_URL.replace(/\/+$/, '')}/.well-known/jwks.json`;
}

export class KeySetUnavailableError extends Error {
  constructor(readonly url: string, reason: string) {
    super(`the webhook key set at ${url} cannot be fetched: ${reason}`);
    this.name = 'KeySetUnavailableError';
  }
}

export interface KeySetOptions {
  /** How long fetched keys are used (the interface: at most 24 hours; never longer, even when a refresh fails). */
  maxAgeMs?: number;
  /** A signature no cached key verifies refetches the set, at most this often (a bad request cannot make us hammer it). */
  minRefetchIntervalMs?: number;
  /** A failed fetch is remembered this long: requests meanwhile get its answer without a new outbound fetch. */
  failureMemoryMs?: number;
  timeoutMs?: number;
  logger?: Logger;
  now?: () => number;
}

const DAY_MS = 24 * 3_600_000;

/** The Ed25519 keys of the key set (`{keys: [{kty: OKP, crv: Ed25519, x}]}`), cached, fetched one at a time. */
export class KeySet {
  private keys: KeyObject[] | undefined;
  private fetchedAt = 0;
  private inflight: Promise<KeyObject[]> | null = null;
  private lastFailure: { at: number; error: KeySetUnavailableError } | undefined;
  // Stryker disable next-line BooleanLiteral: keys are held only after a successful fetch, which sets warnedStale to false before it is ever read
  private warnedStale = false;
  private readonly maxAgeMs: number;
  private readonly minRefetchIntervalMs: number;
  private readonly failureMemoryMs: number;
  private readonly timeoutMs: number;
  private readonly now: () => number;

  /** `url` may be a function: resolved at each fetch (demo mode learns the simulator's address after start-up). */
  constructor(private readonly source: string | (() => string), private readonly opts: KeySetOptions = {}) {
    this.maxAgeMs = Math.min(opts.maxAgeMs ?? DAY_MS, DAY_MS);
    this.minRefetchIntervalMs = opts.minRefetchIntervalMs ?? 30_000;
    this.failureMemoryMs = opts.failureMemoryMs ?? 30_000;
    this.timeoutMs = opts.timeoutMs ?? 5_000;
    this.now = opts.now ?? Date.now;
  }

  get url(): string {
    return typeof this.source === 'string' ? this.source : this.source();
  }

  /**
   * Cached keys while fresh (under 24 hours since fetched); otherwise fetched. Keys older than that are never
   * used: while the set cannot be refreshed, deliveries are refused (503) and the platform retries them.
   */
  async current(): Promise<KeyObject[]> {
    if (this.keys && this.now() - this.fetchedAt < this.maxAgeMs) return this.keys;
    try {
      return await this.fetch();
    } catch (err) {
      if (this.keys && !this.warnedStale) {
        // Once per outage, not once per refused delivery.
        this.warnedStale = true;
        this.opts.logger?.error({ url: this.url, err: (err as Error).message }, 'webhook key set is older than 24 hours and cannot be refreshed; deliveries are refused (503) until it can');
      }
      throw err;
    }
  }

  /** After an unknown signature: the set again, unless it was fetched very recently. */
  async refetch(): Promise<KeyObject[] | undefined> {
    if (this.keys && this.now() - this.fetchedAt < this.minRefetchIntervalMs) return undefined;
    return this.fetch();
  }

  private fetch(): Promise<KeyObject[]> {
    const failure = this.lastFailure;
    if (failure && this.now() - failure.at < this.failureMemoryMs) return Promise.reject(failure.error);
    this.inflight ??= this.load().then(
      (keys) => {
        this.lastFailure = undefined;
        this.warnedStale = false;
        return keys;
      },
      (err: KeySetUnavailableError) => {
        this.lastFailure = { at: this.now(), error: err };
        throw err;
      },
    ).finally(() => {
      this.inflight = null;
    });
    return this.inflight;
  }

  private async load(): Promise<KeyObject[]> {
    let body: unknown;
    const url = this.url;
    try {
      const res = await request(url, { headersTimeout: this.timeoutMs, bodyTimeout: this.timeoutMs, signal: AbortSignal.timeout(this.timeoutMs) });
      if (res.statusCode !== 200) {
        await res.body.dump();
        throw new Error(`HTTP ${res.statusCode}`);
      }
      body = await res.body.json();
    } catch (err) {
      throw new KeySetUnavailableError(url, (err as Error).message);
    }
    const entries = (body as { keys?: unknown })?.keys;
    if (!Array.isArray(entries)) throw new KeySetUnavailableError(url, 'the answer has no `keys` array');
    const keys: KeyObject[] = [];
    for (const k of entries as Array<Record<string, unknown>>) {
      if (typeof k?.x !== 'string' || (k.kty !== undefined && k.kty !== 'OKP') || (k.crv !== undefined && k.crv !== 'Ed25519')) continue;
      try {
        keys.push(createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: k.x }, format: 'jwk' }));
      } catch {
        // not a valid Ed25519 public key: skipped
      }
    }
    if (keys.length === 0) throw new KeySetUnavailableError(url, 'no Ed25519 key in the set');
    this.keys = keys;
    this.fetchedAt = this.now();
    this.opts.logger?.info({ url, keys: keys.length }, 'webhook key set fetched');
    return keys;
  }
}

export interface SignedDelivery {
  requestId: string;
  userId: string;
  timestamp: number;
  message: Buffer;
  signature: Buffer;
}

interface SignedHeaders {
  requestId: string;
  userId: string;
  timestampText: string;
  signatureHex: string;
}

type Refusal = { outcome: WebhookOutcome; reason: string };

/** Steps 2-3 of the verification, on the headers alone: they are checked before the body is read. */
export function readSignedHeaders(headers: Record<string, string | string[] | undefined>, nowSeconds: number): SignedHeaders | Refusal {
  const value = (name: string) => {
    const v = headers[name];
    return typeof v === 'string' ? v.trim() : undefined;
  };
  const requestId = value(HEADERS.requestId);
  const userId = value(HEADERS.userId);
  const timestampText = value(HEADERS.timestamp);
  const signatureHex = value(HEADERS.signature);
  const missing = Object.entries(HEADERS)
    .filter(([, name]) => !value(name))
    .map(([, name]) => name.replace(/(^|-)(\w)/g, (_m, dash: string, c: string) => dash + c.toUpperCase()));
  if (missing.length > 0 || !requestId || !userId || !timestampText || !signatureHex) {
    return { outcome: 'missing_headers', reason: `missing ${missing.join(', ')}` };
  }
  if (!/^\d+$/.test(timestampText)) return { outcome: 'stale_timestamp', reason: 'X-Svc-Webhook-Timestamp is not Unix seconds' };
  if (Math.abs(nowSeconds - Number(timestampText)) > TIMESTAMP_LEEWAY_SECONDS) {
    return { outcome: 'stale_timestamp', reason: `X-Svc-Webhook-Timestamp is more than ${TIMESTAMP_LEEWAY_SECONDS} s away from the current time` };
  }
  if (!/^[0-9a-fA-F]{128}$/.test(signatureHex)) {
    return { outcome: 'invalid_signature', reason: 'X-Svc-Webhook-Signature is not a hex Ed25519 signature (128 hex digits)' };
  }
  return { requestId, userId, timestampText, signatureHex };
}

/** Steps 2-4 of the verification: headers, timestamp, the signed message. */
export function readSignedDelivery(
  headers: Record<string, string | string[] | undefined>,
  raw: Buffer,
  nowSeconds: number,
): SignedDelivery | Refusal {
  const h = readSignedHeaders(headers, nowSeconds);
  if ('outcome' in h) return h;
  return signedDelivery(h, createHash('sha256').update(raw).digest('hex'));
}

/** Step 4: the signed message, from the checked headers and the body's SHA-256 (computed as the body streamed in). */
function signedDelivery(h: SignedHeaders, bodySha256Hex: string): SignedDelivery {
  return {
    requestId: h.requestId,
    userId: h.userId,
    timestamp: Number(h.timestampText),
    message: Buffer.from(`${h.requestId}\n${h.userId}\n${h.timestampText}\n${bodySha256Hex}`, 'utf8'),
    signature: Buffer.from(h.signatureHex, 'hex'),
  };
}

type BodyRead = { parts: Buffer[]; length: number; sha256Hex: string } | { outcome: 'too_large' | 'busy'; reason: string } | { gone: true };

/**
 * The body, hashed as it streams in (the signature covers its SHA-256) and held as the chunks it arrived in (no
 * copy: a forged body is refused without ever being joined), their bytes reserved in `lease` (the budget of
 * unauthenticated bytes): the declared Content-Length at once, before a byte is read (a refusal then costs no
 * reading: reserving chunk by chunk let 16 bodies of one address read at once and cost ~30 MB more in the forged
 * test); a chunked body chunk by chunk. Past MAX_WEBHOOK_BODY_BYTES 413, past the budget 503.
 */
async function readWebhookBody(stream: Readable | undefined, declared: number | undefined, lease: BudgetLease): Promise<BodyRead> {
  const hash = createHash('sha256');
  const parts: Buffer[] = [];
  let length = 0;
  const tooLarge = { outcome: 'too_large' as const, reason: `the body exceeds ${MAX_WEBHOOK_BODY_BYTES} bytes` };
  const overBudget = { outcome: 'busy' as const, reason: 'too many unauthenticated webhook body bytes are held (PUSH_UNVERIFIED_MAX_BYTES, PUSH_UNVERIFIED_MAX_BYTES_PER_ADDRESS); retry later' };
  if (declared !== undefined && declared > MAX_WEBHOOK_BODY_BYTES) return tooLarge;
  if (declared !== undefined && !lease.reserve(declared)) return overBudget;
  if (stream) {
    try {
      // The request stays usable when the body is cut short here, so the answer still reaches the sender.
      for await (const chunk of stream.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
        if (length + chunk.length > MAX_WEBHOOK_BODY_BYTES) return tooLarge;
        if (length + chunk.length > lease.held && !lease.reserve(length + chunk.length - lease.held)) return overBudget;
        length += chunk.length;
        hash.update(chunk);
        parts.push(chunk);
      }
    } catch (err) {
      // Stryker disable next-line OptionalChaining: the body stream rejects with an Error object, never null or undefined
      const code = (err as { code?: unknown })?.code;
      // Stryker disable next-line BooleanLiteral: the caller tests 'gone' in the result, true of {gone: false} as well
      if (code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE' || (err as Error)?.message === 'aborted') return { gone: true };
      throw err;
    }
  }
  return { parts, length, sha256Hex: hash.digest('hex') };
}

export function verifiesWithAny(delivery: Pick<SignedDelivery, 'message' | 'signature'>, keys: readonly KeyObject[]): boolean {
  return keys.some((key) => {
    try {
      return verify(null, delivery.message, key, delivery.signature);
    } catch {
      return false;
    }
  });
}

export const WEBHOOK_REJECT_SOURCE = 'webhook';

/**
 * The stored row of a verified delivery (the body is kept raw; a body that is not JSON keeps empty fields), and
 * the fields that could not be mapped, each with its reason. A field nested past MAX_NESTING_DEPTH is stored empty
 * (its JSON text cannot be rebuilt without exhausting the stack): the delivery itself is kept, with its raw body,
 * so a field no retry can mend never makes the platform retry it for good (CONTRIBUTING.md rule 7).
 */
export function deliveryRow(d: SignedDelivery, raw: Buffer, receivedAtMs: number): { row: WebhookDeliveryRow; unmapped: Array<{ field: string; reason: string; raw: string }> } {
  const text = raw.toString('utf8');
  let body: Record<string, unknown> = {};
  try {
    // JSON.parse is iterative: any depth parses; the fields read from it are checked before they are rebuilt.
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
  } catch {
    // kept raw
  }
  const unmapped: Array<{ field: string; reason: string; raw: string }> = [];
  const str = (field: string, v: unknown): string => {
    if (typeof v === 'string') return v;
    if (v === undefined || v === null) return '';
    const depth = valueDepth(v);
    if (depth > MAX_NESTING_DEPTH) {
      unmapped.push({
        field,
        reason: `${field}: too_deep: nested ${depth} levels deep; at most ${MAX_NESTING_DEPTH} can be stored (stored empty; the raw body keeps it)`,
        raw: boundedJson(v, MAX_REJECT_RAW_BYTES),
      });
      return '';
    }
    return JSON.stringify(v);
  };
  const detail = (body.payload as { detail?: unknown } | null | undefined)?.detail;
  const errorTypes: string[] = [];
  if (Array.isArray(detail)) {
    for (const item of detail) {
      const type = (item as { type?: unknown } | null)?.type;
      if (typeof type === 'string' && !errorTypes.includes(type)) errorTypes.push(type);
    }
  }
  const row: WebhookDeliveryRow = {
    request_id: d.requestId,
    gateway_request_id: str('gateway_request_id', body.gateway_request_id),
    user_id: d.userId,
    status: str('status', body.status),
    error: str('error', body.error),
    error_types: errorTypes,
    payload_error: str('payload_error', body.payload_error),
    signed_at: toDateTime64(d.timestamp * 1000).slice(0, 19),
    received_at: toDateTime64(receivedAtMs),
    raw: text,
  };
  return { row, unmapped };
}

function createWebhookMetrics(registry: Registry) {
  return {
    deliveries: new Counter({
      name: 'tallyhouse_webhooks_total',
      help: 'Queue webhooks received, by outcome (accepted: verified and stored; the rest answered 4xx/5xx, nothing stored).',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    seconds: new Histogram({
      name: 'tallyhouse_webhook_request_duration_seconds',
      help: 'Time from a webhook request to its answer (verification and the store commit).',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
  };
}

export interface WebhookRouteOptions {
  keySet: KeySet;
  writer: Pick<BatchWriter, 'insert' | 'flush' | 'reject'>;
  registry: Registry;
  /** Longest wait for the store before answering 503 (the row stays queued; the retry collapses with it). */
  storeTimeoutMs?: number;
  now?: () => number;
  /** Read slots, slow-body guard and unauthenticated byte budget (default: the configuration's defaults). */
  budgets?: PushBudgets;
  /** Bodies read at once (tests; default WEBHOOK_MAX_BODIES_READING). */
  maxConcurrentBodies?: number;
  /** The platform's webhook source ranges (WEBHOOK_IP_RANGES_CHECK): a connection from outside them is refused at once. */
  sources?: WebhookSources;
}

const STATUS: Record<WebhookOutcome, number> = {
  accepted: 200,
  missing_headers: 401,
  stale_timestamp: 401,
  invalid_signature: 401,
  keys_unavailable: 503,
  store_unavailable: 503,
  too_large: 413,
  busy: 503,
  forbidden_address: 403,
};

/** The webhook route, as an encapsulated plugin reading the raw body (the signature covers its bytes). */
export async function webhookRoutes(app: FastifyInstance, opts: WebhookRouteOptions): Promise<void> {
  const metrics = createWebhookMetrics(opts.registry);
  const now = opts.now ?? Date.now;
  app.removeAllContentTypeParsers();
  // The raw stream: the handler reads it, hashing as it goes, its bytes counted in the unauthenticated budget.
  app.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
  const errorSchema = PROBLEM_SCHEMA;
  const budgets =
    opts.budgets ??
    new PushBudgets({ ...defaultPushLimits(), ...(opts.maxConcurrentBodies ? { WEBHOOK_MAX_BODIES_READING: opts.maxConcurrentBodies } : {}) });
  const leases = new WeakMap<IncomingMessage, BudgetLease>();

  // Authenticate before work (CONTRIBUTING.md rule 17): the headers are checked before a byte of the body is
  // read; the signature itself needs the body, held meanwhile within the budget of unauthenticated bytes.
  app.addHook('onRequest', async (req, reply) => {
    const refuse = (outcome: WebhookOutcome, body: Record<string, unknown>, headers: Record<string, string> = {}) => {
      metrics.deliveries.inc({ outcome });
      req.log.warn({ outcome, reason: body.message }, 'webhook refused');
      closeWithoutReading(reply.raw);
      return sendProblem(reply.headers({ connection: 'close', ...headers }), STATUS[outcome], String(body.message), { code: outcome });
    };
    // The source address first (the platform publishes every address that may send webhooks): a stranger costs
    // one answer, and only admitted addresses compete for read slots.
    const address = budgets.clientAddress(req.raw);
    if (opts.sources?.admits(address) === 'refused') {
      budgets.refused('webhooks', 'address');
      return refuse('forbidden_address', { error: 'Forbidden', message: 'this address is not in the platform\'s webhook_ip_ranges (GET /v1/meta)' });
    }
    const h = readSignedHeaders(req.headers, Math.floor(now() / 1000));
    if ('outcome' in h) return refuse(h.outcome, { error: 'Unauthorized', message: h.reason });
    // An address that delivered a verified webhook within PUSH_PROVEN_TTL_SECONDS reads in the proven lane.
    const proven = budgets.proven.has(address);
    // Without a free slot it waits up to PUSH_SLOT_MAX_WAIT_MS, its bytes unread.
    const waited = budgets.slots.webhooks.acquire(address, req.raw.socket, proven);
    const slot = typeof waited === 'function' || 'refused' in waited ? waited : await waited;
    if (typeof slot !== 'function') {
      budgets.refused('webhooks', 'busy');
      const reason = 'refused' in slot ? slot.refused : 'no read slot';
      return refuse('busy', { error: 'Service Unavailable', message: `too many webhook bodies are being read: ${reason}; retry later` }, { 'retry-after': String(BUSY_RETRY_AFTER_SECONDS) });
    }
    const unwatch = budgets.guard.watch(req.raw, reply.raw, 'webhooks', { address, proven });
    const lease = budgets.unverified.lease(address, { webhook: true });
    leases.set(req.raw, lease);
    const release = () => {
      unwatch();
      lease.release();
      slot();
    };
    // Stryker disable next-line StringLiteral: 'close' follows 'finish' on every response and releases the same way (release runs once)
    reply.raw.once('finish', release);
    reply.raw.once('close', release);
  });

  app.post(
    WEBHOOK_PATH,
    // Stryker disable next-line ObjectLiteral: bodyLimit is not applied to a parser that hands over the raw stream (readWebhookBody enforces 16 MiB), and the answers serialize alike without the schema
    {
      bodyLimit: MAX_WEBHOOK_BODY_BYTES,
      // Stryker disable next-line ObjectLiteral: every answer carries only the schema's properties, each a string: serialized alike with or without the schema
      schema: {
        // Stryker disable next-line ObjectLiteral: every answer carries only the schema's properties, each a string: serialized alike with or without the schema
        response: {
          200: { type: 'object', properties: { status: { type: 'string' }, request_id: { type: 'string' } } },
          401: errorSchema,
          403: errorSchema,
          413: errorSchema,
          503: errorSchema,
        },
      },
    },
    async (req: FastifyRequest, reply: FastifyReply) => {
      const started = process.hrtime.bigint();
      const finish = (outcome: WebhookOutcome, body: Record<string, unknown>, headers: Record<string, string> = {}) => {
        metrics.deliveries.inc({ outcome });
        metrics.seconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
        if (outcome !== 'accepted') req.log.warn({ outcome, reason: body.message }, 'webhook refused');
        if (outcome !== 'accepted') return sendProblem(reply.headers(headers), STATUS[outcome], String(body.message), { code: outcome });
        return reply.code(STATUS[outcome]).headers(headers).send(body);
      };
      const h = readSignedHeaders(req.headers, Math.floor(now() / 1000));
      if ('outcome' in h) return finish(h.outcome, { error: 'Unauthorized', message: h.reason });
      const declaredText = req.headers['content-length'];
      const declared = declaredText === undefined ? undefined : Number(declaredText);
      const body = await readWebhookBody(req.body as Readable | undefined, Number.isFinite(declared) ? declared : undefined, leases.get(req.raw)!);
      if ('gone' in body) return reply;
      if ('outcome' in body) {
        if (body.outcome === 'busy') budgets.refused('webhooks', 'memory');
        const error = body.outcome === 'busy' ? 'Service Unavailable' : 'Payload Too Large';
        const retry: Record<string, string> = body.outcome === 'busy' ? { 'retry-after': String(BUSY_RETRY_AFTER_SECONDS) } : {};
        closeWithoutReading(reply.raw);
        return finish(body.outcome, { error, message: body.reason }, { connection: 'close', ...retry });
      }
      const signed = signedDelivery(h, body.sha256Hex);

      let verified: boolean;
      try {
        verified = verifiesWithAny(signed, await opts.keySet.current());
        if (!verified) {
          // Maybe a key the cached set does not have yet (a rotation): fetch the set once more.
          const fresh = await opts.keySet.refetch();
          verified = fresh !== undefined && verifiesWithAny(signed, fresh);
        }
      } catch (err) {
        req.log.error({ err: (err as Error).message }, 'webhook key set unavailable');
        return finish('keys_unavailable', { error: 'Service Unavailable', message: 'the webhook key set cannot be fetched; retry later' }, { 'retry-after': '10' });
      }
      if (!verified) {
        return finish('invalid_signature', { error: 'Unauthorized', message: 'X-Svc-Webhook-Signature does not verify with any key of the key set' });
      }

      budgets.proven.prove(budgets.clientAddress(req.raw));
      // Verified: only now is the body joined into one buffer (the row keeps it raw).
      const raw = Buffer.concat(body.parts, body.length);
      const { row, unmapped } = deliveryRow(signed, raw, now());
      const insertedRow = opts.writer.insert(webhookDeliveries, [row]);
      void opts.writer.flush(webhookDeliveries).catch(() => undefined);
      let stored: Promise<unknown> = insertedRow;
      if (unmapped.length > 0) {
        // The fields stored empty, each with its reason; the answer waits for them too (a 2xx: all of it kept).
        req.log.warn({ requestId: signed.requestId, fields: unmapped.map((u) => u.field) }, 'webhook stored without the fields it cannot map');
        const rejected = opts.writer.reject(unmapped.map((u) => ({ source: WEBHOOK_REJECT_SOURCE, reason: u.reason, raw: u.raw, batch_id: signed.requestId })));
        // Stryker disable next-line ArrowFunction: the mutant, () => undefined, is this very function
        void opts.writer.flush(REJECTS_TABLE).catch(() => undefined);
        stored = Promise.all([insertedRow, rejected]);
      }
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), opts.storeTimeoutMs ?? 5_000);
      });
      try {
        // Stryker disable next-line ArrowFunction: an undefined result is not 'timeout' either, so it is the same stored answer
        const result = await Promise.race([stored.then(() => 'stored' as const), timedOut]);
        if (result === 'timeout') {
          return finish('store_unavailable', { error: 'Service Unavailable', message: 'the store did not confirm the delivery in time; retry later' }, { 'retry-after': '30' });
        }
      } catch (err) {
        req.log.error({ err: (err as Error).message }, 'webhook delivery could not be stored');
        return finish('store_unavailable', { error: 'Service Unavailable', message: 'the delivery could not be stored; retry later' }, { 'retry-after': '30' });
      } finally {
        clearTimeout(timer);
      }
      return finish('accepted', { status: 'ok', request_id: signed.requestId });
    },
  );
}

export interface WebhookExtensionOptions {
  /** The key set's URL (default: jwksUrl(config)); demo mode passes the simulator's (a function: read when fetched). */
  jwksUrl?: string | (() => string);
  /** Where GET /v1/meta is asked (default SVC_BASE_URL); demo mode passes the simulator's (undefined until it runs). */
  metaBaseUrl?: () => string | undefined;
  minRefetchIntervalMs?: number;
  storeTimeoutMs?: number;
}

/** The platform's webhook_ip_ranges (GET /v1/meta), through the platform client's reading path and retry rule. */
async function fetchWebhookRanges(baseUrl: string, apiKey: string | undefined, logger: Logger): Promise<string[]> {
  const client = new PlatformClient({ baseUrl, apiKey, maxAttempts: 2, maxElapsedMs: 15_000, logger });
  try {
    return (await client.getJson(platformPaths.meta, { schema: MetaResponse })).webhook_ip_ranges;
  } finally {
    await client.close();
  }
}

/**
 * Serves POST /v1/webhooks/queue. The key set is fetched on the first delivery, not at start-up; the webhook source
 * ranges (WEBHOOK_IP_RANGES_CHECK) at start-up, in the background, and every WEBHOOK_IP_RANGES_REFRESH_SECONDS.
 */
export function webhookExtension(options: WebhookExtensionOptions = {}): Extension {
  return async (rt) => {
    const logger = rt.logger.child({ component: 'webhooks' });
    const keySet = new KeySet(options.jwksUrl ?? jwksUrl(rt.config), { minRefetchIntervalMs: options.minRefetchIntervalMs, logger });
    const sources = rt.config.WEBHOOK_IP_RANGES_CHECK
      ? await WebhookSources.open({
          fetchRanges: async () => {
            const base = options.metaBaseUrl ? options.metaBaseUrl() : rt.config.SVC_BASE_URL;
            if (base === undefined) throw new PlatformNotStarted('the platform is not started yet');
            return fetchWebhookRanges(base, rt.config.SVC_API_KEY, logger);
          },
          file: join(rt.config.DATA_DIR, WEBHOOK_RANGES_FILE),
          refreshMs: rt.config.WEBHOOK_IP_RANGES_REFRESH_SECONDS * 1000,
          staleMs: rt.config.WEBHOOK_IP_RANGES_STALE_SECONDS * 1000,
          logger,
          registry: rt.registry,
          now: () => rt.now().getTime(),
        })
      : undefined;
    await rt.app.register(webhookRoutes, {
      keySet,
      writer: rt.writer,
      registry: rt.registry,
      storeTimeoutMs: options.storeTimeoutMs,
      budgets: pushBudgets(rt.app.server, rt.config, rt.registry),
      sources,
    });
    logger.info({ path: WEBHOOK_PATH, sourceCheck: sources !== undefined }, 'webhook receiver ready');
    return {
      name: 'webhooks',
      async stop() {
        sources?.stop();
      },
    };
  };
}
