// Review finding 29.4: DNS rebinding. In the default mode (loopback, no token) a request whose Host is a foreign
// name got cost rows, /metrics, and an OpenAPI document naming the attacker's host as the server. Every route of
// the instance now refuses a Host that is not a name of the service with 421.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { logDrainExtension } from '../../src/ingest/drain/extension.js';
import { webhookExtension, WEBHOOK_PATH } from '../../src/ingest/webhooks.js';
import { faroExtension, FARO_PATH } from '../../src/ingest/faro/extension.js';
import { adminExtension, ADMIN_COMMANDS_PATH } from '../../src/http/admin.js';
import { DRAIN_PATH } from '../../src/ingest/drain/auth.js';
import { hostAllowList } from '../../src/http/host-check.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { testConfig } from '../support/store.js';
import { usageDayRow } from '../support/rows.js';

function send(port: number, method: string, path: string, host: string, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, method, path, headers: { host, 'content-type': 'application/json', ...(body ? { 'content-length': String(Buffer.byteLength(body)) } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('29.4: a foreign Host is refused on every route (loopback, no token)', () => {
  let service: Service;
  let port: number;

  beforeAll(async () => {
    service = await startService(
      testConfig({ PORT: '0', LOG_DRAIN_TOKEN: 'drain-token-0123456789', FARO_APP_KEYS: 'web=faro-key-0123456789', WEBHOOK_JWKS_URL: 'http://127.0.0.1:9/jwks.json' }),
      {
        logger: createLogger('silent'),
        registry: createRegistry({ defaultMetrics: false }),
        extensions: [
          apiExtension(),
          logDrainExtension(),
          webhookExtension(),
          faroExtension(),
          adminExtension({ commands: {}, reportFatal: () => 1 }),
        ],
      },
    );
    port = Number(new URL(service.url).port);
    await service.store.client.insert({ table: 'usage_buckets', values: [usageDayRow('2026-10-01', { app: 'acme/web', cost_total: '12.5', cost_subtotal: '12.5' })], format: 'JSONEachRow' });
  });

  afterAll(async () => {
    await service?.close();
  });

  const COST = '/api/v1/cost?from=2026-10-01&to=2026-10-02&group_by=app';
  const ROUTES: Array<[string, string, string?]> = [
    ['GET', COST],
    ['GET', '/api/v1/openapi.json'],
    ['GET', '/metrics'],
    ['GET', '/healthz'],
    ['POST', DRAIN_PATH, '{}'],
    ['POST', WEBHOOK_PATH, '{}'],
    ['POST', FARO_PATH, '{}'],
    ['POST', ADMIN_COMMANDS_PATH, '{"argv":["help"]}'],
    ['GET', '/no/such/route'],
  ];

  it.each(ROUTES)('%s %s with Host attacker.example:<port> is 421', async (method, path, body) => {
    const res = await send(port, method, path, `attacker.example:${port}`, body);
    expect(res.status, res.text).toBe(421);
    expect(JSON.parse(res.text).error.type).toBe('misdirected_request');
    expect(res.text).not.toContain('12.5');
  });

  it('a loopback name with another port, and a foreign name without a port, are refused too', async () => {
    expect((await send(port, 'GET', COST, `localhost:${port + 1}`)).status).toBe(421);
    expect((await send(port, 'GET', COST, 'attacker.example')).status).toBe(421);
    expect((await send(port, 'GET', COST, `127.0.0.1.attacker.example:${port}`)).status).toBe(421);
  });

  it.each(['127.0.0.1', 'localhost', 'LOCALHOST', '[::1]'])('Host %s:<port> gets the cost rows (12.5, hand-seeded)', async (name) => {
    const res = await send(port, 'GET', COST, `${name}:${port}`);
    expect(res.status, res.text).toBe(200);
    expect(JSON.parse(res.text).rows).toEqual([expect.objectContaining({ app: 'acme/web', cost: '12.5' })]);
    expect((await send(port, 'GET', '/metrics', `${name}:${port}`)).status).toBe(200);
  });

  it('the OpenAPI server is the listening address, not the Host the request named', async () => {
    const res = await send(port, 'GET', '/api/v1/openapi.json', `localhost:${port}`);
    expect(JSON.parse(res.text).servers).toEqual([{ url: `http://127.0.0.1:${port}`, description: 'this Tallyhouse service' }]);
  });
});

describe('ALLOWED_HOSTS and PUBLIC_URL (behind a load balancer)', () => {
  let service: Service;
  let port: number;

  beforeAll(async () => {
    service = await startService(testConfig({ PORT: '0', ALLOWED_HOSTS: 'tallyhouse.example.com', PUBLIC_URL: 'https://tallyhouse.example.com/' }), {
      logger: createLogger('silent'),
      registry: createRegistry({ defaultMetrics: false }),
      extensions: [apiExtension()],
    });
    port = Number(new URL(service.url).port);
  });

  afterAll(async () => {
    await service?.close();
  });

  it('a listed name is answered, and the document names PUBLIC_URL; another name is 421', async () => {
    const res = await send(port, 'GET', '/api/v1/openapi.json', 'tallyhouse.example.com');
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text).servers).toEqual([{ url: 'https://tallyhouse.example.com', description: 'this Tallyhouse service' }]);
    expect((await send(port, 'GET', '/api/v1/openapi.json', 'evil.example.com')).status).toBe(421);
  });
});

describe('which Host headers are allowed (hand-worked cases)', () => {
  const port = () => 8080;

  it('loopback HOST: the loopback names and HOST with the listening port, and ALLOWED_HOSTS', () => {
    const allowed = hostAllowList({ HOST: '127.0.0.1', ALLOWED_HOSTS: ['tallyhouse.internal', 'box.lan:9000'] }, port)!;
    expect(['127.0.0.1:8080', 'localhost:8080', '[::1]:8080', 'tallyhouse.internal', 'tallyhouse.internal:1234', 'TallyHouse.Internal.:8080', 'box.lan:9000'].filter((h) => !allowed(h))).toEqual([]);
    expect(['127.0.0.1', 'localhost:80', 'box.lan:8080', 'box.lan', 'evil.example:8080', '', 'a b:8080', 'user@localhost:8080'].filter((h) => allowed(h))).toEqual([]);
    expect(allowed(undefined)).toBe(false);
  });

  it('HOST ::1 is named [::1]; HOST localhost', () => {
    expect(hostAllowList({ HOST: '::1', ALLOWED_HOSTS: [] }, port)!('[::1]:8080')).toBe(true);
    expect(hostAllowList({ HOST: 'localhost', ALLOWED_HOSTS: [] }, port)!('attacker.example:8080')).toBe(false);
  });

  it('0.0.0.0 without ALLOWED_HOSTS does not check (every route needs a token there); with it, only the names listed and loopback', () => {
    expect(hostAllowList({ HOST: '0.0.0.0', ALLOWED_HOSTS: [] }, port)).toBeNull();
    const allowed = hostAllowList({ HOST: '0.0.0.0', ALLOWED_HOSTS: ['tallyhouse.example.com'] }, port)!;
    expect(allowed('tallyhouse.example.com')).toBe(true);
    expect(allowed('127.0.0.1:8080')).toBe(true);
    expect(allowed('0.0.0.0:8080')).toBe(false);
    expect(allowed('attacker.example')).toBe(false);
  });
});
