// Review finding 29.7 (streams): 20 clients of GET /logs/stream that never read, and a burst of drain lines, took
// the service from 263 MB to about 1.1 GB (what a client leaves unread stays in the service), and one token could
// take all 200 streams. A client that leaves more than LOG_STREAM_MAX_BUFFER_BYTES unread is now disconnected and
// counted; a token holds at most LOG_STREAM_MAX_PER_CLIENT streams.
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { logStreamRoutes } from '../../src/api/log-stream-route.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { testConfig } from '../support/store.js';

const TOKENS = ['stream-token-a-0123456789', 'stream-token-b-0123456789', 'stream-token-c-0123456789', 'stream-token-d-0123456789', 'stream-token-e-0123456789'];
const MAX_BUFFER_BYTES = 256 * 1024;
const LINE_BYTES = 512 * 1024;
const LINES = 40; // 20 MiB per client: more than the loopback socket's kernel buffers take

let service: Service;
let port: number;
const sockets: Socket[] = [];

beforeAll(async () => {
  service = await startService(
    testConfig({ PORT: '0', API_TOKENS: TOKENS.join(','), LOG_STREAM_MAX_PER_CLIENT: '5', LOG_STREAM_MAX_BUFFER_BYTES: String(MAX_BUFFER_BYTES) }),
    { logger: createLogger('silent'), registry: createRegistry({ defaultMetrics: false }), extensions: [apiExtension([logStreamRoutes])] },
  );
  port = Number(new URL(service.url).port);
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await service?.close();
});

/** Opens a stream on a raw socket, waits for the answer's head, then stops reading (paused: the kernel buffers fill, then the service's). */
function openNonReading(token: string): Promise<{ socket: Socket; status: number }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    sockets.push(socket);
    let head = '';
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      if (status === 200 && head.includes(': connected')) {
        socket.off('data', onData);
        socket.pause();
        resolve({ socket, status });
      } else if (status !== 0 && status !== 200) {
        socket.off('data', onData);
        resolve({ socket, status });
      }
    };
    socket.on('data', onData);
    socket.on('error', reject);
    socket.write(`GET /api/v1/logs/stream HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${token}\r\n\r\n`);
  });
}

async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = service.registry.getSingleMetric(name);
  if (!m) return 0;
  const values = (await m.get()).values.filter((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want));
  return values.reduce((n, v) => n + v.value, 0);
}

async function waitFor(what: () => Promise<boolean>): Promise<void> {
  while (!(await what())) await new Promise((r) => setTimeout(r, 100));
}

let received = 0;
describe('29.7: log streams are bounded', () => {
  it('a token gets at most LOG_STREAM_MAX_PER_CLIENT (5) streams: the sixth is 429', async () => {
    const opened = await Promise.all(TOKENS.slice(0, 4).flatMap((t) => Array.from({ length: 5 }, () => openNonReading(t))));
    expect(opened.map((o) => o.status)).toEqual(Array(20).fill(200));
    expect(await metric('tallyhouse_log_stream_clients')).toBe(20);
    expect((await openNonReading(TOKENS[0])).status).toBe(429);
    expect(await metric('tallyhouse_log_stream_refused_total', { limit: 'per_client' })).toBe(1);
  });

  it('20 clients that never read and 20 MiB of lines: each is disconnected at its buffer bound and counted; a reader gets every line', async () => {
    // A reading client, with the fifth token.
    const controller = new AbortController();
    const res = await fetch(`${service.url}/api/v1/logs/stream`, { headers: { authorization: `Bearer ${TOKENS[4]}` }, signal: controller.signal });
    expect(res.status).toBe(200);

    const reading = (async () => {
      let raw = '';
      try {
        for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) {
          raw += chunk;
          let at: number;
          while ((at = raw.indexOf('\n\n')) >= 0) {
            if (raw.startsWith('data: ')) received++;
            raw = raw.slice(at + 2);
          }
        }
      } catch {
        // aborted at the end
      }
    })();
    await waitFor(async () => (await metric('tallyhouse_log_stream_clients')) === 21);
    // wall-clock: the live stream follows the machine's clock: rows must be newer than the stream's start
    const now = new Date().toISOString().replace('T', ' ').replace('Z', '');
    const message = 'x'.repeat(LINE_BYTES);
    for (let i = 0; i < LINES; i += 10) {
      await service.store.client.insert({
        table: 'logs',
        format: 'JSONEachRow',
        values: Array.from({ length: 10 }, (_, j) => ({
          timestamp: now, level: 'INFO', app: 'burst', app_id: 'a', request_id: `r${i + j}`, job_id: '', endpoint: 'acme/burst', node: '', worker: '', source: 'stdout',
          isolate_source: '', message, attributes: {}, received_at: now, batch_id: '00000000-0000-4000-8000-00000000000a', line: i + j + 1,
        })),
      });
    }
    await waitFor(async () => (await metric('tallyhouse_log_stream_disconnected_total', { reason: 'slow' })) === 20);
    await waitFor(async () => received === LINES);
    expect(await metric('tallyhouse_log_stream_clients')).toBe(1);
    controller.abort();
    await reading;
  }, 120_000);
});

// Found while bounding the feed: it re-reads the last 5 s of stored lines on every poll (an insert commits after its
// stamp) with one LIMIT of 10,000, so more than 10,000 lines stored within 5 s (one insert of the writer's maximum
// and a little more) filled every read with lines already sent, and nothing stored later was ever read again.
describe('the feed keeps up with more lines in its overlap window than one read holds', () => {
  it('10,001 lines stored at once, then one more: the client gets the one more', async () => {
    const controller = new AbortController();
    const res = await fetch(`${service.url}/api/v1/logs/stream?app=flood`, { headers: { authorization: `Bearer ${TOKENS[4]}` }, signal: controller.signal });
    expect(res.status).toBe(200);
    let events = 0;
    let lastMessage = '';
    const reading = (async () => {
      let raw = '';
      try {
        for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) {
          raw += chunk;
          let at: number;
          while ((at = raw.indexOf('\n\n')) >= 0) {
            if (raw.startsWith('data: ')) {
              events++;
              lastMessage = (JSON.parse(raw.slice(6, at)) as { message: string }).message;
            }
            raw = raw.slice(at + 2);
          }
        }
      } catch {
        // aborted at the end
      }
    })();
    await waitFor(async () => (await metric('tallyhouse_log_stream_clients')) >= 1);
    // wall-clock: the live stream follows the machine's clock: rows must be newer than the stream's start
    const now = new Date().toISOString().replace('T', ' ').replace('Z', '');
    const row = (n: number, message: string, batch: string) => ({
      timestamp: now, level: 'INFO', app: 'flood', app_id: 'a', request_id: '', job_id: '', endpoint: 'acme/flood', node: '', worker: '', source: 'stdout',
      isolate_source: '', message, attributes: {}, received_at: now, batch_id: batch, line: n,
    });
    await service.store.client.insert({
      table: 'logs',
      format: 'JSONEachRow',
      values: Array.from({ length: 10_001 }, (_, i) => row(i + 1, `flood ${i + 1}`, '00000000-0000-4000-8000-00000000000c')),
    });
    await waitFor(async () => events >= 10_001);
    await service.store.client.insert({ table: 'logs', format: 'JSONEachRow', values: [row(1, 'after the flood', '00000000-0000-4000-8000-00000000000d')] });
    await waitFor(async () => lastMessage === 'after the flood');
    expect(events).toBe(10_002);
    controller.abort();
    await reading;
  }, 120_000);
});
