// Issue 29, point 2: forged webhook bodies cost bounded memory. A service process (`tallyhouse serve`, a child of
// this test) takes 32 parallel 16 MiB bodies with well-formed headers and a fake signature: each is answered 401
// (read, hashed, refused) or 503 (beyond the unauthenticated byte budget), and the process's anonymous memory
// (RssAnon from /proc/<pid>/status: what grows; the rest is file-backed) grows by less than 100 MB. Before the
// fix it grew by about 670 MB (fastify held every body's chunks and then a concatenated copy).
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, type Spawned } from '../support/process.js';

const MiB = 1024 * 1024;
const BODY_BYTES = 16 * MiB; // the webhook body limit: the largest body a forger may send
const PARALLEL = 32;

function rssAnonBytes(pid: number): number {
  const m = /^RssAnon:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error('no RssAnon in /proc/<pid>/status');
  return Number(m[1]) * 1024;
}

function forgedHeaders(i: number): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-svc-webhook-request-id': `req-forged-${i}`,
    'x-svc-webhook-user-id': 'usr_forger',
    // wall-clock: the webhook receiver checks the signed timestamp against the machine's clock
    'x-svc-webhook-timestamp': String(Math.floor(Date.now() / 1000)),
    'x-svc-webhook-signature': randomBytes(64).toString('hex'),
  };
}

/**
 * Posts `total` bytes of `chunk` repeated, 1 MiB at a time as the socket drains; stops sending once an answer has
 * come (a 503 comes before the body is read). Resolves with the status, or 'reset' when no answer arrived.
 */
function postForged(url: string, i: number, chunk: Buffer, total: number): Promise<number | 'reset'> {
  return new Promise((resolve) => {
    const { hostname, port } = new URL(url);
    const req = httpRequest({ host: hostname, port, method: 'POST', path: '/v1/webhooks/queue', headers: { ...forgedHeaders(i), 'content-length': String(total) } });
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => {
      if (!answered) resolve('reset');
    });
    let sent = 0;
    const sendMore = () => {
      while (!answered && sent < total) {
        const n = Math.min(chunk.length, total - sent);
        sent += n;
        const more = req.write(n === chunk.length ? chunk : chunk.subarray(0, n));
        if (sent === total) req.end();
        if (!more) return void req.once('drain', sendMore);
      }
    };
    sendMore();
  });
}

/** tallyhouse_webhooks_total by outcome, from the service's /metrics. */
async function webhookOutcomes(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^tallyhouse_webhooks_total\{outcome="([a-z_]+)"\} (\d+)$/gm)) out[m[1]] = Number(m[2]);
  return out;
}

let jwks: Server | undefined;
let serve: Spawned | undefined;
afterAll(async () => {
  serve?.child.kill('SIGTERM');
  await serve?.exited;
  await new Promise<void>((r) => (jwks ? jwks.close(() => r()) : r()));
});

describe('forged webhook bodies', () => {
  it('32 parallel 16 MiB bodies with fake signatures: each 401 or 503, and the service grows by under 100 MB of anonymous memory', async () => {
    const { publicKey } = generateKeyPairSync('ed25519');
    const jwk = publicKey.export({ format: 'jwk' });
    jwks = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })));
    await new Promise<void>((r) => jwks!.listen(0, '127.0.0.1', r));
    serve = runCli(['serve'], {
      PORT: '0',
      DATA_DIR: mkdtempSync(join(tmpdir(), 'th-forged-')),
      JOBS_ENABLED: 'false',
      SCRAPE_SELF: 'false',
      SVC_API_KEY: 'not-a-real-key-0123456789',
      WEBHOOK_JWKS_URL: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/.well-known/jwks.json`,
    });
    const [, url] = await serve.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)"/);
    const pid = serve.child.pid!;

    // Warm the path (key set fetched, code compiled) with one small forged delivery.
    expect(await postForged(url, -1, Buffer.from('{}'), 2)).toBe(401);
    const before = rssAnonBytes(pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssAnonBytes(pid))), 20);
    const chunk = Buffer.alloc(MiB, 0x20);
    let statuses: Array<number | 'reset'>;
    try {
      statuses = await Promise.all(Array.from({ length: PARALLEL }, (_, i) => postForged(url, i, chunk, BODY_BYTES)));
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, rssAnonBytes(pid));
    const counts = { 401: statuses.filter((s) => s === 401).length, 503: statuses.filter((s) => s === 503).length };
    console.log(
      `forged webhooks: ${counts[401]} x 401, ${counts[503]} x 503; RssAnon ${(before / MiB).toFixed(0)} MiB -> peak ${(peak / MiB).toFixed(0)} MiB (+${((peak - before) / MiB).toFixed(0)} MiB)`,
    );
    expect(peak - before).toBeLessThan(100 * 1000 * 1000);
    // A sender still writing when its refused connection closes may see the reset before the answer (an early
    // answer's race, on the client's side): what the service answered is its own count, every one 401 or 503.
    expect(statuses.filter((s) => s !== 401 && s !== 503 && s !== 'reset')).toEqual([]);
    const outcomes = await webhookOutcomes(url);
    expect(Object.keys(outcomes).sort()).toEqual(['busy', 'invalid_signature']);
    expect(outcomes.invalid_signature - 1 + outcomes.busy).toBe(PARALLEL); // the warm-up was one 401
    expect(counts[401]).toBeLessThanOrEqual(outcomes.invalid_signature - 1);
    expect(counts[503]).toBeLessThanOrEqual(outcomes.busy);
  }, 240_000);
});
