import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { logsRoutes } from '../../src/api/logs-routes.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { logs, type LogRow } from '../../src/store/tables/logs.js';
import { testConfig } from '../support/store.js';

let service: Service;
const LEVELS = ['DEBUG', 'INFO', 'warning', 'ERROR'];
const rows: LogRow[] = [];

beforeAll(async () => {
  service = await startService(testConfig({ PORT: '0' }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension([logsRoutes])],
  });
  const batch = randomUUID();
  const base = Date.parse('2026-11-20T10:00:00Z');
  for (let i = 0; i < 250; i++) {
    // Pairs of lines share a timestamp, so paging must order by more than the time.
    const ts = new Date(base + Math.floor(i / 2) * 1000).toISOString().replace('T', ' ').replace('Z', '');
    rows.push({
      timestamp: ts,
      level: LEVELS[i % 4],
      app: ['alpha', 'beta', 'gamma'][i % 3],
      app_id: '',
      request_id: `req-${i % 25}`,
      job_id: '',
      endpoint: '',
      node: 'n1',
      worker: 'w1',
      source: 'runner',
      isolate_source: 'stdout',
      message: i % 10 === 0 ? `Traceback: CUDA out of memory (line ${i})` : `line ${i} ok`,
      attributes: {},
      received_at: ts,
      batch_id: batch,
      line: i + 1,
    });
  }
  const done = service.writer.insert(logs, rows);
  await service.writer.flush(logs);
  await done;
});

afterAll(async () => {
  await service?.close();
});

type Page = { lines: Array<{ timestamp: string; message: string; level: string; app: string; request_id: string }>; next_cursor: string | null };

async function get(path: string) {
  const res = await fetch(`${service.url}/api/v1/logs${path}`);
  return { status: res.status, body: (await res.json()) as Page & { error?: { parameter: string; message: string } } };
}

const RANGE = 'from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z';

describe('GET /logs', () => {
  it('pages newest first with an opaque cursor: every matching line once, none repeated', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r = await get(`?${RANGE}&app=alpha&app=beta&limit=40${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(r.status).toBe(200);
      seen.push(...r.body.lines.map((l) => l.message));
      const times = r.body.lines.map((l) => l.timestamp);
      expect([...times].sort().reverse()).toEqual(times);
      cursor = r.body.next_cursor;
      pages++;
    } while (cursor);
    const expected = rows.filter((r) => r.app === 'alpha' || r.app === 'beta').map((r) => r.message);
    expect(seen).toHaveLength(expected.length);
    expect(new Set(seen)).toEqual(new Set(expected));
    expect(pages).toBe(Math.ceil(expected.length / 40));
  });

  it('filters by minimum level (any case), request id and text', async () => {
    const errors = await get(`?${RANGE}&level=warning&limit=1000`);
    expect(errors.body.lines.map((l) => l.level.toUpperCase()).sort()).toEqual(
      rows.filter((r) => ['WARNING', 'ERROR'].includes(r.level.toUpperCase())).map((r) => r.level.toUpperCase()).sort(),
    );
    const byRequest = await get(`?${RANGE}&request_id=req-7&limit=1000`);
    expect(byRequest.body.lines).toHaveLength(10);
    expect(byRequest.body.lines.every((l) => l.request_id === 'req-7')).toBe(true);
    const cuda = await get(`?${RANGE}&contains=cuda%20OUT&limit=1000`);
    expect(cuda.body.lines).toHaveLength(25);
    const times = await get('?from=2026-11-20T10:00:00Z&to=2026-11-20T10:00:10Z&limit=1000');
    expect(times.body.lines).toHaveLength(20);
  });

  it('refuses a forged cursor, a cursor with other filters, and a limit over 1,000, naming the parameter', async () => {
    const first = await get(`?${RANGE}&limit=10`);
    const cursor = first.body.next_cursor!;
    const [body, sig] = cursor.split('.');
    const forged = `${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString()), l: 0 })).toString('base64url')}.${sig}`;
    for (const [path, parameter] of [
      [`?${RANGE}&limit=10&cursor=${encodeURIComponent(forged)}`, 'cursor'],
      [`?${RANGE}&limit=10&cursor=not-a-cursor`, 'cursor'],
      [`?${RANGE}&limit=10&app=alpha&cursor=${encodeURIComponent(cursor)}`, 'cursor'],
      [`?${RANGE}&limit=1001`, 'limit'],
      [`?${RANGE}&limit=ten`, 'limit'],
      [`?${RANGE}&level=LOUD`, 'level'],
      ['?from=2026-11-21T00:00:00Z&to=2026-11-20T00:00:00Z', 'to'],
      ["?from=2026-11-20'; DROP TABLE logs; --", 'from'],
    ] as const) {
      const r = await get(path);
      expect(r.status, path).toBe(400);
      expect(r.body.error!.parameter, path).toBe(parameter);
    }
    // The same cursor with the same filters still works.
    const next = await get(`?${RANGE}&limit=10&cursor=${encodeURIComponent(cursor)}`);
    expect(next.status).toBe(200);
    expect(next.body.lines).toHaveLength(10);
    // SQL in a text filter is only text.
    const injected = await get(`?${RANGE}&contains=${encodeURIComponent("' OR 1=1 --")}`);
    expect(injected.status).toBe(200);
    expect(injected.body.lines).toEqual([]);
  });
});

describe('GET /logs as CSV', () => {
  it('pages with the X-Next-Cursor header: the CSV pages hold the same lines as the JSON pages, in order', async () => {
    const { parse } = await import('csv-parse/sync');
    const range = 'from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z&limit=100';
    const csvMessages: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await fetch(`${service.url}/api/v1/logs?${range}&format=csv${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.status).toBe(200);
      cursor = res.headers.get('x-next-cursor');
      csvMessages.push(...(parse(await res.text(), { columns: true }) as Array<{ message: string }>).map((r) => r.message));
      pages++;
    } while (cursor && pages < 10);
    expect(pages).toBe(3); // 250 lines, 100 a page
    const jsonMessages: string[] = [];
    let next: string | null = null;
    do {
      const page = await get(`?${range}${next ? `&cursor=${encodeURIComponent(next)}` : ''}`);
      jsonMessages.push(...page.body.lines.map((l) => l.message));
      next = page.body.next_cursor;
    } while (next);
    expect(jsonMessages).toHaveLength(250);
    expect(csvMessages).toEqual(jsonMessages);
  });
});
