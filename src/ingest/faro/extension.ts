// POST /v1/faro/collect: a Grafana Faro receiver. The contract of Grafana's own receiver (Alloy faro.receiver):
// the key in x-api-key (one per front-end app, FARO_APP_KEYS), optional gzip, 202 when accepted, 400 on bad
// JSON, 401 on a wrong key, 413 over FARO_MAX_BODY_BYTES, 429 with Retry-After over the per-key rate, CORS only
// for FARO_ALLOWED_ORIGINS. The key is checked before the body is read. Items go through their own spool (the
// drain's SQLite spool and replayer, DATA_DIR/spool/faro) into faro_items: 202 means every accepted item and
// every reject is durable (CONTRIBUTING.md rule 16). A bad item is refused alone, with its reason, in ingest_rejects.
import { createHash, timingSafeEqual } from 'node:crypto';
import { join } from 'node:path';
import { crc32, gunzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TransportBody } from '@grafana/faro-core';
import { Gauge } from 'prom-client';
import type { Extension } from '../../runtime.js';
import { SpoolReplayer } from '../drain/replay.js';
import { openSpool } from '../drain/spool/open-spool.js';
import { SpoolFullError, type StagedData } from '../drain/spool/spool.js';
import { applyTtlDays } from '../../store/retention.js';
import { FARO_ITEM_COLUMNS, sessionRequestIds } from '../../store/tables/faro-items.js';
import { MAX_NESTING_DEPTH, nestingDepth } from '../../json-nesting.js';
import { mapItems } from './map-items.js';
import { SessionRequestIds } from './session-request-ids.js';
import { BUSY_RETRY_AFTER_SECONDS, closeWithoutReading, pushBudgets } from '../body-budget.js';
import { sendProblem } from '../../http/problem.js';

export const FARO_PATH = '/v1/faro/collect';
const REJECT_SOURCE = 'faro';
const ALLOWED_HEADERS = 'content-type, content-encoding, x-api-key, x-faro-session-id';

/** A token bucket per key: `perSecond` payloads a second, bursts of as many. */
class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  constructor(private readonly perSecond: number) {}
  /** Seconds to wait, or 0 when the payload may go now. */
  take(key: string, nowMs = Date.now()): number {
    const b = this.buckets.get(key) ?? { tokens: this.perSecond, at: nowMs };
    b.tokens = Math.min(this.perSecond, b.tokens + ((nowMs - b.at) / 1000) * this.perSecond);
    b.at = nowMs;
    this.buckets.set(key, b);
    if (b.tokens < 1) return Math.max(1, Math.ceil((1 - b.tokens) / this.perSecond));
    b.tokens -= 1;
    return 0;
  }
}

const staged = (lines: string[]): StagedData => {
  const buf = Buffer.from(lines.length > 0 ? `${lines.join('\n')}\n` : '');
  return { count: lines.length, bytes: buf.length, crc: crc32(buf), file: undefined, memory: buf.length > 0 ? [buf] : [] };
};

/** The app whose key this is, comparing every configured key in constant time. */
function appOfKey(keys: ReadonlyMap<string, string>, given: string | undefined): string | undefined {
  if (!given) return undefined;
  const g = createHash('sha256').update(given).digest();
  let found: string | undefined;
  for (const [key, app] of keys) if (timingSafeEqual(createHash('sha256').update(key).digest(), g)) found = app;
  return found;
}

/** `demoKey`: demo mode without FARO_APP_KEYS accepts the simulated front end (app demo-web) with this key. */
export function faroExtension(options: { demoKey?: string } = {}): Extension {
  return async (rt) => {
    const keys = rt.config.FARO_APP_KEYS ?? (options.demoKey ? new Map([[options.demoKey, 'demo-web']]) : undefined);
    const logger = rt.logger.child({ component: 'faro' });
    if (!keys || keys.size === 0) {
      rt.app.post(FARO_PATH, async (_req, reply) =>
        sendProblem(reply, 404, 'the Faro receiver is off: set FARO_APP_KEYS (app=key pairs) to enable it'),
      );
      return undefined;
    }
    // The retention the receiver refuses older items by is the table's TTL (the migration writes 90 days).
    const retentionDays = rt.config.FARO_RETENTION_DAYS;
    await applyTtlDays(rt.store, 'faro_items', 'timestamp', retentionDays, { logger, rewriteExistingParts: false });
    const spool = await openSpool({ dir: join(rt.config.DATA_DIR, 'spool', 'faro'), maxBytes: rt.config.LOG_DRAIN_SPOOL_MAX_BYTES, logger, registry: rt.registry });
    const replayer = new SpoolReplayer({
      spool,
      table: 'faro_items',
      store: rt.store,
      writer: rt.writer,
      logger,
      lingerMs: rt.config.WRITER_FLUSH_INTERVAL_MS,
      infileDir: spool.stagingDir,
    });
    replayer.start();
    new Gauge({
      name: 'tallyhouse_faro_spool_bytes',
      help: 'Bytes of accepted Faro items in the spool not yet confirmed by the store.',
      registers: [rt.registry],
      collect() {
        this.set(spool.bytes);
      },
    });
    const maxRequestIds = rt.config.FARO_SESSION_MAX_REQUEST_IDS;
    const requestIds = new SessionRequestIds({
      maxPerSession: maxRequestIds,
      stored: async (session_id, limit) => (await sessionRequestIds(rt.store, { session_id, limit })).map((r) => r.request_id),
      onStoredError: (err) => logger.warn({ err: err.message }, "a session's stored request ids could not be read; counting from none"),
    });
    const origins = new Set(rt.config.FARO_ALLOWED_ORIGINS);
    const limiter = new RateLimiter(rt.config.FARO_RATE_LIMIT_PER_SECOND);
    const maxBytes = rt.config.FARO_MAX_BODY_BYTES;
    const budgets = pushBudgets(rt.app.server, rt.config, rt.registry);

    const cors = (req: FastifyRequest, reply: FastifyReply) => {
      const origin = req.headers.origin;
      if (origin && origins.has(origin)) {
        reply.header('access-control-allow-origin', origin).header('vary', 'Origin');
      }
    };

    await rt.app.register(async (app: FastifyInstance) => {
      app.removeAllContentTypeParsers();
      app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: maxBytes }, (_req, body, done) => done(null, body));
      app.options(FARO_PATH, async (req, reply) => {
        cors(req, reply);
        if (req.headers.origin && origins.has(req.headers.origin)) {
          reply.header('access-control-allow-methods', 'POST, OPTIONS').header('access-control-allow-headers', ALLOWED_HEADERS).header('access-control-max-age', '600');
        }
        return reply.code(204).send();
      });
      app.post(FARO_PATH, {
        // Before the body is read: a wrong key costs no buffering, a sender over its rate no parsing.
        onRequest: async (req, reply) => {
          cors(req, reply);
          const key = req.headers['x-api-key'];
          const app = appOfKey(keys, Array.isArray(key) ? key[0] : key);
          // Refused before the body is read: the connection closes once answered, nothing of the body is read.
          if (!app) {
            closeWithoutReading(reply.raw);
            return sendProblem(reply.header('connection', 'close'), 401, 'x-api-key is missing or not one of FARO_APP_KEYS');
          }
          const wait = limiter.take(app);
          if (wait > 0) {
            closeWithoutReading(reply.raw);
            return sendProblem(reply.header('connection', 'close').header('retry-after', String(wait)), 429, `over FARO_RATE_LIMIT_PER_SECOND for ${app}; retry after ${wait} s`);
          }
          // A read slot (FARO_MAX_BODIES_READING, FARO_MAX_BODIES_PER_ADDRESS) and the slow-body guard while it reads.
          const address = budgets.clientAddress(req.raw);
          // Without a free slot it waits up to PUSH_SLOT_MAX_WAIT_MS, its bytes unread.
          const waited = budgets.slots.faro.acquire(address, req.raw.socket);
          const slot = typeof waited === 'function' || 'refused' in waited ? waited : await waited;
          if (typeof slot !== 'function') {
            budgets.refused('faro', 'busy');
            closeWithoutReading(reply.raw);
            const reason = 'refused' in slot ? slot.refused : 'no read slot';
            return sendProblem(reply.header('retry-after', String(BUSY_RETRY_AFTER_SECONDS)).header('connection', 'close'), 503, `${reason}; retry after ${BUSY_RETRY_AFTER_SECONDS} s`);
          }
          const unwatch = budgets.guard.watch(req.raw, reply.raw, 'faro', { address });
          const release = () => {
            unwatch();
            slot();
          };
          // Stryker disable next-line StringLiteral: 'close' follows 'finish' on every answered request and releases the slot alone too (release is idempotent)
          reply.raw.once('finish', release);
          reply.raw.once('close', release);
          (req as FastifyRequest & { faroApp?: string }).faroApp = app;
        },
      }, async (req, reply) => {
        const app = (req as FastifyRequest & { faroApp?: string }).faroApp!;
        let raw = req.body as Buffer | undefined;
        if (!raw || raw.length === 0) return sendProblem(reply, 400, 'empty body: expected a Faro payload (JSON)');
        if (String(req.headers['content-encoding'] ?? '').toLowerCase() === 'gzip') {
          try {
            raw = gunzipSync(raw, { maxOutputLength: maxBytes });
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
              return sendProblem(reply, 413, `the decompressed body is over FARO_MAX_BODY_BYTES (${maxBytes})`);
            }
            return sendProblem(reply, 400, 'content-encoding gzip: the body is not valid gzip');
          }
        }
        const text = raw.toString('utf8');
        let body: unknown;
        try {
          // JSON.parse is iterative (any depth parses); what is walked afterwards is checked item by item.
          body = JSON.parse(text);
        } catch (err) {
          return sendProblem(reply, 400, `the body is not JSON: ${(err as Error).message}`);
        }
        if (!body || typeof body !== 'object' || Array.isArray(body)) {
          return sendProblem(reply, 400, 'expected a JSON object with meta, logs, exceptions, measurements, events or traces');
        }
        const sessionHeader = req.headers['x-faro-session-id'];
        const receivedAtMs = Date.now();
        const mapped = mapItems(body as TransportBody, {
          app,
          sessionHeader: Array.isArray(sessionHeader) ? sessionHeader[0] : sessionHeader,
          receivedAtMs,
          retentionDays,
          // One pass over the text: only a body nested past the limit somewhere has its items walked for depth.
          checkDepth: nestingDepth(text) > MAX_NESTING_DEPTH,
        });
        const overLimit = await requestIds.cap(mapped.rows);
        const id = createHash('sha256').update(app).update('\n').update(raw).digest('hex');
        const rejectRows = mapped.rejects.map((r) => JSON.stringify({ source: REJECT_SOURCE, reason: r.reason, raw: r.raw, line: r.index, batch_id: id }));
        try {
          const result = await spool.append({
            id,
            receivedAtMs,
            rowFormat: { format: 'JSONEachRow', columns: [...FARO_ITEM_COLUMNS] },
            rows: staged(mapped.rows.map((r) => JSON.stringify(r))),
            rejects: staged(rejectRows),
          });
          return reply.code(202).send({
            accepted: mapped.rows.length,
            rejected: mapped.rejects.length,
            duplicate: result.status === 'duplicate',
            ...(mapped.rejects.length > 0 ? { errors: mapped.rejects.slice(0, 10).map((r) => ({ item: r.index, reason: r.reason })) } : {}),
            ...(overLimit > 0
              ? {
                  request_ids_over_limit: overLimit,
                  message: `${overLimit} items were stored without their request id: their session already names FARO_SESSION_MAX_REQUEST_IDS (${maxRequestIds}) request ids`,
                }
              : {}),
          });
        } catch (err) {
          if (err instanceof SpoolFullError) return sendProblem(reply.header('retry-after', String(spool.retryAfterSeconds)), 503, err.message);
          throw err;
        }
      });
    });
    logger.info({ path: FARO_PATH, apps: [...new Set(keys.values())], origins: [...origins] }, 'Faro receiver on');
    return {
      name: 'faro',
      async stop() {
        await replayer.stop();
        await spool.close();
      },
      spool,
      replayer,
    } as { name: string; stop(): Promise<void> };
  };
}
