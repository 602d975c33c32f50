import { setTimeout as sleep } from 'node:timers/promises';
import { Agent } from 'undici';
import type { Dispatcher } from 'undici';
import type { ZodType } from 'zod';
import type { Registry } from 'prom-client';
import type { Logger } from '../log.js';
import { counter, gauge } from '../metrics.js';
import {
  PlatformError,
  errorFromException,
  errorFromResponse,
  type CallDescription,
  type HeaderBag,
  type KeyScope,
} from './errors.js';
import { DEFAULT_MAX_RESPONSE_BYTES, ERROR_BODY_MAX_BYTES, SMALL_RESPONSE_BYTES, endpointTemplate, scopeForPath } from './paths.js';
import { appendQuery, type ArrayFormat, type QueryParams } from './query.js';
import { retryDelayMs } from '../retry.js';

export type { QueryParams } from './query.js';

export interface PlatformClientOptions {
  /** SVC_BASE_URL; may carry a path prefix, which is put before every request path. */
  baseUrl: string;
  /** SVC_API_KEY: every call but the admin-scope ones; without it they fail before sending (`missing_key`). */
  apiKey?: string;
  /** SVC_ADMIN_KEY: admin-scope calls only (least privilege: never sent where an API-scope key will do). */
  adminKey?: string;
  /** undici timers have about one second of resolution above 1,000 ms, so these are approximate. */
  connectTimeoutMs?: number;
  headersTimeoutMs?: number;
  /** Longest silence between two body chunks, not the time for the whole body. */
  bodyTimeoutMs?: number;
  maxAttempts?: number;
  /**
   * Platform calls in flight at once, over every caller of this client (PLATFORM_MAX_IN_FLIGHT). A 429 pauses
   * every caller until the platform's wait has passed, not only the one that met it.
   */
  maxInFlight?: number;
  /** Total time for one call, backoff included; an attempt still running when it ends is aborted. */
  maxElapsedMs?: number;
  backoffBaseMs?: number;
  maxBackoffMs?: number;
  /** Connections per origin. */
  connections?: number;
  logger?: Logger;
  userAgent?: string;
  arrayFormat?: ArrayFormat;
  /** Source of jitter in [0, 1); for tests. */
  random?: () => number;
  /**
   * PLATFORM_MAX_RESPONSE_BYTES: the most bytes one answer may have (SMALL_RESPONSE_BYTES are tighter where the
   * interface's payload is small). A longer answer is cut off unread and fails the call (`response_too_large`).
   */
  maxResponseBytes?: number;
  /** Where the client's metrics go (answers cut off, the platform's concurrency limit, deprecations). */
  registry?: Registry;
}

export interface RetryInfo {
  /** The attempt that failed (1-based). */
  attempt: number;
  /** The wait before the next attempt. */
  delayMs: number;
  error: PlatformError;
}

export interface CallContext {
  signal?: AbortSignal;
  onRetry?: (info: RetryInfo) => void;
}

export interface CallOptions<T = unknown> {
  query?: QueryParams;
  /** Defaults to the scope the path needs (admin for the usage endpoints, api otherwise). */
  scope?: KeyScope;
  schema?: ZodType<T>;
  ctx?: CallContext;
}

export interface TextCallOptions {
  /** A tighter byte limit than the path's (a scrape target's body_size_limit); never a looser one. */
  maxBytes?: number;
  query?: QueryParams;
  scope?: KeyScope;
  ctx?: CallContext;
  accept?: string;
  headers?: Record<string, string>;
}

export interface TextResponse {
  body: string;
  contentType: string | null;
}

export interface PaginateOptions<T> {
  /** A `cursor` here resumes from a saved cursor. */
  query?: QueryParams;
  scope?: KeyScope;
  schema: ZodType<T>;
  ctx?: CallContext;
  method?: 'GET' | 'POST';
  body?: unknown;
  /**
   * Ask for the next page as soon as this one has arrived, so the platform answers it while the caller works on
   * this one (one call per walk, as without; it holds its in-flight slot meanwhile). A caller that stops early has
   * cost one call it never reads, and that call's retries (reported to ctx.onRetry) and 429 pause (which every
   * caller of the client waits out) count as any other call's.
   */
  prefetch?: boolean;
  /**
   * The envelope's list (default `items`, the interface's list envelope): with a numeric `limit` in the query, a
   * page holding more of them than asked for is refused (`page_over_limit`, issue 49.2): a platform that ignores
   * the limit would otherwise make every page as large as it likes.
   */
  itemsField?: string;
}

/** One page of a walk and its envelope. */
interface FetchedPage<T> {
  page: T;
  hasMore: unknown;
  nextCursor: unknown;
  call: CallDescription | null;
}

/** A promise read later, or never (a prefetch the caller stopped before): marked handled now, or Node ends the process. */
function awaitedLater<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

const DEFAULTS = {
  connectTimeoutMs: 10_000,
  headersTimeoutMs: 30_000,
  bodyTimeoutMs: 30_000,
  maxAttempts: 6,
  maxInFlight: 4,
  maxElapsedMs: 120_000,
  backoffBaseMs: 500,
  maxBackoffMs: 30_000,
  connections: 8,
  userAgent: 'tallyhouse/0.1',
  arrayFormat: 'repeat' as ArrayFormat,
};

interface RequestSpec<T> {
  method: 'GET' | 'POST';
  path: string;
  query: QueryParams | undefined;
  jsonBody?: unknown;
  scope: KeyScope | undefined;
  accept: string;
  headers?: Record<string, string>;
  ctx: CallContext | undefined;
  /** A tighter byte limit than responseLimitBytes(path). */
  maxBytes?: number;
  /** Turns a 2xx answer into the result; throws a PlatformError (retryable or not) when it cannot. */
  read: (status: number, headers: HeaderBag, body: string, call: CallDescription) => T;
}

function isSuccess(status: number): boolean {
  return status >= 200 && status < 300;
}

/**
 * The platform client's policy (src/retry.ts): exponential, full jitter (every collector of every instance retries
 * the same platform), a uniform wait in [0, min(max, base * 2^(attempt-1))).
 */
export function backoffDelayMs(attempt: number, baseMs: number, maxMs: number, random: () => number): number {
  return retryDelayMs({ baseMs, maxMs, growth: 'exponential', jitter: 'full' }, attempt, random);
}

function parseJsonBody(status: number, body: string, call: CallDescription): unknown {
  // 204/205 carry no body by definition; any other empty 2xx body is a cut-off answer.
  if (status === 204 || status === 205) return null;
  try {
    return JSON.parse(body);
  } catch {
    // No `cause`: the SyntaxError's message quotes the body.
    throw new PlatformError({
      message: `${call.method} ${call.path} answered ${status} with a body that is not complete JSON (${Buffer.byteLength(body)} bytes)`,
      status,
      type: 'truncated_body',
      retryable: true,
      scope: call.scope,
      keyUsed: call.keyUsed,
      method: call.method,
      path: call.path,
    });
  }
}

function validate<T>(schema: ZodType<T>, value: unknown, status: number, call: CallDescription): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue && issue.path.length > 0 ? issue.path.map(String).join('.') : '(root)';
  // The zod issue names the place and what was expected; the body itself never goes into the message.
  throw new PlatformError({
    // Stryker disable next-line OptionalChaining: a failed zod parse always carries at least one issue
    message: `${call.method} ${call.path} answered ${status} with a response that does not match the expected schema at ${where}: ${issue?.message ?? 'invalid'}`,
    status,
    type: 'invalid_response',
    retryable: false,
    scope: call.scope,
    keyUsed: call.keyUsed,
    method: call.method,
    path: call.path,
  });
}

/**
 * Client of the Platform API: one undici Agent (a connection pool per origin), key selection by scope,
 * the retry rule of errors.ts, pagination and response validation. Knows nothing of ClickHouse.
 *
 * The retry loop is written here rather than with undici's RetryAgent because the rule needs things that
 * agent does not do: `X-Svc-Retryable`, `x-ratelimit-reset`, retrying a 2xx whose JSON is cut off, a total
 * time budget, and reporting each retry to the caller.
 */
export class PlatformClient {
  readonly #base: URL;
  readonly #basePath: string;
  readonly #apiKey: string | null;
  readonly #adminKey: string | null;
  readonly #agent: Agent;
  readonly #logger: Logger | null;
  readonly #maxAttempts: number;
  readonly #maxElapsedMs: number;
  readonly #backoffBaseMs: number;
  readonly #maxBackoffMs: number;
  readonly #userAgent: string;
  readonly #arrayFormat: ArrayFormat;
  readonly #random: () => number;
  readonly #maxInFlight: number;
  #inFlight = 0;
  readonly #waiting: Array<() => void> = [];
  readonly #maxResponseBytes: number;
  readonly #metrics: ClientMetrics;
  /** Endpoints (templates) whose deprecation headers were logged already: once per endpoint and process. */
  readonly #deprecationsSeen = new Set<string>();
  /** The last concurrency limit a 429 named, logged when it changes. */
  #lastConcurrencyLimit: number | null = null;
  /** performance.now() before which no attempt starts: a 429's wait, shared by every caller. */
  #pausedUntil = 0;
  #closing: Promise<void> | null = null;

  constructor(opts: PlatformClientOptions) {
    let base: URL;
    try {
      base = new URL(opts.baseUrl);
    } catch {
      throw new TypeError('PlatformClient: baseUrl is not a valid URL');
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') {
      throw new TypeError(`PlatformClient: baseUrl must be http or https, got ${base.protocol}`);
    }
    this.#base = base;
    this.#basePath = base.pathname.replace(/\/+$/, '');
    this.#apiKey = opts.apiKey || null;
    this.#adminKey = opts.adminKey || null;
    this.#logger = opts.logger ?? null;
    this.#maxAttempts = Math.max(1, opts.maxAttempts ?? DEFAULTS.maxAttempts);
    this.#maxElapsedMs = opts.maxElapsedMs ?? DEFAULTS.maxElapsedMs;
    this.#backoffBaseMs = opts.backoffBaseMs ?? DEFAULTS.backoffBaseMs;
    this.#maxBackoffMs = opts.maxBackoffMs ?? DEFAULTS.maxBackoffMs;
    this.#userAgent = opts.userAgent ?? DEFAULTS.userAgent;
    this.#arrayFormat = opts.arrayFormat ?? DEFAULTS.arrayFormat;
    this.#random = opts.random ?? Math.random;
    this.#maxInFlight = Math.max(1, opts.maxInFlight ?? DEFAULTS.maxInFlight);
    this.#maxResponseBytes = Math.max(1, opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES);
    this.#metrics = clientMetrics(opts.registry);
    this.#agent = new Agent({
      connections: opts.connections ?? DEFAULTS.connections,
      connect: { timeout: opts.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs },
      headersTimeout: opts.headersTimeoutMs ?? DEFAULTS.headersTimeoutMs,
      bodyTimeout: opts.bodyTimeoutMs ?? DEFAULTS.bodyTimeoutMs,
    });
  }

  getJson<T = unknown>(path: string, opts: CallOptions<T> = {}): Promise<T> {
    return this.#jsonCall('GET', path, undefined, opts);
  }

  postJson<T = unknown>(path: string, body: unknown, opts: CallOptions<T> = {}): Promise<T> {
    return this.#jsonCall('POST', path, body, opts);
  }

  /** For text answers such as the Prometheus exposition at /metrics. */
  getText(path: string, opts: TextCallOptions = {}): Promise<TextResponse> {
    return this.#call({
      method: 'GET',
      path,
      query: opts.query,
      scope: opts.scope,
      accept: opts.accept ?? 'text/plain',
      headers: opts.headers,
      ctx: opts.ctx,
      maxBytes: opts.maxBytes,
      read: (_status, headers, body) => {
        const contentType = headers['content-type'];
        return { body, contentType: (Array.isArray(contentType) ? contentType[0] : contentType) ?? null };
      },
    });
  }

  /**
   * Yields each validated page, following `next_cursor` while `has_more`. The cursor goes back exactly as
   * received. A page with `has_more` but no cursor, or a cursor seen before, is an `invalid_response`
   * error rather than an endless loop.
   */
  async *paginate<T>(path: string, opts: PaginateOptions<T>): AsyncGenerator<T, void, undefined> {
    const method = opts.method ?? 'GET';
    const asked = opts.query?.limit;
    const maxItems = typeof asked === 'number' && Number.isInteger(asked) && asked > 0 ? asked : null;
    const seenCursors = new Set<string>();
    // A prefetched page is fetched while the caller works on the one before; if the caller stops early, it is
    // cancelled (and its failure, which nobody will read, swallowed) when this generator ends.
    const stopPrefetch = new AbortController();
    const prefetchCtx: CallContext = {
      ...opts.ctx,
      signal: opts.ctx?.signal ? AbortSignal.any([opts.ctx.signal, stopPrefetch.signal]) : stopPrefetch.signal,
    };
    const fetchPage = (query: QueryParams, ctx: CallContext | undefined): Promise<FetchedPage<T>> => {
      // Stryker disable next-line ObjectLiteral: read() sets pageInfo before the page is returned, and nothing reads it before
      let pageInfo: { hasMore: unknown; nextCursor: unknown } = { hasMore: undefined, nextCursor: undefined };
      let call: CallDescription | null = null;
      return this.#call<T>({
        method,
        path,
        query,
        jsonBody: method === 'POST' ? (opts.body ?? null) : undefined,
        scope: opts.scope,
        accept: 'application/json',
        ctx,
        read: (status, _headers, body, description) => {
          const value = parseJsonBody(status, body, description);
          const envelope = typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
          const list = envelope[opts.itemsField ?? 'items'];
          if (maxItems !== null && Array.isArray(list) && list.length > maxItems) throw this.#overLimit(description, status, list.length, maxItems);
          pageInfo = { hasMore: envelope.has_more, nextCursor: envelope.next_cursor };
          call = description;
          return validate(opts.schema, value, status, description);
        },
      }).then((page) => ({ page, ...pageInfo, call: call as CallDescription | null }));
    };
    let query: QueryParams = { ...opts.query };
    let next: Promise<FetchedPage<T>> | null = null;
    try {
      for (;;) {
        const prefetched = next !== null;
        const { page, hasMore, nextCursor, call: description } = await (next ?? fetchPage(query, opts.ctx));
        next = null;
        // A page that arrived after the caller aborted is not handed over (without prefetch it was never asked for).
        if (prefetched && opts.ctx?.signal?.aborted) throw this.#aborted(description as CallDescription, 1, opts.ctx.signal.reason);
        const cursor = typeof nextCursor === 'string' && nextCursor !== '' ? nextCursor : null;
        // A missing has_more with a cursor is followed; an explicit false always ends the walk.
        const more = hasMore === true || (hasMore == null && cursor !== null);
        const broken = more && (cursor === null || seenCursors.has(cursor));
        if (more && !broken) {
          seenCursors.add(cursor as string);
          query = { ...query, cursor: cursor as string };
          if (opts.prefetch) next = awaitedLater(fetchPage(query, prefetchCtx));
        }
        yield page;

        if (!more) return;
        if (broken) {
          const why = cursor === null ? 'has_more is true but next_cursor is missing' : 'next_cursor repeats an earlier cursor';
          throw new PlatformError({
            // Stryker disable next-line OptionalChaining: read() has set the call's description whenever a page was yielded
            message: `${method} ${description?.path ?? path}: pagination cannot continue: ${why}`,
            status: 200,
            type: 'invalid_response',
            retryable: false,
            // Stryker disable next-line OptionalChaining: read() has set the call's description whenever a page was yielded
            scope: description?.scope ?? opts.scope ?? scopeForPath(path),
            // Stryker disable next-line OptionalChaining: read() has set the call's description whenever a page was yielded
            keyUsed: description?.keyUsed ?? null,
            method,
            // Stryker disable next-line OptionalChaining: read() has set the call's description whenever a page was yielded
            path: description?.path ?? path,
            attempts: 1,
          });
        }
      }
    } finally {
      stopPrefetch.abort();
    }
  }

  /**
   * Opens a Server-Sent Events stream (POST, the logs stream): one attempt, no retry (the caller reconnects, with
   * its own backoff, from where it got to). Resolves once the platform answered 2xx with text/event-stream; the
   * body then yields the raw bytes until the stream ends. A stream silent for `idleTimeoutMs` (no event, no
   * keep-alive) fails as a timeout.
   */
  async openEventStream(path: string, opts: { query?: QueryParams; body?: unknown; scope?: KeyScope; signal?: AbortSignal; idleTimeoutMs?: number } = {}): Promise<AsyncIterable<Buffer>> {
    const spec: RequestSpec<void> = {
      // Stryker disable next-line StringLiteral: openEventStream builds its own headers; spec.accept is never read
      method: 'POST', path, query: opts.query, jsonBody: opts.body ?? null, scope: opts.scope, accept: 'text/event-stream', ctx: undefined, read: () => undefined,
    };
    const { url, call, authorization } = this.#prepare(spec);
    const headers: Record<string, string> = { accept: 'text/event-stream', 'user-agent': this.#userAgent, 'content-type': 'application/json' };
    if (authorization !== null) headers.authorization = authorization;
    // Opening the stream is a platform call like any other (issue 50.5): it waits out a 429 pause and takes an
    // in-flight slot until the answer's head is in. The open stream then gives its slot back: a stream followed for
    // hours would otherwise hold one of PLATFORM_MAX_IN_FLIGHT from every job.
    try {
      await this.#acquire(opts.signal);
    } catch {
      throw this.#aborted(call, 1, opts.signal?.reason);
    }
    let response: Dispatcher.ResponseData;
    let text: string | null = null;
    try {
      try {
        response = await this.#agent.request({
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: 'POST',
          headers,
          body: JSON.stringify(spec.jsonBody),
          signal: opts.signal,
          bodyTimeout: opts.idleTimeoutMs ?? 60_000,
        });
      } catch (error) {
        throw errorFromException(call, error, null);
      }
      this.#noteDeprecation(call, response.headers);
      if (!isSuccess(response.statusCode)) text = await this.#readBody(response, call, response.statusCode).catch(() => '');
    } finally {
      this.#release();
    }
    const status = response.statusCode;
    if (text !== null) {
      if (status === 429) this.#noteConcurrencyLimit(call, text, response.headers);
      const error = errorFromResponse(call, status, response.headers, text);
      error.attempts = 1;
      if (status === 429) {
        const waitMs = error.retryAfterMs ?? backoffDelayMs(1, this.#backoffBaseMs, this.#maxBackoffMs, this.#random);
        this.#pausedUntil = Math.max(this.#pausedUntil, performance.now() + waitMs);
      }
      throw error;
    }
    const type = String(response.headers['content-type'] ?? '');
    if (!type.startsWith('text/event-stream')) {
      // dump() reads at most undici's 128 KiB, then closes the connection: bounded as every other read.
      await response.body.dump().catch(() => undefined);
      throw new PlatformError({
        message: `${call.method} ${call.path} answered ${status} with ${type || 'no content type'}, not an event stream`,
        status,
        type: 'invalid_response',
        retryable: true,
        scope: call.scope,
        keyUsed: call.keyUsed,
        method: call.method,
        path: call.path,
        attempts: 1,
      });
    }
    return response.body;
  }

  /** Waits for calls in flight, then closes every connection. */
  close(): Promise<void> {
    this.#closing ??= this.#agent.close();
    return this.#closing;
  }

  #jsonCall<T>(method: 'GET' | 'POST', path: string, body: unknown, opts: CallOptions<T>): Promise<T> {
    return this.#call({
      method,
      path,
      query: opts.query,
      jsonBody: method === 'POST' ? (body ?? null) : undefined,
      scope: opts.scope,
      accept: 'application/json',
      ctx: opts.ctx,
      read: (status, _headers, text, call) => {
        const value = parseJsonBody(status, text, call);
        return opts.schema ? validate(opts.schema, value, status, call) : (value as T);
      },
    });
  }

  /** The retry loop around #attempt. */
  async #call<T>(spec: RequestSpec<T>): Promise<T> {
    const { url, call, authorization } = this.#prepare(spec);
    const headers: Record<string, string> = {
      ...spec.headers,
      accept: spec.accept,
      'user-agent': this.#userAgent,
    };
    if (authorization !== null) headers.authorization = authorization;
    let body: string | undefined;
    if (spec.jsonBody !== undefined) {
      body = JSON.stringify(spec.jsonBody);
      headers['content-type'] = 'application/json';
    }

    const ctx = spec.ctx ?? {};
    const startedAt = performance.now();
    const deadline = startedAt + this.#maxElapsedMs;

    for (let attempt = 1; ; attempt++) {
      const budget = new AbortController();
      const budgetTimer = setTimeout(() => budget.abort(), Math.max(0, deadline - performance.now()));
      const signal = ctx.signal ? AbortSignal.any([ctx.signal, budget.signal]) : budget.signal;
      let error: PlatformError;
      try {
        try {
          await this.#acquire(ctx.signal);
        } catch {
          // Stryker disable next-line OptionalChaining: #acquire throws only on an abort of ctx.signal, which is then set
          throw this.#aborted(call, attempt, ctx.signal?.reason);
        }
        let result: T;
        try {
          result = await this.#attempt(spec, url, call, headers, body, signal);
        } finally {
          this.#release();
        }
        this.#logger?.debug(
          { method: call.method, path: call.path, attempts: attempt, durationMs: Math.round(performance.now() - startedAt) },
          'platform call done',
        );
        return result;
      } catch (thrown) {
        if (ctx.signal?.aborted) throw this.#aborted(call, attempt, ctx.signal.reason);
        if (budget.signal.aborted) {
          error = new PlatformError({
            message: `${call.method} ${call.path}: the ${this.#maxElapsedMs} ms time budget ran out during attempt ${attempt}`,
            status: null,
            type: 'timeout',
            retryable: true,
            scope: call.scope,
            keyUsed: call.keyUsed,
            method: call.method,
            path: call.path,
            attempts: attempt,
          });
          throw error;
        } else if (thrown instanceof PlatformError) {
          error = thrown;
        } else {
          throw thrown;
        }
      } finally {
        clearTimeout(budgetTimer);
      }

      error.attempts = attempt;
      if (error.status === 429) {
        // One rate-limit answer slows every caller: nobody starts an attempt before the platform's wait is over.
        const waitMs = error.retryAfterMs ?? backoffDelayMs(attempt, this.#backoffBaseMs, this.#maxBackoffMs, this.#random);
        this.#pausedUntil = Math.max(this.#pausedUntil, performance.now() + waitMs);
      }
      if (!error.retryable) throw error;
      if (attempt >= this.#maxAttempts) {
        error.message += ` — gave up after ${attempt} attempts`;
        throw error;
      }
      // The server's wait when it gives one (never shortened: an early retry is refused again), else backoff.
      const delayMs =
        error.retryAfterMs ?? backoffDelayMs(attempt, this.#backoffBaseMs, this.#maxBackoffMs, this.#random);
      const remainingMs = deadline - performance.now();
      if (delayMs >= remainingMs) {
        error.message += ` — gave up after ${attempt} attempt${attempt === 1 ? '' : 's'}: waiting ${delayMs} ms would pass the ${this.#maxElapsedMs} ms time budget`;
        throw error;
      }
      ctx.onRetry?.({ attempt, delayMs, error });
      this.#logger?.warn(
        {
          method: call.method,
          path: call.path,
          attempt,
          delayMs,
          status: error.status,
          type: error.type,
          errorType: error.errorType,
          requestId: error.requestId,
        },
        'platform call failed; retrying',
      );
      try {
        await sleep(delayMs, undefined, ctx.signal ? { signal: ctx.signal } : undefined);
      } catch (sleepError) {
        // Stryker disable next-line OptionalChaining: the backoff sleep rejects only on an abort of ctx.signal, which is then set
        throw this.#aborted(call, attempt, ctx.signal?.reason ?? sleepError);
      }
    }
  }

  /** Waits for a free slot of the in-flight limit, and for the end of a rate-limit pause. */
  async #acquire(signal: AbortSignal | undefined): Promise<void> {
    for (;;) {
      const pauseMs = this.#pausedUntil - performance.now();
      if (pauseMs > 0) await sleep(pauseMs, undefined, signal ? { signal } : undefined);
      if (this.#inFlight < this.#maxInFlight) {
        this.#inFlight++;
        return;
      }
      signal?.throwIfAborted();
      await new Promise<void>((resolve, reject) => {
        const wake = (): void => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = (): void => {
          const i = this.#waiting.indexOf(wake);
          if (i >= 0) this.#waiting.splice(i, 1);
          // Stryker disable next-line OptionalChaining: onAbort is only ever registered on signal, which is then set
          reject(signal?.reason);
        };
        this.#waiting.push(wake);
        // Stryker disable next-line ObjectLiteral,BooleanLiteral: an AbortSignal fires 'abort' once only
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    }
  }

  #release(): void {
    this.#inFlight--;
    this.#waiting.shift()?.();
  }

  /** Calls in flight now, and the most allowed (PLATFORM_MAX_IN_FLIGHT). */
  get inFlight(): { now: number; max: number } {
    return { now: this.#inFlight, max: this.#maxInFlight };
  }

  /** One request: send, read the whole body (under the body timeout), classify. */
  async #attempt<T>(
    spec: RequestSpec<T>,
    url: URL,
    call: CallDescription,
    headers: Record<string, string>,
    body: string | undefined,
    signal: AbortSignal,
  ): Promise<T> {
    let response: Dispatcher.ResponseData;
    try {
      response = await this.#agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: spec.method,
        headers,
        body,
        signal,
      });
    } catch (error) {
      throw errorFromException(call, error, null);
    }
    const status = response.statusCode;
    this.#noteDeprecation(call, response.headers);
    let text: string;
    try {
      text = await this.#readBody(response, call, status, spec.maxBytes);
    } catch (error) {
      if (error instanceof PlatformError) throw error;
      // An error answer whose body was lost is still classified by its status.
      if (isSuccess(status) || signal.aborted) throw errorFromException(call, error, status);
      text = '';
    }
    if (status === 429) this.#noteConcurrencyLimit(call, text, response.headers);
    if (!isSuccess(status)) throw errorFromResponse(call, status, response.headers, text);
    return spec.read(status, response.headers, text, call);
  }

  /** The byte limit of one answer on this path (issue 49.2). */
  responseLimitBytes(path: string): number {
    const small = SMALL_RESPONSE_BYTES[endpointTemplate(path)];
    return small === undefined ? this.#maxResponseBytes : Math.min(small, this.#maxResponseBytes);
  }

  /**
   * The one reading path of every answer: streamed, counted, and cut off past the limit so a platform that sends
   * without end costs at most the limit (issue 49.2: `response.body.text()` took 12.3 GB in 120 s). A 2xx past its
   * limit fails the call (`response_too_large`, not retried: the same call gets the same answer); an error answer is
   * read only as far as its classification needs.
   */
  async #readBody(response: Dispatcher.ResponseData, call: CallDescription, status: number, maxBytes?: number): Promise<string> {
    const success = isSuccess(status);
    const pathLimit = this.responseLimitBytes(call.path);
    const limitBytes = success ? Math.min(pathLimit, maxBytes ?? pathLimit) : ERROR_BODY_MAX_BYTES;
    const declared = Number(headerOne(response.headers, 'content-length') ?? NaN);
    if (success && Number.isFinite(declared) && declared > limitBytes) {
      discard(response.body);
      throw this.#tooLarge(call, status, limitBytes, declared, true);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      if (size + chunk.length > limitBytes) {
        discard(response.body);
        if (!success) {
          chunks.push(chunk.subarray(0, limitBytes - size));
          break;
        }
        throw this.#tooLarge(call, status, limitBytes, size + chunk.length, false);
      }
      size += chunk.length;
      chunks.push(chunk);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  #tooLarge(call: CallDescription, status: number, limitBytes: number, bytes: number, declared: boolean): PlatformError {
    const endpoint = endpointTemplate(call.path);
    this.#metrics.tooLarge.inc({ endpoint });
    const message = declared
      ? `${call.method} ${call.path} answered ${status} with a body of ${bytes} bytes (Content-Length), over its limit of ${limitBytes} bytes; not read`
      : `${call.method} ${call.path} answered ${status} with a body over its limit of ${limitBytes} bytes; cut off after ${bytes} bytes`;
    this.#logger?.warn({ method: call.method, path: call.path, endpoint, status, limitBytes, bytes }, 'platform answer over its byte limit; cut off (PLATFORM_MAX_RESPONSE_BYTES)');
    return new PlatformError({
      message,
      status,
      type: 'response_too_large',
      retryable: false,
      scope: call.scope,
      keyUsed: call.keyUsed,
      method: call.method,
      path: call.path,
    });
  }

  /** A page holding more items than the call asked for (`limit`): refused, not retried (the same call gets the same page). */
  #overLimit(call: CallDescription, status: number, items: number, limit: number): PlatformError {
    const endpoint = endpointTemplate(call.path);
    this.#metrics.pageOverLimit.inc({ endpoint });
    this.#logger?.warn({ method: call.method, path: call.path, endpoint, status, items, limit }, 'platform page holds more items than asked for; refused');
    return new PlatformError({
      message: `${call.method} ${call.path} answered ${status} with a page of ${items} items, more than the ${limit} asked for (limit); refused`,
      status,
      type: 'page_over_limit',
      retryable: false,
      scope: call.scope,
      keyUsed: call.keyUsed,
      method: call.method,
      path: call.path,
    });
  }

  /**
   * A 429 "carries the limit value" (interface, Concurrency): it is what an operator tunes PLATFORM_MAX_IN_FLIGHT
   * against, so it is a gauge and, when it changes, a log line.
   */
  #noteConcurrencyLimit(call: CallDescription, body: string, headers: HeaderBag): void {
    const limit = concurrencyLimitOf(body, headers);
    if (limit === null) return;
    this.#metrics.concurrencyLimit.set(limit);
    if (limit === this.#lastConcurrencyLimit) return;
    this.#lastConcurrencyLimit = limit;
    this.#logger?.warn(
      { method: call.method, path: call.path, concurrencyLimit: limit, maxInFlight: this.#maxInFlight },
      `the platform answered 429: its concurrency limit is ${limit}; PLATFORM_MAX_IN_FLIGHT is ${this.#maxInFlight}${limit < this.#maxInFlight ? ' (lower it to the limit, less what other clients of the account use)' : ''}`,
    );
  }

  /** `Deprecation`, `Sunset` and `Warning` answers: logged once per endpoint, and a gauge per endpoint. */
  #noteDeprecation(call: CallDescription, headers: HeaderBag): void {
    const deprecation = headerOne(headers, 'deprecation');
    const sunset = headerOne(headers, 'sunset');
    const warning = headerOne(headers, 'warning');
    if (deprecation === null && sunset === null && warning === null) return;
    const endpoint = endpointTemplate(call.path);
    this.#metrics.deprecated.set({ endpoint }, 1);
    if (this.#deprecationsSeen.has(endpoint)) return;
    this.#deprecationsSeen.add(endpoint);
    this.#logger?.warn({ method: call.method, endpoint, deprecation, sunset, warning: warning?.slice(0, 300) ?? null }, `the platform marks ${call.method} ${endpoint} as deprecated${sunset ? ` (sunset ${sunset})` : ''}`);
  }

  /** Resolves the URL and the key before anything is sent; misuse fails here, with nothing sent. */
  #prepare<T>(spec: RequestSpec<T>): { url: URL; call: CallDescription; authorization: string | null } {
    const absolute = /^https?:\/\//i.test(spec.path);
    let url: URL;
    let sameOrigin = true;
    if (absolute) {
      url = new URL(spec.path);
      sameOrigin = url.origin === this.#base.origin;
    } else {
      if (!spec.path.startsWith('/')) throw new TypeError(`PlatformClient: path must start with / or be an absolute URL`);
      url = new URL(`${this.#basePath}${spec.path}`, this.#base.origin);
    }
    const relativePath = absolute ? url.pathname : spec.path.split('?')[0];
    const scope = spec.scope ?? scopeForPath(relativePath);
    // Paths on another origin (e.g. a JWKS host) never get a key.
    const path = sameOrigin ? url.pathname : `${url.origin}${url.pathname}`;
    let key: string | null = null;
    let keyUsed: KeyScope | null = null;
    if (sameOrigin) {
      if (scope === 'admin') {
        if (this.#adminKey === null) {
          const call = { method: spec.method, path, scope, keyUsed: null };
          throw new PlatformError({
            message: `${spec.method} ${path} needs an ADMIN-scope key; SVC_ADMIN_KEY is not set`,
            status: null,
            type: 'missing_key',
            retryable: false,
            ...call,
          });
        }
        key = this.#adminKey;
        keyUsed = 'admin';
      } else if (this.#apiKey !== null) {
        key = this.#apiKey;
        keyUsed = 'api';
      } else {
        // Least privilege (issue 50.6): the admin key goes only where the interface requires admin scope, never as a
        // stand-in for a missing API key; an API-scope call without one is a configuration error, sent nowhere.
        const call = { method: spec.method, path, scope, keyUsed: null };
        throw new PlatformError({
          message: `${spec.method} ${path} needs an API-scope key; SVC_API_KEY is not set (the admin key is sent only to admin-scope endpoints)`,
          status: null,
          type: 'missing_key',
          retryable: false,
          ...call,
        });
      }
    }
    const call: CallDescription = { method: spec.method, path, scope, keyUsed };
    try {
      appendQuery(url, spec.query, this.#arrayFormat);
    } catch (error) {
      throw new PlatformError({
        message: `${spec.method} ${path}: ${(error as Error).message}`,
        status: null,
        type: 'invalid_request',
        retryable: false,
        ...call,
      });
    }
    return { url, call, authorization: key === null ? null : `Key ${key}` };
  }

  #aborted(call: CallDescription, attempt: number, reason: unknown): PlatformError {
    return new PlatformError({
      message: `${call.method} ${call.path}: aborted by the caller`,
      status: null,
      type: 'aborted',
      retryable: false,
      ...call,
      attempts: attempt,
      cause: reason,
    });
  }
}

interface ClientMetrics {
  tooLarge: ReturnType<typeof counter<'endpoint'>>;
  pageOverLimit: ReturnType<typeof counter<'endpoint'>>;
  concurrencyLimit: ReturnType<typeof gauge<never>>;
  deprecated: ReturnType<typeof gauge<'endpoint'>>;
}

function clientMetrics(registry: Registry | undefined): ClientMetrics {
  return {
    tooLarge: counter(registry, {
      name: 'tallyhouse_platform_response_too_large_total',
      help: 'Platform answers cut off for passing their byte limit (PLATFORM_MAX_RESPONSE_BYTES, tighter for small endpoints), by endpoint',
      labelNames: ['endpoint'] as const,
    }),
    pageOverLimit: counter(registry, {
      name: 'tallyhouse_platform_page_over_limit_total',
      help: 'Platform pages refused for holding more items than the call asked for (its limit), by endpoint',
      labelNames: ['endpoint'] as const,
    }),
    concurrencyLimit: gauge(registry, {
      name: 'tallyhouse_platform_concurrency_limit',
      help: "The concurrency limit the platform's last 429 answer named (compare with PLATFORM_MAX_IN_FLIGHT)",
    }),
    deprecated: gauge(registry, {
      name: 'tallyhouse_platform_endpoint_deprecated',
      help: 'Endpoints the platform answered with a Deprecation, Sunset or Warning header (1), by endpoint',
      labelNames: ['endpoint'] as const,
    }),
  };
}

/** Closes a body unread: undici's destroy() emits an AbortError, which nobody else listens for. */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => undefined);
  body.destroy();
}

function headerOne(headers: HeaderBag, name: string): string | null {
  const value = headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? null : first;
}

/**
 * The limit a 429 names: the body's `limit` (top level, or in the notes' `error` object), else the
 * `x-ratelimit-limit` header. The interface shows nothing of the body "beyond the limit value".
 */
export function concurrencyLimitOf(body: string, headers: HeaderBag): number | null {
  const asLimit = (v: unknown): number | null => {
    const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
    return typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : null;
  };
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === 'object' && parsed !== null) {
      const o = parsed as Record<string, unknown>;
      const inner = typeof o.error === 'object' && o.error !== null ? (o.error as Record<string, unknown>) : {};
      const found = asLimit(o.limit) ?? asLimit(inner.limit);
      if (found !== null) return found;
    }
  } catch {
    // not JSON: the header may still say
  }
  return asLimit(headerOne(headers, 'x-ratelimit-limit'));
}
