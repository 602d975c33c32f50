// GET /api/v1/logs/stream: Server-Sent Events of log lines as they are stored, whichever way they came (drain,
// history, tail) and in whichever instance: one poller per process reads the lines stored since its last read
// (`stored_at`, stamped by the store at insert) and hands each to the connected clients whose filters it passes.
// The poller runs only while a client is connected; a client that goes away is forgotten at once.
import { inSharedHeavyLane } from '../store/read-lanes.js';
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Gauge } from 'prom-client';
import { z } from 'zod';
import type { Runtime } from '../runtime.js';
import { counter, gauge } from '../metrics.js';
import { logFilterFields } from './logs-routes.js';
import { clientKeyer, type RouteRegistry } from './routes.js';
import { sendProblem } from '../http/problem.js';
import { FoundLogLine, LOG_LEVELS, logsStoredSince, storedCopiesOf, storeNow } from '../store/tables/logs.js';
import { toDateTime64 } from '../values.js';

const POLL_MS = 250;
/** Lines stored up to this long before the newest one seen are read again (an insert commits after its stamp). */
const OVERLAP_MS = 5_000;
const KEEPALIVE_MS = 15_000;
/** Lines per read of the feed: a poll reads page after page until it has caught up. */
const PAGE_LINES = 1_000;
const ZERO_UUID = '00000000-0000-0000-0000-000000000000';
/** Records the feed remembers having shown (a digest each, about 100 bytes): a later copy of one is not shown again. */
const SHOWN_RECORDS = 50_000;

const StreamQuery = z.strictObject(logFilterFields);
type StreamQuery = z.output<typeof StreamQuery>;

type StoredLine = Awaited<ReturnType<typeof logsStoredSince>>[number];

interface Client {
  matches(line: StoredLine): boolean;
  send(text: string): void;
  /** Bytes written to the client and not yet taken by its socket. */
  unread(): number;
}

function severity(level: string): number {
  return (LOG_LEVELS as Record<string, number>)[level.toUpperCase()] ?? LOG_LEVELS.INFO;
}

function matcher(q: StreamQuery): (line: StoredLine) => boolean {
  const apps = new Set(q.app);
  const min = q.level ? LOG_LEVELS[q.level] : 0;
  const contains = q.contains?.toLowerCase();
  return (l) =>
    (apps.size === 0 || apps.has(l.app)) &&
    severity(l.level) >= min &&
    (!q.request_id || l.request_id === q.request_id) &&
    (!contains || l.message.toLowerCase().includes(contains));
}

/** The one poller of a process: reads newly stored lines while anybody listens. */
export class LogFeed {
  private readonly clients = new Set<Client>();
  private timer: NodeJS.Timeout | null = null;
  private polling = false;
  private watermarkMs: number | null = null;
  private starting: Promise<void> | null = null;
  private readonly seen = new Map<string, number>(); // batch_id:line -> stored_at ms, within the overlap
  /**
   * The records the feed showed last (their identity's digest), SHOWN_RECORDS at most, oldest forgotten first: a
   * record whose copy the store deleted once a later one came (a history copy, when the drain's arrives) leaves no
   * earlier copy for the keyed read to find.
   */
  private readonly shown = new Set<string>();
  private readonly openedAt = Date.now();

  constructor(private readonly rt: Runtime, private readonly clientsGauge?: Gauge) {}

  get size(): number {
    return this.clients.size;
  }

  /** Whether the poller runs (it stops with the last client). */
  get active(): boolean {
    return this.timer !== null;
  }

  /** Resolves once the feed knows where "now" is in the store's clock: lines stored after that are sent. */
  ready(): Promise<void> {
    if (this.watermarkMs !== null) return Promise.resolve();
    // Shared by every client waiting for it: read detached from the one that started it (src/store/read-lanes.ts).
    this.starting ??= inSharedHeavyLane(() => storeNow(this.rt.store, {}))
      .then(([row]) => {
        this.watermarkMs ??= Date.parse(`${row.now.replace(' ', 'T')}Z`);
      })
      .finally(() => {
        this.starting = null;
      });
    return this.starting;
  }

  subscribe(client: Client): () => void {
    this.clients.add(client);
    this.clientsGauge?.set(this.clients.size);
    // The poller serves every client: its timer is made outside the first client's context, whose signal would
    // cancel its reads for all once that client left.
    this.timer ??= inSharedHeavyLane(() => setInterval(() => void this.poll(), POLL_MS));
    return () => {
      this.clients.delete(client);
      this.clientsGauge?.set(this.clients.size);
      if (this.clients.size === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = null;
        this.watermarkMs = null; // a later client starts from its own "now"
        this.seen.clear();
        this.shown.clear();
      }
    };
  }

  /**
   * The lines of a page (as `batch:line`) whose record has a copy stored before them (issue 44.6: the feed showed
   * each stored copy of a record until a merge). One keyed read of the page's records' copies.
   */
  private async laterCopies(lines: StoredLine[]): Promise<Set<string>> {
    const later = new Set<string>();
    if (lines.length === 0) return later;
    const keyOf = (l: StoredLine) => identity({ ts: l.timestamp, app: l.app, request_id: l.request_id, worker: l.worker, message: l.message });
    let from = lines[0].timestamp;
    let to = lines[0].timestamp;
    for (const l of lines) {
      if (l.timestamp < from) from = l.timestamp;
      if (l.timestamp > to) to = l.timestamp;
    }
    const copies = await storedCopiesOf(this.rt.store, {
      apps: [...new Set(lines.map((l) => l.app))],
      from,
      to,
      key_ts: lines.map((l) => l.timestamp),
      key_app: lines.map((l) => l.app),
      key_request: lines.map((l) => l.request_id),
      key_worker: lines.map((l) => l.worker),
      key_message: lines.map((l) => l.message),
    });
    const first = new Map<string, string>();
    for (const c of copies) {
      const at = position(c.stored_text, c.batch_text, c.line);
      const k = identity(c);
      const known = first.get(k);
      if (known === undefined || at < known) first.set(k, at);
    }
    for (const l of lines) {
      const earliest = first.get(keyOf(l));
      if (earliest !== undefined && earliest < position(l.stored_at, l.batch_id, l.line)) later.add(`${l.batch_id}:${l.line}`);
    }
    return later;
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      // The store's clock stamps stored_at: start from its "now", not ours.
      await this.ready();
      if (this.watermarkMs === null) return;
      // The last OVERLAP_MS are read again on every poll (an insert commits after its stamp), in pages that follow
      // each other by position: a single LIMIT once filled every read with lines already sent when more than a
      // page were stored within the overlap, and nothing stored later was read again.
      const receivedSince = toDateTime64(this.openedAt - 24 * 3_600_000);
      let after = { since: toDateTime64(this.watermarkMs - OVERLAP_MS), after_b: ZERO_UUID, after_l: 0 };
      for (;;) {
        const lines = await logsStoredSince(this.rt.store, { ...after, received_since: receivedSince, limit: PAGE_LINES });
        // The last client left while the store answered: the feed starts afresh with the next one.
        if (this.timer === null || this.watermarkMs === null) return;
        const later = await this.laterCopies(lines.filter((l) => !this.seen.has(`${l.batch_id}:${l.line}`)));
        if (this.timer === null || this.watermarkMs === null) return;
        for (const line of lines) {
          const key = `${line.batch_id}:${line.line}`;
          if (this.seen.has(key)) continue;
          const storedMs = Date.parse(`${line.stored_at.replace(' ', 'T')}Z`);
          this.seen.set(key, storedMs);
          if (storedMs > this.watermarkMs) this.watermarkMs = storedMs;
          // A copy of a record stored before (the drain's line and a history fill of it, two fills): shown once.
          if (later.has(key)) continue;
          const record = createHash('sha256').update(identity({ ts: line.timestamp, app: line.app, request_id: line.request_id, worker: line.worker, message: line.message })).digest('base64');
          if (this.shown.has(record)) continue;
          this.shown.add(record);
          if (this.shown.size > SHOWN_RECORDS) this.shown.delete(this.shown.values().next().value!);
          const text = `data: ${JSON.stringify(asFound(line))}\n\n`;
          for (const c of [...this.clients]) if (c.matches(line)) c.send(text);
          // Sockets take data only between turns of the event loop: a burst sent in one turn would sit whole in every
          // client's buffer, the fast ones' too. A turn after each line some client has not taken yet lets them read.
          if ([...this.clients].some((c) => c.unread() > 0)) await new Promise((resolve) => setImmediate(resolve));
          if (this.timer === null || this.watermarkMs === null) return;
        }
        const last = lines[lines.length - 1];
        if (lines.length < PAGE_LINES || !last) break;
        after = { since: last.stored_at, after_b: last.batch_id, after_l: last.line };
      }
      for (const [key, ms] of this.seen) if (ms < this.watermarkMs - 2 * OVERLAP_MS) this.seen.delete(key);
    } catch (err) {
      this.rt.logger.warn({ err }, 'log stream: reading newly stored lines failed; retrying');
    } finally {
      this.polling = false;
    }
  }
}

/** Where a stored copy sits in the feed's order: (stored_at, batch, line), comparable as text. */
const position = (storedAt: string, batchId: string, line: number) => `${storedAt}\u0000${batchId}\u0000${String(line).padStart(10, '0')}`;
const identity = (l: { ts: string; app: string; request_id: string; worker: string; message: string }) =>
  `${l.ts}\u0000${l.app}\u0000${l.request_id}\u0000${l.worker}\u0000${l.message}`;

function asFound(line: StoredLine): z.input<typeof FoundLogLine> & { origin: string } {
  const { stored_at: _stored, ...rest } = line;
  return { ...rest, timestamp: `${line.timestamp.replace(' ', 'T')}Z` };
}


/** Registers GET /logs/stream (one of the query API's route groups). */
export function logStreamRoutes(app: FastifyInstance, registry: RouteRegistry, rt: Runtime): void {
  const clientsGauge = gauge(rt.registry, { name: 'tallyhouse_log_stream_clients', help: 'Clients connected to GET /api/v1/logs/stream.' });
  const dropped = counter(rt.registry, {
    name: 'tallyhouse_log_stream_disconnected_total',
    help: 'Log stream clients disconnected by the service: slow (left more than LOG_STREAM_MAX_BUFFER_BYTES unread).',
    labelNames: ['reason'],
  });
  const refused = counter(rt.registry, {
    name: 'tallyhouse_log_stream_refused_total',
    help: 'Log stream requests refused: all (LOG_STREAM_MAX_CLIENTS) or per_client (LOG_STREAM_MAX_PER_CLIENT).',
    labelNames: ['limit'],
  });
  const { LOG_STREAM_MAX_CLIENTS: maxClients, LOG_STREAM_MAX_PER_CLIENT: maxPerClient, LOG_STREAM_MAX_BUFFER_BYTES: maxBufferBytes } = rt.config;
  const tokens = (rt.config.API_TOKENS ?? []).length > 0;
  const ownerOf = clientKeyer(rt.config);
  const feed = new LogFeed(rt, clientsGauge);
  const open = new Set<() => void>();
  const perOwner = new Map<string, number>();
  app.addHook('preClose', async () => {
    for (const close of [...open]) close();
  });
  registry.get(app, {
    path: '/logs/stream',
    operationId: 'streamLogs',
    errors: { 429: 'LOG_STREAM_MAX_PER_CLIENT streams of this token (or address) are open already; Retry-After says when to try again', 503: 'LOG_STREAM_MAX_CLIENTS streams are open already; Retry-After says when to try again' },
    heavy: true,
    summary: 'Server-Sent Events: each log line as it is stored (drain, history or tail), with the filters of /logs',
    description:
      'One `data:` event per line, a JSON object with the fields of a /logs line and `origin` (drain, history, tail); a comment line every 15 s keeps the connection open. Lines stored before the connection are not sent (use /logs for them). At most LOG_STREAM_MAX_CLIENTS streams at once (503) and LOG_STREAM_MAX_PER_CLIENT per token, or per address without tokens (429); a client that leaves more than LOG_STREAM_MAX_BUFFER_BYTES unread is disconnected.',
    query: StreamQuery,
    response: FoundLogLine,
    eventStream: true,
    handler: async (q, request, reply) => {
      if (feed.size >= maxClients) {
        refused.inc({ limit: 'all' });
        return sendProblem(reply.header('retry-after', '30'), 503, `at most ${maxClients} log streams at once (LOG_STREAM_MAX_CLIENTS); try again later`, { code: 'unavailable' });
      }
      const owner = ownerOf(request);
      if ((perOwner.get(owner) ?? 0) >= maxPerClient) {
        refused.inc({ limit: 'per_client' });
        return sendProblem(
          reply.header('retry-after', '30'),
          429,
          `at most ${maxPerClient} log streams per ${tokens ? 'token' : 'address'} at once (LOG_STREAM_MAX_PER_CLIENT); close one first`,
          { code: 'too_many_streams' },
        );
      }
      perOwner.set(owner, (perOwner.get(owner) ?? 0) + 1);
      let closed = false;
      let release = (): void => {
        const n = (perOwner.get(owner) ?? 1) - 1;
        if (n > 0) perOwner.set(owner, n);
        else perOwner.delete(owner);
        release = () => undefined;
      };
      try {
        await feed.ready();
      } catch (err) {
        release();
        throw err;
      }
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
      let unsubscribe = (): void => undefined;
      let keepalive: NodeJS.Timeout | undefined;
      const close = (): void => {
        if (closed) return;
        closed = true;
        clearInterval(keepalive);
        unsubscribe();
        release();
        open.delete(close);
        if (!res.writableEnded && !res.destroyed) res.end();
      };
      // Back-pressure (CONTRIBUTING.md rule 21): what a client leaves unread stays in this process, so a client
      // whose unread bytes would pass the bound is disconnected (destroyed: its buffer freed at once) and counted.
      const write = (text: string): void => {
        if (closed) return;
        // (A line longer than the bound still goes to a client that has read everything: whole lines only.)
        if (res.writableLength > 0 && res.writableLength + Buffer.byteLength(text) > maxBufferBytes) {
          dropped.inc({ reason: 'slow' });
          request.log.warn({ unreadBytes: res.writableLength, maxBufferBytes }, 'log stream: client too slow for its buffer; disconnected');
          res.destroy();
          close();
          return;
        }
        res.write(text);
      };
      write(': connected\n\n');
      keepalive = setInterval(() => write(': keep-alive\n\n'), KEEPALIVE_MS);
      unsubscribe = feed.subscribe({ matches: matcher(q), send: write, unread: () => res.writableLength });
      open.add(close);
      request.raw.on('close', close);
      res.on('close', close);
      res.on('error', close);
    },
  });
}
