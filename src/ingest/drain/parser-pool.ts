// Where drain bodies are parsed: in worker threads (default: one per spare core), so that JSON parsing and row
// building, the bulk of the per-line work, leave the event loop free for requests, the spool and the store.
// With `threads: 0` (or when a worker cannot start) bodies are parsed on the request's thread.
//
// Protocol (one request = one id, its messages in order on one worker):
//   main -> worker: begin {json, ctx, maxLineBytes}, chunk {buf} (each acknowledged), end | abort
//   worker -> main: rows {buf, count}, rejects {buf, count}, ack, done {summary} | error {message}
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../../log.js';
import { moduleWorker } from './module-worker.js';
import type { BatchContext } from '../../collectors/log-line.js';
import { BatchParser, type ParseOptions, type ParseSink, type ParseSummary } from './parse-body.js';

export type ToWorker =
  | { t: 'begin'; id: number; json: boolean; ctx: BatchContext; maxLineBytes: number }
  | { t: 'chunk'; id: number; buf: Uint8Array }
  | { t: 'end'; id: number }
  | { t: 'abort'; id: number };

export type FromWorker =
  | { t: 'rows' | 'rejects'; id: number; buf: Uint8Array; count: number }
  | { t: 'ack'; id: number }
  | { t: 'ready'; id: 0 }
  | { t: 'done'; id: number; summary: ParseSummary }
  | { t: 'error'; id: number; message: string };

/**
 * One body being parsed. push() resolves when more may be sent (the chunk may be moved to a worker thread: not to
 * be read after); end() once every row was handed to the sink.
 */
export interface ParseSession {
  push(chunk: Buffer): Promise<void>;
  end(): Promise<ParseSummary>;
  abort(): void;
}

/** Chunks a request may have queued at its worker before push() waits (bounded memory per request). */
const MAX_CHUNKS_IN_FLIGHT = 8;

const asBuffer = (u: Uint8Array): Buffer => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

function inlineSession(opts: ParseOptions, sink: ParseSink): ParseSession {
  const parser = new BatchParser(opts, sink);
  return {
    push: async (chunk) => parser.push(chunk),
    end: async () => parser.end(),
    abort: () => undefined,
  };
}

interface RemoteSession {
  sink: ParseSink;
  inFlight: number;
  waiting: (() => void) | null;
  done: ((s: ParseSummary) => void) | null;
  failed: ((e: Error) => void) | null;
  error: Error | undefined;
}

class ParserThread {
  readonly sessions = new Map<number, RemoteSession>();
  private worker: Worker;
  /**
   * Whether the worker loaded its module and said so (one that never does is not replaced forever). Not the
   * thread's 'online' event: a thread comes online before its module fails to load.
   */
  online = false;

  constructor(private readonly onExit: (thread: ParserThread, err: Error) => void, entry?: URL) {
    this.worker = entry ? new Worker(entry) : moduleWorker(import.meta.url, 'parser-worker');
    this.worker.unref();
    this.worker.on('message', (m: FromWorker) => this.receive(m));
    this.worker.on('error', (err) => this.fail(err));
    this.worker.on('exit', (code) => this.fail(new Error(`parser worker exited (${code})`)));
  }

  post(m: ToWorker, transfer: ArrayBuffer[] = []): void {
    this.worker.postMessage(m, transfer);
  }

  async terminate(): Promise<void> {
    this.worker.removeAllListeners('exit');
    await this.worker.terminate();
  }

  private receive(m: FromWorker): void {
    if (m.t === 'ready') {
      this.online = true;
      return;
    }
    const s = this.sessions.get(m.id);
    if (!s) return;
    switch (m.t) {
      case 'rows':
        s.sink.onRows(asBuffer(m.buf), m.count);
        return;
      case 'rejects':
        s.sink.onRejects(asBuffer(m.buf), m.count);
        return;
      case 'ack': {
        s.inFlight--;
        const w = s.waiting;
        s.waiting = null;
        w?.();
        return;
      }
      case 'done': {
        this.sessions.delete(m.id);
        s.done?.(m.summary);
        return;
      }
      case 'error':
        this.sessions.delete(m.id);
        this.settleWithError(s, new Error(`drain parser failed: ${m.message}`));
        return;
    }
  }

  private settleWithError(s: RemoteSession, err: Error): void {
    s.error = err;
    const w = s.waiting;
    s.waiting = null;
    w?.();
    s.failed?.(err);
  }

  private fail(err: Error): void {
    for (const s of this.sessions.values()) this.settleWithError(s, err);
    this.sessions.clear();
    this.onExit(this, err);
  }
}

export class ParserPool {
  private threads: ParserThread[] = [];
  private nextId = 1;
  private closed = false;
  private failedStarts = 0;

  /**
   * `threads` parser workers (default: one per core beyond the first, at most 4; 0 = parse inline). `entry`:
   * another worker module (tests).
   */
  constructor(
    threads = Math.max(1, Math.min(4, availableParallelism() - 1)),
    private readonly logger?: Logger,
    private readonly entry?: URL,
  ) {
    for (let i = 0; i < threads; i++) this.spawn();
  }

  get size(): number {
    return this.threads.length;
  }

  /** Workers started so far, replacements included. */
  started = 0;

  private spawn(): void {
    this.started++;
    try {
      this.threads.push(new ParserThread((thread, err) => this.replace(thread, err), this.entry));
    } catch (err) {
      this.logger?.error({ err: (err as Error).message }, 'drain parser worker could not start; parsing on the request thread');
    }
  }

  private replace(thread: ParserThread, err: Error): void {
    this.threads = this.threads.filter((t) => t !== thread);
    if (this.closed) return;
    this.failedStarts = thread.online ? 0 : this.failedStarts + 1;
    if (this.failedStarts >= 3) {
      this.logger?.error({ err: err.message }, 'drain parser workers do not start; parsing on the request thread from now on');
      return;
    }
    this.logger?.error({ err: err.message }, 'drain parser worker failed; its requests are answered 500 and a new worker starts');
    this.spawn();
  }

  open(opts: ParseOptions, sink: ParseSink): ParseSession {
    if (this.threads.length === 0) return inlineSession(opts, sink);
    // The thread with the fewest bodies in progress.
    const thread = this.threads.reduce((a, b) => (b.sessions.size < a.sessions.size ? b : a));
    const id = this.nextId++;
    const s: RemoteSession = { sink, inFlight: 0, waiting: null, done: null, failed: null, error: undefined };
    thread.sessions.set(id, s);
    thread.post({ t: 'begin', id, json: opts.json, ctx: opts.ctx, maxLineBytes: opts.maxLineBytes });
    let ended = false;
    return {
      async push(chunk) {
        if (s.error) throw s.error;
        s.inFlight++;
        // A chunk that owns its memory (an HTTP body chunk: Node copies each out of the socket's read) is moved to
        // the worker; a view into shared memory (gunzip's output, Node's small-buffer pool) is copied. The caller
        // must not read the chunk after push().
        const movable = chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength && chunk.byteLength > 0;
        thread.post({ t: 'chunk', id, buf: chunk }, movable ? [chunk.buffer as ArrayBuffer] : []);
        if (s.inFlight >= MAX_CHUNKS_IN_FLIGHT) {
          await new Promise<void>((resolve) => (s.waiting = resolve));
          if (s.error) throw s.error;
        }
      },
      end() {
        ended = true;
        if (s.error) return Promise.reject(s.error);
        return new Promise<ParseSummary>((resolve, reject) => {
          s.done = resolve;
          s.failed = reject;
          thread.post({ t: 'end', id });
        });
      },
      abort() {
        if (ended || !thread.sessions.has(id)) return;
        thread.sessions.delete(id);
        thread.post({ t: 'abort', id });
      },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    const threads = this.threads;
    this.threads = [];
    await Promise.all(threads.map((t) => t.terminate()));
  }
}
