// Issue 49.1 (webhooks): the platform publishes every address that may send webhooks (GET /v1/meta
// webhook_ip_ranges). A connection from outside them is refused (403, closed) before a byte of its body is read;
// the list is refetched on a schedule, kept in DATA_DIR across restarts, and said stale when no fetch succeeded for
// WEBHOOK_IP_RANGES_STALE_SECONDS. The platform here is a local server whose answer the test sets.
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/service.js';
import { createRegistry } from '../../src/metrics.js';
import { webhookExtension, WEBHOOK_PATH } from '../../src/ingest/webhooks.js';
import { WEBHOOK_RANGES_FILE } from '../../src/ingest/webhook-sources.js';
import type { Config } from '../../src/config.js';
import { captureLog } from '../support/log-capture.js';
import { testConfig } from '../support/store.js';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
let platform: Server;
let meta: { status: number; ranges: string[] } = { status: 200, ranges: ['127.0.0.2/32'] };
let metaCalls = 0;
let config: Config;
let service: Service | undefined;
let port: number;

beforeAll(async () => {
  const jwk = publicKey.export({ format: 'jwk' });
  platform = createServer((req, res) => {
    if (req.url === '/v1/meta') {
      metaCalls++;
      res.writeHead(meta.status, { 'content-type': 'application/json' }).end(JSON.stringify({ webhook_ip_ranges: meta.ranges }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((r) => platform.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(platform.address() as AddressInfo).port}`;
  config = testConfig({
    PORT: '0',
    JOBS_ENABLED: 'false',
    SVC_BASE_URL: base,
    SVC_API_KEY: 'test-api-key-0123456789',
    WEBHOOK_JWKS_URL: `${base}/.well-known/jwks.json`,
    WEBHOOK_IP_RANGES_REFRESH_SECONDS: '1',
  });
});
afterAll(async () => {
  await service?.close();
  await new Promise<void>((r) => platform.close(() => r()));
});

async function start(now?: () => Date, logger = captureLog('info').logger): Promise<void> {
  service = await startService(config, { logger, registry: createRegistry({ defaultMetrics: false }), extensions: [webhookExtension()], now });
  port = Number(new URL(service.url).port);
}

async function rangesAgeSeconds(): Promise<number> {
  const text = await (await fetch(`${service!.url}/metrics`)).text();
  return Number(/^tallyhouse_webhook_ip_ranges_age_seconds (\S+)$/m.exec(text)?.[1]);
}

function signedHeaders(requestId: string, body: Buffer): Record<string, string> {
  // wall-clock: signed timestamps the receiver checks against the machine's clock, a wait's deadline, and a clock set 8 days on from it
  const ts = String(Math.floor(Date.now() / 1000));
  const message = `${requestId}\nusr_1\n${ts}\n${createHash('sha256').update(body).digest('hex')}`;
  return {
    'content-type': 'application/json',
    'x-svc-webhook-request-id': requestId,
    'x-svc-webhook-user-id': 'usr_1',
    'x-svc-webhook-timestamp': ts,
    'x-svc-webhook-signature': sign(null, Buffer.from(message), privateKey).toString('hex'),
  };
}

function deliver(requestId: string, localAddress: string): Promise<number> {
  const body = Buffer.from(JSON.stringify({ request_id: requestId, status: 'OK', payload: {} }));
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, localAddress, method: 'POST', path: WEBHOOK_PATH, agent: false, headers: { ...signedHeaders(requestId, body), 'content-length': String(body.length) } });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Headers and one byte of a 1 MB body, then nothing: what the service answers, and whether it closed the connection. */
function partial(localAddress: string): Promise<{ status: number | 'closed' }> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    const headers = signedHeaders('req-partial', Buffer.from('{}'));
    socket.write([`POST ${WEBHOOK_PATH} HTTP/1.1`, `host: 127.0.0.1:${port}`, 'content-length: 1000000', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', '{'].join('\r\n'));
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      const status = /^HTTP\/1\.1 (\d{3})/.exec(received)?.[1];
      resolve({ status: status ? Number(status) : 'closed' });
    });
  });
}

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  // wall-clock: signed timestamps the receiver checks against the machine's clock, a wait's deadline, and a clock set 8 days on from it
  const started = Date.now();
  while (!(await check())) {
    // wall-clock: signed timestamps the receiver checks against the machine's clock, a wait's deadline, and a clock set 8 days on from it
    if (Date.now() - started > 60_000) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('webhook source ranges (GET /v1/meta webhook_ip_ranges)', () => {
  it('a connection from outside the ranges is refused 403 and closed before its body; one inside is stored; the list is kept in DATA_DIR', async () => {
    await start();
    await until('the first fetch', async () => (await rangesAgeSeconds()) >= 0);
    expect(await partial('127.0.0.3')).toEqual({ status: 403 });
    expect(await deliver('req-outside', '127.0.0.3')).toBe(403);
    expect(await deliver('req-inside', '127.0.0.2')).toBe(200);
    const kept = JSON.parse(readFileSync(join(config.DATA_DIR, WEBHOOK_RANGES_FILE), 'utf8'));
    expect(kept.ranges).toEqual(['127.0.0.2/32']);
  }, 120_000);

  it('the list is refetched on its schedule: a range the platform adds is admitted without a restart', async () => {
    meta = { status: 200, ranges: ['127.0.0.0/24'] };
    await until('127.0.0.3 admitted', async () => (await deliver(`req-after-${metaCalls}`, '127.0.0.3')) === 200);
    expect(await deliver('req-other-net', '127.0.1.3')).toBe(403);
  }, 120_000);

  it('an empty or wholly invalid list does not replace the known one (it would refuse every sender)', async () => {
    const before = metaCalls;
    meta = { status: 200, ranges: [] };
    await until('a refetch of the empty list', async () => metaCalls > before + 1);
    expect(await deliver('req-empty-list', '127.0.0.3')).toBe(200);
    meta = { status: 200, ranges: ['not-a-range'] };
    const again = metaCalls;
    await until('a refetch of the invalid list', async () => metaCalls > again + 1);
    expect(await deliver('req-invalid-list', '127.0.0.3')).toBe(200);
    expect(await deliver('req-still-other-net', '127.0.1.3')).toBe(403);
    meta = { status: 200, ranges: ['127.0.0.0/24'] };
  }, 120_000);

  it('after a restart with the platform unreachable, the kept list is in use, and said stale once older than WEBHOOK_IP_RANGES_STALE_SECONDS', async () => {
    await service!.close();
    service = undefined;
    meta = { status: 503, ranges: [] };
    const log = captureLog('info');
    // wall-clock: signed timestamps the receiver checks against the machine's clock, a wait's deadline, and a clock set 8 days on from it
    const eightDaysOn = Date.now() + 8 * 86_400_000;
    // wall-clock: signed timestamps the receiver checks against the machine's clock, a wait's deadline, and a clock set 8 days on from it
    await start(() => new Date(eightDaysOn + (Date.now() % 1000)), log.logger);
    const callsAtStart = metaCalls;
    await until('a failed fetch', async () => metaCalls > callsAtStart);
    expect(await deliver('req-kept-inside', '127.0.0.9')).toBe(200);
    expect(await deliver('req-kept-outside', '127.0.1.9')).toBe(403);
    expect(log.lines.some((l) => l.msg === 'webhook_ip_ranges loaded from the last run' && l.ranges === 1)).toBe(true);
    expect(log.lines.filter((l) => String(l.msg).startsWith('the webhook_ip_ranges in use are stale'))).toHaveLength(1);
    expect(await rangesAgeSeconds()).toBeGreaterThan(7 * 86_400);
  }, 120_000);
});
