// POST /v1/serverless/logs/stream: Server-Sent Events, one JSON log record (the history item's shape) per
// `data:` line, as the virtual clock passes the records; an empty `data:` line as a keep-alive; `event: error`
// before the simulator ends a stream itself. The selection (apps, filters) is the history's. A `start` in the
// past replays from there first (a client resuming after a drop); without it the stream begins at "now".
import type { ServerResponse } from 'node:http';
import type { SimModel } from './model.js';
import type { Handlers } from './handlers.js';
import type { LogLine } from './activity.js';
import type { Params } from './http-util.js';
import { bad } from './http-util.js';
import { HOUR_MS, parseTimeParam } from './time.js';

const POLL_MS = 50;
const KEEPALIVE_MS = 15_000;

interface Connection {
  res: ServerResponse;
  fromMs: number;
  selection: ReturnType<Handlers['logSelection']>;
  timer: NodeJS.Timeout;
  lastWriteMs: number;
}

export class LogStreams {
  private readonly open = new Set<Connection>();
  /** Records written to every stream so far (tests compare with the truth). */
  private written = 0;

  constructor(private readonly model: SimModel, private readonly handlers: Handlers) {}

  /** Checks the request (throws an ApiError before any byte is written), then starts the stream. */
  start(res: ServerResponse, p: Params, body: unknown): void {
    const selection = this.handlers.logSelection(p, body);
    const nowMs = this.model.clock.nowMs();
    const start = p.one('start');
    const startMs = start === undefined ? nowMs : parseTimeParam(start, 'UTC');
    if (startMs === null) throw bad(`start: expected an ISO 8601 datetime, got '${start}'`);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    res.flushHeaders();
    const conn: Connection = { res, fromMs: Math.min(startMs, nowMs), selection, timer: setInterval(() => this.tick(conn), POLL_MS), lastWriteMs: Date.now() };
    this.open.add(conn);
    res.on('close', () => this.forget(conn));
    this.tick(conn);
  }

  /** Streams open now. */
  get size(): number {
    return this.open.size;
  }

  get recordsWritten(): number {
    return this.written;
  }

  /** Cuts every open stream as a network failure would: no error event, the connection just goes. */
  drop(): number {
    const n = this.open.size;
    for (const conn of [...this.open]) {
      this.forget(conn);
      conn.res.socket?.destroy();
    }
    return n;
  }

  close(): void {
    for (const conn of [...this.open]) {
      this.forget(conn);
      if (!conn.res.writableEnded) conn.res.end('event: error\ndata: {"detail":"the simulator is shutting down"}\n\n');
    }
  }

  private forget(conn: Connection): void {
    clearInterval(conn.timer);
    this.open.delete(conn);
  }

  private tick(conn: Connection): void {
    if (conn.res.destroyed || conn.res.writableEnded) return this.forget(conn);
    const toMs = this.model.clock.nowMs();
    let out = '';
    if (toMs > conn.fromMs) {
      for (const l of this.linesBetween(conn, conn.fromMs, toMs)) {
        out += `data: ${JSON.stringify(this.handlers.logItem(l))}\n\n`;
        this.written++;
      }
      conn.fromMs = toMs;
    }
    const wall = Date.now();
    if (!out && wall - conn.lastWriteMs >= KEEPALIVE_MS) out = 'data:\n\n';
    if (out) {
      conn.lastWriteMs = wall;
      conn.res.write(out);
    }
  }

  /** Matching lines logged in [fromMs, toMs), oldest first. */
  private linesBetween(conn: Connection, fromMs: number, toMs: number): LogLine[] {
    const out: LogLine[] = [];
    for (let h = Math.floor(fromMs / HOUR_MS); h * HOUR_MS < toMs; h++) {
      const merged: LogLine[] = [];
      for (const app of conn.selection.apps) {
        for (const l of this.model.activity.logs(app, h)) if (l.tsMs >= fromMs && l.tsMs < toMs && conn.selection.matches(l)) merged.push(l);
      }
      merged.sort((a, b) => a.tsMs - b.tsMs || a.appIndex - b.appIndex || a.seq - b.seq);
      out.push(...merged);
    }
    return out;
  }
}
