// POST /v1/drains/logs: the platform's log drain. The body streams through the HMAC, an optional gunzip, the
// line splitter and the line mapper into a per-request stage; once the body is complete and authenticated,
// its rows and rejects become one spool record, fsynced before the answer. The spool replayer moves records
// into the store. Design and limits: README.md beside this file.
import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BUSY_RETRY_AFTER_SECONDS, closeWithoutReading, type BudgetLease, type PushBudgets } from '../body-budget.js';
import { toDateTime64 } from '../../values.js';
import type { BatchWriter } from '../../store/writer.js';
import { checkCredentials, DRAIN_OFF_MESSAGE, DRAIN_PATH, urlTokenMatches, type DrainAuth } from './auth.js';
import { LOG_ROW_COLUMNS, type BatchContext } from '../../collectors/log-line.js';
import type { DrainMetrics } from './metrics.js';
import { MAX_LISTED_ERRORS, REJECT_SOURCE, type ParseSummary } from './parse-body.js';
import type { ParserPool } from './parser-pool.js';
import { SpoolFullError, type RowFormat, type Spool } from './spool/spool.js';
import { DataStage, type StagingBudget } from './stage-body.js';
import { isDiskFull, type DiskPressure } from './disk-pressure.js';
import { PROBLEM_SCHEMA, sendProblem } from '../../http/problem.js';

export const MAX_LINE_BYTES = 1024 * 1024;
export { MAX_LISTED_ERRORS, REJECT_SOURCE };
const LOG_ROW_FORMAT: RowFormat = { format: 'TabSeparated', columns: LOG_ROW_COLUMNS };

export interface DrainRouteOptions {
  auth: DrainAuth | undefined;
  spool: Spool;
  writer: Pick<BatchWriter, 'reject'>;
  metrics: DrainMetrics;
  maxBodyBytes: number;
  maxLineBytes?: number;
  /** Rows of one request kept in memory before they spill to a staging file. */
  stageMemoryBytes?: number;
  budget: StagingBudget;
  parsers: ParserPool;
  /**
   * Read slots (LOG_DRAIN_MAX_BODIES_READING, per address LOG_DRAIN_MAX_BODIES_PER_ADDRESS), the slow-body guard and
   * the budget of unauthenticated bytes (a signed body is held whole until its signature is checked).
   */
  budgets: PushBudgets;
  /** DATA_DIR's free space (issue 44.2): below its threshold, 503 with Retry-After before the disk is full. */
  disk?: DiskPressure;
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
  /** The body was not (fully) read: close the connection rather than read the rest. */
  close?: boolean;
}

const answer = (status: number, error: string, message: string, extra: Partial<Answer> = {}): Answer => ({
  status,
  body: { error, message },
  ...extra,
});

class LimitError extends Error {
  constructor(readonly kind: 'body' | 'decoded', readonly limit: number) {
    super(kind);
  }
}

/** Counts the raw bytes as they arrive; stops the body at the size limit. */
class RawMeter extends Transform {
  bytes = 0;
  complete = false;
  /** Set when the limit stopped the body (pipeline may report the abort it caused instead). */
  limitHit: LimitError | undefined;
  constructor(private readonly limit: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) return cb((this.limitHit = new LimitError('body', this.limit)));
    cb(null, chunk);
  }
  override _flush(cb: TransformCallback): void {
    this.complete = true;
    cb();
  }
}

function mediaType(header: string | undefined): string {
  return (header ?? '').split(';')[0].trim().toLowerCase();
}

function isClientGone(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE' || (err as Error)?.message === 'aborted';
}

function isZlibError(err: unknown): boolean {
  return String((err as { code?: unknown })?.code ?? '').startsWith('Z_');
}

async function handleDrain(req: FastifyRequest, reply: FastifyReply, opts: DrainRouteOptions): Promise<Answer> {
  const { auth, spool } = opts;
  if (!auth) return answer(404, 'Not Found', DRAIN_OFF_MESSAGE);
  // The URL's secret first, before a slot, a budget or a byte of the body: a sender without it costs one answer.
  if (!urlTokenMatches((req.params as { token?: string }).token, auth)) {
    opts.budgets.refused('drain', 'url');
    return answer(404, 'Not Found', 'no log drain at this URL (the drain URL carries LOG_DRAIN_URL_TOKEN when it is set)', { close: true });
  }
  const authn = checkCredentials(req.headers, auth);
  if ('refused' in authn) return answer(401, 'Unauthorized', authn.refused, { close: true });

  const type = mediaType(req.headers['content-type']);
  if (type !== 'application/x-ndjson' && type !== 'application/json') {
    return answer(415, 'Unsupported Media Type', 'send Content-Type: application/x-ndjson (one JSON object per line) or application/json (an array of them)', { close: true });
  }
  const encoding = String(req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  const gzip = encoding === 'gzip' || encoding === 'x-gzip';
  if (!gzip && encoding !== 'identity' && encoding !== '') {
    return answer(415, 'Unsupported Media Type', `Content-Encoding ${encoding} is not supported: send gzip or no encoding`, { close: true });
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > opts.maxBodyBytes) {
    return answer(413, 'Payload Too Large', `the body (${declared} bytes) exceeds LOG_DRAIN_MAX_BODY_BYTES (${opts.maxBodyBytes} bytes); send smaller batches`, { close: true });
  }
  if (spool.isFull()) return spoolFull(spool, true);
  const diskReason = opts.disk?.reason();
  if (diskReason) return diskLow(diskReason, spool, true);

  // At most so many bodies are read at once, and fewer from one address (a few slow senders cannot take every
  // slot); the rest wait here, their bytes unread (the server's request deadline ends a wait).
  const address = opts.budgets.clientAddress(req.raw);
  // A bearer token is checked already (before the body): its sender is proven, and so is an address that
  // delivered a correctly signed batch within PUSH_PROVEN_TTL_SECONDS. Those read in the proven lane.
  const bearer = !authn.signature;
  if (bearer) opts.budgets.proven.prove(address);
  const proven = bearer || opts.budgets.proven.has(address);
  const slot = opts.budgets.slots.drain.acquire(address, req.raw.socket, proven);
  const release = typeof slot === 'function' ? slot : 'refused' in slot ? slot : await slot;
  // The drain's slots queue (the platform does not retry a failed batch): no refusal but a sender that left.
  if (typeof release !== 'function') return clientGone();
  const unwatch = opts.budgets.guard.watch(req.raw, reply.raw, 'drain', { address, proven });
  const lease = opts.budgets.unverified.lease(address);
  try {
    const raw = req.body as Readable | undefined;
    let source: AsyncIterable<Buffer> | undefined;
    if (raw && authn.signature) {
      const verified = await readSigned(raw, opts.maxBodyBytes, auth.secret!, authn.signature, lease);
      if (verified.refused?.status === 503) opts.budgets.refused('drain', 'memory');
      opts.metrics.bytes.inc(verified.bytes);
      if (verified.refused) return verified.refused;
      opts.budgets.proven.prove(address);
      source = Readable.from(verified.parts);
    } else if (raw) {
      // The request itself stays open when the body is cut short, so the answer (413, 400) still reaches the sender.
      source = raw.iterator({ destroyOnReturn: false });
    }
    return await processBody(source, { gzip, json: type === 'application/json', streamed: !authn.signature }, opts);
  } finally {
    unwatch();
    lease.release();
    release();
  }
}

function busy(reason: string): Answer {
  return answer(503, 'Service Unavailable', `${reason}; retry after ${BUSY_RETRY_AFTER_SECONDS} s`, {
    headers: { 'retry-after': String(BUSY_RETRY_AFTER_SECONDS) },
    close: true,
  });
}

/**
 * A signed body, read whole and checked against its HMAC (raw bytes as sent) before anything else sees it:
 * nothing is decompressed, parsed or written for a body whose signature does not match (CONTRIBUTING.md rule 17).
 * The bytes held meanwhile are reserved in `lease` (the budget of unauthenticated bytes): past it, 503.
 */
async function readSigned(
  raw: Readable,
  maxBodyBytes: number,
  secret: string,
  signature: Buffer,
  lease: BudgetLease,
): Promise<{ bytes: number; parts: Buffer[]; refused?: Answer }> {
  const hmac = createHmac('sha256', secret);
  const parts: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of raw.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      if (bytes > maxBodyBytes) {
        return { bytes, parts: [], refused: answer(413, 'Payload Too Large', `the body exceeds LOG_DRAIN_MAX_BODY_BYTES (${maxBodyBytes} bytes); send smaller batches`, { close: true }) };
      }
      if (!lease.reserve(chunk.length)) {
        return { bytes, parts: [], refused: busy('too many unauthenticated body bytes are held (PUSH_UNVERIFIED_MAX_BYTES, PUSH_UNVERIFIED_MAX_BYTES_PER_ADDRESS)') };
      }
      hmac.update(chunk);
      parts.push(chunk);
    }
  } catch (err) {
    if (isClientGone(err)) return { bytes, parts: [], refused: clientGone() };
    throw err;
  }
  if (!timingSafeEqual(hmac.digest(), signature)) return { bytes, parts: [], refused: { ...signatureMismatch(), close: false } };
  return { bytes, parts };
}

const clientGone = (): Answer => ({ status: 499, body: { error: 'Client Closed Request', message: 'the sender closed the connection' }, close: true });

/** An authenticated body (streamed when a token authenticated it): split, mapped, staged, spooled. */
async function processBody(
  raw: AsyncIterable<Buffer> | undefined,
  body: { gzip: boolean; json: boolean; streamed: boolean },
  opts: DrainRouteOptions,
): Promise<Answer> {
  const { spool } = opts;
  const { gzip } = body;
  const receivedAtMs = Date.now();
  const ctx: BatchContext = { receivedAt: toDateTime64(receivedAtMs), batchId: randomUUID() };
  const maxLineBytes = opts.maxLineBytes ?? MAX_LINE_BYTES;
  const stageMemory = opts.stageMemoryBytes ?? 4 * 1024 * 1024;
  const rows = new DataStage(opts.budget, stageMemory, () => spool.stagingPath());
  const rejects = new DataStage(opts.budget, stageMemory, () => spool.stagingPath());
  const session = opts.parsers.open(
    { json: body.json, ctx, maxLineBytes },
    { onRows: (buf, count) => rows.addSealed(buf, count), onRejects: (buf, count) => rejects.addSealed(buf, count) },
  );
  const bodyHash = createHash('sha256');
  const meter = new RawMeter(opts.maxBodyBytes);
  let decodedBytes = 0;
  let decodedLimitHit: LimitError | undefined;
  let gunzipError: Error | undefined;
  let summary: ParseSummary | undefined;

  const consume = async (source: AsyncIterable<Buffer>) => {
    for await (const chunk of source) {
      decodedBytes += chunk.length;
      if (decodedBytes > opts.maxBodyBytes) throw (decodedLimitHit = new LimitError('decoded', opts.maxBodyBytes));
      bodyHash.update(chunk);
      await session.push(chunk);
      if (rows.shouldSpill) await rows.spill();
      if (rejects.shouldSpill) await rejects.spill();
    }
    summary = await session.end();
  };

  try {
    if (raw) {
      const source = raw;
      if (gzip) {
        const gunzip = createGunzip();
        gunzip.once('error', (err) => (gunzipError ??= err));
        await pipeline(source, meter, gunzip, consume);
      } else {
        await pipeline(source, meter, consume);
      }
    } else {
      summary = await session.end();
    }
    if (body.streamed) opts.metrics.bytes.inc(meter.bytes);
    const { accepted, rejected, errors, failure } = summary!;
    if (failure?.kind === 'format') return answer(400, 'Bad Request', `${failure.message}; nothing of this request was stored`);

    const listed = { accepted, rejected, errors };
    if (accepted === 0 && rejected === 0) return { status: 200, body: { ...listed, batch_id: null } };
    const record = { id: bodyHash.digest('hex'), receivedAtMs, rowFormat: LOG_ROW_FORMAT, rows: await rows.finish(), rejects: await rejects.finish() };
    const result = await spool.append(record);
    if (result.status === 'duplicate') {
      opts.metrics.duplicates.inc();
      return { status: 200, body: { ...listed, batch_id: null, duplicate: true } };
    }
    opts.metrics.lines.inc({ outcome: 'accepted' }, accepted);
    opts.metrics.lines.inc({ outcome: 'rejected' }, rejected);
    return { status: 200, body: { ...listed, batch_id: ctx.batchId } };
  } catch (caught) {
    // The stage that stopped the body, rather than the aborts the pipeline then raised in the others.
    const err: unknown = meter.limitHit ?? decodedLimitHit ?? gunzipError ?? caught;
    if (err instanceof SpoolFullError) return spoolFull(spool, false);
    // The disk filled between two looks at it: nothing of this batch was acknowledged (the platform does not retry a
    // drain batch, so it is lost, as it would be on any refusal; the state makes the refusals as short as it can).
    if (isDiskFull(err)) {
      opts.disk?.hitFull();
      return diskLow(opts.disk?.reason() ?? 'DATA_DIR\'s disk is full', spool, !meter.complete);
    }
    if (body.streamed) opts.metrics.bytes.inc(meter.bytes);
    if (err instanceof LimitError) {
      return err.kind === 'body'
        ? answer(413, 'Payload Too Large', `the body exceeds LOG_DRAIN_MAX_BODY_BYTES (${err.limit} bytes); send smaller batches`, { close: true })
        : answer(413, 'Payload Too Large', `the gzip body expands beyond LOG_DRAIN_MAX_BODY_BYTES (${err.limit} bytes); nothing of this request was stored`, { close: true });
    }
    if (gzip && isZlibError(err)) {
      return answer(400, 'Bad Request', `the gzip body is invalid (${(err as Error).message}); nothing of this request was stored`, { close: !meter.complete });
    }
    if (isClientGone(err)) return clientGone();
    throw err;
  } finally {
    session.abort();
    await Promise.all([rows.release(), rejects.release()]);
  }
}

function signatureMismatch(): Answer {
  return answer(
    401,
    'Unauthorized',
    'X-Svc-Signature does not match the body: expected the hex HMAC-SHA256, under the drain secret, of the raw body as sent (the gzip bytes when Content-Encoding is gzip)',
  );
}

function spoolFull(spool: Spool, close: boolean): Answer {
  return answer(
    503,
    'Service Unavailable',
    `the log drain spool is full (LOG_DRAIN_SPOOL_MAX_BYTES ${spool.limitBytes} bytes) while the store catches up; retry after ${spool.retryAfterSeconds} s`,
    { headers: { 'retry-after': String(spool.retryAfterSeconds) }, close },
  );
}

function diskLow(reason: string, spool: Spool, close: boolean): Answer {
  return answer(503, 'Service Unavailable', `${reason}; retry after ${spool.retryAfterSeconds} s`, {
    headers: { 'retry-after': String(spool.retryAfterSeconds) },
    close,
  });
}

const errorSchema = PROBLEM_SCHEMA;

const okSchema = {
  type: 'object',
  properties: {
    accepted: { type: 'integer' },
    rejected: { type: 'integer' },
    errors: {
      type: 'array',
      maxItems: MAX_LISTED_ERRORS,
      items: { type: 'object', properties: { line: { type: 'integer' }, reason: { type: 'string' } }, required: ['line', 'reason'] },
    },
    batch_id: { type: ['string', 'null'] },
    duplicate: { type: 'boolean' },
  },
  required: ['accepted', 'rejected', 'errors'],
} as const;

/** The drain route, as an encapsulated plugin: its content-type parser hands the raw stream to the handler. */
export async function drainRoutes(app: FastifyInstance, opts: DrainRouteOptions): Promise<void> {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
  const route = {
      schema: {
        response: { 200: okSchema, 400: errorSchema, 401: errorSchema, 404: errorSchema, 408: errorSchema, 413: errorSchema, 415: errorSchema, 503: errorSchema },
      },
    };
  // DRAIN_PATH and DRAIN_PATH/<token> both reach the handler, which refuses the one that is not configured: a
  // wrong token is answered (404, connection closed) by the drain rather than by the router's generic 404,
  // whose connection stays open to read the body.
  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
      const started = process.hrtime.bigint();
      let result: Answer;
      try {
        result = await handleDrain(req, reply, opts);
      } catch (err) {
        req.log.error({ err }, 'log drain request failed');
        result = answer(500, 'Internal Server Error', 'the request could not be spooled; nothing of it was acknowledged', { close: true });
      }
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      opts.metrics.requestSeconds.observe(seconds);
      opts.metrics.requests.inc({ status: result.status === 499 ? 'aborted' : String(result.status) });
      if (result.status >= 400 && result.status !== 499) {
        req.log.warn({ status: result.status, reason: result.body.message }, 'log drain request refused');
      }
      if (result.close) {
        reply.header('connection', 'close');
        // Refused before its body was read: the connection goes once answered, rather than Node reading the rest.
        if (!req.raw.complete) closeWithoutReading(reply.raw);
      }
      if (result.headers) reply.headers(result.headers);
      if (result.status < 400) return reply.code(result.status).send(result.body);
      // A refusal is a problem document (src/http/problem.ts); the body's other fields (`line`) ride as extensions.
      const { error: _reason, message, ...extensions } = result.body;
      return sendProblem(reply, result.status, String(message), { code: result.status === 499 ? 'client_closed_request' : undefined, extensions });
  };
  app.post(DRAIN_PATH, route, handler);
  app.post(`${DRAIN_PATH}/:token`, route, handler);
}

