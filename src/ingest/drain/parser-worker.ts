// A parser thread of the log drain: bodies arrive in chunks (tagged with their request), rows go back in
// sealed chunks, then the per-line answer. See parser-pool.ts for the protocol.
import { parentPort } from 'node:worker_threads';
import { BatchParser, type ParseOptions } from './parse-body.js';
import type { ToWorker, FromWorker } from './parser-pool.js';

const port = parentPort;
if (!port) throw new Error('parser-worker.ts runs as a worker thread');
const sessions = new Map<number, BatchParser>();

/** A sealed chunk owns its memory when large; move it rather than copy it. */
function send(message: FromWorker, buf?: Buffer): void {
  const movable = buf && buf.byteOffset === 0 && buf.byteLength === buf.buffer.byteLength;
  port!.postMessage(message, movable ? [buf.buffer as ArrayBuffer] : []);
}

port.on('message', (m: ToWorker) => {
  try {
    handle(m);
  } catch (err) {
    sessions.delete(m.id);
    send({ t: 'error', id: m.id, message: err instanceof Error ? err.message : String(err) });
  }
});

// Loaded and listening: from now on a failure is the worker's, not its start's (parser-pool.ts).
send({ t: 'ready', id: 0 });

function handle(m: ToWorker): void {
  switch (m.t) {
    case 'begin': {
      const opts: ParseOptions = { json: m.json, ctx: m.ctx, maxLineBytes: m.maxLineBytes };
      const id = m.id;
      sessions.set(
        id,
        new BatchParser(opts, {
          onRows: (buf, count) => send({ t: 'rows', id, buf, count }, buf),
          onRejects: (buf, count) => send({ t: 'rejects', id, buf, count }, buf),
        }),
      );
      return;
    }
    case 'chunk': {
      const parser = sessions.get(m.id);
      parser?.push(Buffer.from(m.buf.buffer, m.buf.byteOffset, m.buf.byteLength));
      send({ t: 'ack', id: m.id });
      return;
    }
    case 'end': {
      const parser = sessions.get(m.id);
      sessions.delete(m.id);
      if (!parser) return;
      const summary = parser.end();
      send({ t: 'done', id: m.id, summary });
      return;
    }
    case 'abort':
      sessions.delete(m.id);
      return;
  }
}
