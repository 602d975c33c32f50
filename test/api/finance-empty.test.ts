// Nothing empty without a reason: a finance report for a month with nothing collected, or in a timezone never
// collected, says what would fill it; a month that has not started is refused; a partial month is marked.
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { testConfig } from '../support/store.js';
import { usageDayRow } from '../support/rows.js';
import { runCli } from '../support/process.js';

let service: Service;
const api = async (path: string) => {
  const res = await fetch(`${service.url}/api/v1${path}`);
  return { status: res.status, text: await res.text() };
};
// The service clock: the month running then (partial) and one long over (complete), in UTC. A day of the next
// month is collected too (a platform's clock runs ahead of ours by a little): that month has not started yet.
const NOW = new Date('2026-11-30T23:30:00Z');
const thisMonth = '2026-11';

beforeAll(async () => {
  service = await startService(testConfig({ PORT: '0', TIMEZONES: 'UTC,America/New_York' }), {
    now: () => NOW,
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension()],
  });
  await service.store.client.insert({ table: 'usage_buckets', values: [usageDayRow('2025-03-10'), usageDayRow(`${thisMonth}-01`), usageDayRow('2026-12-01')], format: 'JSONEachRow' });
});
afterAll(async () => {
  await service?.close();
});

describe('GET /reports/finance', () => {
  it('a month with nothing collected is a 404 naming the collect command', async () => {
    const r = await api('/reports/finance?month=2025-04&timezone=UTC');
    expect(r.status).toBe(404);
    expect(JSON.parse(r.text).error).toEqual({
      type: 'no_data',
      message: 'no usage is collected for 2025-04 in UTC; collect it with: tallyhouse collect usage --from 2025-04-01 --to 2025-05-01 --timezone UTC (and model APIs: tallyhouse collect models with the same options)',
    });
  });

  it('a timezone never collected and not in TIMEZONES is a 404 naming TIMEZONES', async () => {
    const r = await api('/reports/finance?month=2025-03&timezone=Asia/Tokyo');
    expect(r.status).toBe(404);
    expect(JSON.parse(r.text).error.message).toContain('(not in TIMEZONES=UTC,America/New_York: scheduled runs do not collect it)');
  });

  it('a month that has not started is a 400', async () => {
    const r = await api('/reports/finance?month=2099-01&timezone=UTC');
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text).error).toMatchObject({ parameter: 'month', message: expect.stringContaining('a month that has started') });
  });

  it('"has not started" is judged by the service clock, not the machine\'s: December at 2026-11-30 23:30 UTC', async () => {
    const r = await api('/reports/finance?month=2026-12&timezone=UTC');
    expect([r.status, JSON.parse(r.text).error?.message]).toEqual([400, 'month: expected a month that has started in UTC; 2026-12 has not']);
  });

  it('marks a partial month in JSON and in CSV; a month that is over is complete', async () => {
    const partial = JSON.parse((await api(`/reports/finance?month=${thisMonth}&timezone=UTC`)).text);
    expect(partial.month_complete).toBe(false);
    const csv = parseCsv((await api(`/reports/finance?month=${thisMonth}&timezone=UTC&format=csv`)).text, { columns: true }) as Array<Record<string, string>>;
    expect(csv.length).toBeGreaterThan(0);
    expect(new Set(csv.map((r) => r.month_complete))).toEqual(new Set(['false']));
    const over = parseCsv((await api('/reports/finance?month=2025-03&timezone=UTC&format=csv')).text, { columns: true }) as Array<Record<string, string>>;
    expect(over.map((r) => [r.row_type, r.total, r.month_complete])).toEqual([
      ['item', '1', 'true'],
      ['subtotal', '1', 'true'],
      ['total', '1', 'true'],
    ]);
  });
});

describe('tallyhouse report finance', () => {
  it('a month that has not started exits 2 before anything opens; an empty month exits 1 naming the collect command', async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'th-fin-')), 'data');
    const future = runCli(['report', 'finance', '--month', '2099-01'], { DATA_DIR: dataDir });
    expect((await future.exited).code).toBe(2);
    expect(future.stderr()).toMatch(/^tallyhouse report finance: --month: expected a month that has started in UTC; 2099-01 has not/);
    expect(existsSync(dataDir)).toBe(false);

    const empty = runCli(['report', 'finance', '--month', '2025-04', '--out', join(dataDir, '..', 'x.csv')], { DATA_DIR: dataDir });
    expect((await empty.exited).code).toBe(1);
    expect(empty.stderr().trim()).toBe(
      'tallyhouse report finance: no usage is collected for 2025-04 in UTC; collect it with: tallyhouse collect usage --from 2025-04-01 --to 2025-05-01 --timezone UTC (and model APIs: tallyhouse collect models with the same options)',
    );
    expect(existsSync(join(dataDir, '..', 'x.csv'))).toBe(false);
  });
});
