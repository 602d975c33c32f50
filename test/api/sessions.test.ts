// GET /sessions/:id and GET /sessions against hand-built rows (expected values derived by hand from them).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { sessionRoutes } from '../../src/api/session-routes.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { testConfig } from '../support/store.js';

const TOKEN = 'sessions-token-0123456789';
// faro_items keep 90 days (their TTL): rows an hour old.
// wall-clock: log rows must sit inside the logs TTL, which ClickHouse applies on the machine's clock
const BASE_MS = Math.floor(Date.now() / 60_000) * 60_000 - 3_600_000;
const at = (offsetMs: number) => new Date(BASE_MS + offsetMs).toISOString().replace('T', ' ').replace('Z', '');

function faroItem(session_id: string, offsetMs: number, request_id: string, kind = 'event') {
  return {
    received_at: at(offsetMs), timestamp: at(offsetMs), kind, app: 'shop-web', app_namespace: '', release: '', app_version: '', environment: 'production',
    session_id, user_id: '', page_url: '', level: '', message: kind === 'exception' ? 'Error: boom' : 'fetch', domain: '', values: {}, attributes: {},
    trace_id: '', span_id: '', request_id, raw: '{}',
  };
}

function request(request_id: string, endpoint_id: string, offsetMs: number, status_code: number, billable_units: string) {
  return { request_id, endpoint_id, ended_at: at(offsetMs), status_code, duration: 1.5, billable_units, raw: '', version: 1, collected_at: at(offsetMs) };
}

function logLine(request_id: string, i: number, message: string) {
  return {
    timestamp: at(i), level: 'INFO', app: 'acme/api', app_id: 'app_1', request_id, job_id: '', endpoint: 'acme/api', node: '', worker: '', source: 'stdout',
    isolate_source: '', message, attributes: {}, received_at: at(i), batch_id: '00000000-0000-4000-8000-000000000009', line: i, origin: 'drain',
  };
}

let service: Service;
const api = async (path: string) => {
  const res = await fetch(`${service.url}/api/v1${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return { status: res.status, body: (await res.json()) as any };
};
const insert = (table: string, values: unknown[]) => service.store.client.insert({ table, values, format: 'JSONEachRow' });

beforeAll(async () => {
  service = await startService(testConfig({ PORT: '0', API_TOKENS: TOKEN }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension([sessionRoutes])],
  });
});

afterAll(async () => {
  await service?.close();
});

describe('29.6: GET /sessions/:id is bounded whatever is stored', () => {
  const IDS = Array.from({ length: 5000 }, (_, i) => `big-${String(i).padStart(4, '0')}`);

  beforeAll(async () => {
    // 5,000 items, each mentioning its own request, one millisecond apart (so big-0000 is mentioned first).
    await insert('faro_items', IDS.map((id, i) => faroItem('sess-big', i, id)));
    await insert('requests', [request('big-0000', 'acme/api', 10, 200, '2'), request('big-0001', 'acme/api', 20, 503, '1'), request('big-4999', 'acme/api', 30, 200, '9')]);
    await insert('logs', [
      ...Array.from({ length: 25 }, (_, i) => logLine('big-0000', i, `line ${i}`)),
      logLine('big-0001', 100, 'é'.repeat(20_000)),
      logLine('big-4999', 200, 'never looked up'),
    ]);
  });

  it('answers with the first 100 requests mentioned, in five queries (not one per id), and says it truncated', async () => {
    const client = service.store.client;
    const query = client.query.bind(client);
    let queries = 0;
    client.query = ((params: Parameters<typeof client.query>[0]) => {
      queries++;
      return query(params);
    }) as typeof client.query;
    let res;
    try {
      res = await api('/sessions/sess-big');
    } finally {
      client.query = query;
    }
    expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(200);
    // One for the items, then requests, model calls, log lines and webhook outcomes (issue 50.8) whatever the number of ids.
    expect(queries).toBeLessThanOrEqual(5);
    expect(res.body.items).toHaveLength(5000);
    expect(res.body.request_ids_total).toBe(5000);
    expect(res.body.truncated).toEqual({ items: false, requests: true });
    expect(res.body.requests.map((r: { request_id: string }) => r.request_id)).toEqual(IDS.slice(0, 100));
    const [first, second] = res.body.requests;
    expect([first.found, first.status_code, first.outcome, first.billable_units]).toEqual([true, 200, 'success', '2']);
    expect([second.found, second.status_code, second.outcome]).toEqual([true, 503, 'error']);
    // 25 lines stored, 20 (API_SESSION_MAX_LOG_LINES) answered, oldest first, and it says so.
    expect(first.log_lines.map((l: { message: string }) => l.message)).toEqual(Array.from({ length: 20 }, (_, i) => `line ${i}`));
    expect(first.log_lines_truncated).toBe(true);
    // A 20,000-character message is cut at 16,384 characters (not bytes: é is two).
    expect(second.log_lines).toHaveLength(1);
    expect([second.log_lines[0].message, second.log_lines[0].message_truncated, second.log_lines_truncated]).toEqual(['é'.repeat(16_384), true, false]);
    expect(res.body.requests.slice(2).every((r: { found: boolean; log_lines: unknown[] }) => !r.found && r.log_lines.length === 0)).toBe(true);
  }, 120_000);

  it('more items than API_SESSION_MAX_ITEMS: the first ones, and truncated.items', async () => {
    await insert('faro_items', [faroItem('sess-big', 6000, '', 'exception')]);
    const res = await api('/sessions/sess-big');
    expect(res.status).toBe(200);
    expect(res.body.items).toHaveLength(5000);
    expect(res.body.items.at(-1).request_id).toBe('big-4999');
    expect(res.body.truncated).toEqual({ items: true, requests: true });
  }, 120_000);
});

// Issue 31: the README's "sessions ranked by the cost of the requests they mention (per currency), then by errors",
// checked until now with toBeDefined() only. Hand-built: acme/api costs 0.001 USD per billable unit.
describe('GET /sessions: ranked costliest first, then by errors (hand-worked)', () => {
  const WINDOW = `from=${new Date(BASE_MS + 100_000).toISOString()}&to=${new Date(BASE_MS + 200_000).toISOString()}`;

  beforeAll(async () => {
    await insert('unit_prices', [{ endpoint_id: 'acme/api', effective_from: '2020-01-01 00:00:00.000', unit_price: '0.001', currency: 'USD', source: 'test', version: 1, loaded_at: '2020-01-01 00:00:00.000' }]);
    await insert('requests', [
      request('rank-a1', 'acme/api', 110_000, 200, '1000'), // 1.000
      request('rank-b1', 'acme/api', 120_000, 200, '3000'), // 3.000
      request('rank-b2', 'acme/api', 121_000, 200, '500'), //  0.500 -> session b: 3.500
      request('rank-c1', 'acme/api', 130_000, 500, '1000'), // 1.000, a 5xx
      request('rank-d1', 'acme/api', 140_000, 200, '10'), //   0.010
    ]);
    await insert('faro_items', [
      faroItem('rank-a', 110_000, 'rank-a1'),
      faroItem('rank-b', 120_000, 'rank-b1'),
      faroItem('rank-b', 121_000, 'rank-b2'),
      faroItem('rank-c', 130_000, 'rank-c1'),
      faroItem('rank-d', 140_000, 'rank-d1'),
      faroItem('rank-e', 150_000, ''), // mentions nothing: no cost, last
      faroItem('rank-e', 150_500, '', 'exception'),
    ]);
  });

  it('b (3.5 USD), c (1 USD, one 5xx) before a (1 USD, none), d (0.01 USD), e (nothing)', async () => {
    const res = await api(`/sessions?${WINDOW}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const ranked = res.body.sessions.map((s: any) => [s.session_id, Number(s.cost_by_currency.USD ?? 0), s.requests, s.request_errors, s.exceptions]);
    expect(ranked).toEqual([
      ['rank-b', 3.5, 2, 0, 0],
      ['rank-c', 1, 1, 1, 0],
      ['rank-a', 1, 1, 0, 0],
      ['rank-d', 0.01, 1, 0, 0],
      ['rank-e', 0, 0, 0, 1],
    ]);
  });

  it('limit keeps the costliest', async () => {
    const res = await api(`/sessions?${WINDOW}&limit=2`);
    expect(res.body.sessions.map((s: any) => s.session_id)).toEqual(['rank-b', 'rank-c']);
  });
});
