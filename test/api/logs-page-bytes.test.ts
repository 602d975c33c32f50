// Review finding 29.7 (pages): after 210 lines of 900 KB were stored, one GET /logs?limit=1000 returned 189 MB and
// took the service to 2.43 GB. A page now stops at API_LOGS_MAX_PAGE_BYTES of line text as well as at limit rows,
// and its cursor carries on from where it stopped.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { logsRoutes } from '../../src/api/logs-routes.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { testConfig } from '../support/store.js';

const TOKEN = 'logs-page-token-0123456789';
const PAGE_BYTES = 4 * 1024 * 1024;
const LINE_CHARS = 900 * 1024;
const LINES = 30;
// Each line's stored text: the message, level INFO (4), app 'big' (3), endpoint 'acme/big' (8), request id 'r00' (3),
// source 'stdout' (6): 921,624 bytes, so four fit in 4 MiB (3,686,496) and five do not (4,608,120).
const PER_PAGE = 4;
// wall-clock: log rows must sit inside the logs TTL, which ClickHouse applies on the machine's clock
const BASE_MS = Math.floor(Date.now() / 60_000) * 60_000 - 3_600_000;
const at = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

let service: Service;
const api = (path: string) => fetch(`${service.url}/api/v1${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });

beforeAll(async () => {
  service = await startService(testConfig({ PORT: '0', API_TOKENS: TOKEN, API_LOGS_MAX_PAGE_BYTES: String(PAGE_BYTES) }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension([logsRoutes])],
  });
  for (let i = 0; i < LINES; i += 10) {
    await service.store.client.insert({
      table: 'logs',
      format: 'JSONEachRow',
      values: Array.from({ length: 10 }, (_, j) => {
        const n = i + j;
        return {
          timestamp: at(BASE_MS + n * 1000), level: 'INFO', app: 'big', app_id: 'a', request_id: `r${String(n).padStart(2, '0')}`, job_id: '', endpoint: 'acme/big',
          node: '', worker: '', source: 'stdout', isolate_source: '', message: String(n % 10).repeat(LINE_CHARS), attributes: {}, received_at: at(BASE_MS + n * 1000),
          batch_id: '00000000-0000-4000-8000-00000000000b', line: n + 1,
        };
      }),
    });
  }
});

afterAll(async () => {
  await service?.close();
});

const range = `from=${new Date(BASE_MS - 60_000).toISOString()}&to=${new Date(BASE_MS + LINES * 1000 + 60_000).toISOString()}`;

describe('29.7: GET /logs pages are bounded in bytes', () => {
  it('limit=1000 over 30 lines of 900 KB: pages of four lines, the cursor fetching the rest, every line once, newest first', async () => {
    const seen: string[] = [];
    const pageSizes: number[] = [];
    let cursor: string | null = null;
    do {
      const res = await api(`/logs?${range}&limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      const body = (await res.json()) as { lines: Array<{ request_id: string; message: string }>; next_cursor: string | null; has_more: boolean };
      expect(res.status).toBe(200);
      pageSizes.push(body.lines.length);
      for (const l of body.lines) {
        expect(l.message).toHaveLength(LINE_CHARS);
        seen.push(l.request_id);
      }
      expect(body.has_more).toBe(body.next_cursor !== null);
      cursor = body.next_cursor;
    } while (cursor && pageSizes.length < 20);
    expect(pageSizes).toEqual([4, 4, 4, 4, 4, 4, 4, 2]);
    expect(seen).toEqual(Array.from({ length: LINES }, (_, i) => `r${String(LINES - 1 - i).padStart(2, '0')}`));
  }, 120_000);

  it('CSV: the same bound, the next cursor in X-Next-Cursor', async () => {
    const res = await api(`/logs?${range}&limit=1000&format=csv`);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-next-cursor')).toBeTruthy();
    const text = await res.text();
    expect(text.split('\r\n').filter((l) => /^\d{4}-/.test(l))).toHaveLength(PER_PAGE);
  }, 120_000);

  it('rows still bound a page under the byte bound: limit=3 gives three and more to come; the last line alone, no more', async () => {
    const res = await api(`/logs?${range}&limit=3`);
    const body = (await res.json()) as { lines: unknown[]; has_more: boolean };
    expect([body.lines.length, body.has_more]).toEqual([3, true]);
    const one = (await (await api(`/logs?${range}&limit=3&request_id=r05`)).json()) as { lines: unknown[]; has_more: boolean };
    expect([one.lines.length, one.has_more]).toEqual([1, false]);
  }, 120_000);
});
