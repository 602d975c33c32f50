// The calendar sweep (issue 42.1): the answers that depend on "today" and "this month" (budgets, the finance
// report's partial and future months, the anomalies' default range) at the instants where a calendar bug shows: the
// 1st of a month at 00:30 and the last day at 23:30 in America/New_York and Asia/Kolkata, both 2026 DST switch days
// in New York, 2028-02-29, and 2026-12-31 23:30 -> 2027-01-01, each asked in UTC, New York and Kolkata. One service,
// its clock moved from instant to instant (Runtime.now). The oracle for a zone's local date is Intl.DateTimeFormat
// (not luxon, which the service uses); the day costs are the day of the month, so a month's spend to day d is
// d(d+1)/2.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../src/service.js';
import { apiExtension } from '../src/api/index.js';
import { anomalyRoutes } from '../src/api/anomaly-routes.js';
import { anomalies } from '../src/store/tables/anomalies.js';
import { createLogger } from '../src/log.js';
import { createRegistry } from '../src/metrics.js';
import { toDateTime64 } from '../src/values.js';
import { testConfig } from './support/store.js';
import { usageDayRow } from './support/rows.js';

const ZONES = ['UTC', 'America/New_York', 'Asia/Kolkata'] as const;
const INSTANTS: Array<[string, string]> = [
  ['the 1st 00:30 in New York', '2026-12-01T05:30:00Z'],
  ['the 1st 00:30 in Kolkata', '2026-11-30T19:00:00Z'],
  ['the last day 23:30 in New York', '2026-12-01T04:30:00Z'],
  ['the last day 23:30 in Kolkata', '2026-11-30T18:00:00Z'],
  ['New York springs forward (2026-03-08), 00:30 before', '2026-03-08T05:30:00Z'],
  ['New York springs forward (2026-03-08), 03:30 after', '2026-03-08T07:30:00Z'],
  ['New York falls back (2026-11-01), the first 01:30', '2026-11-01T05:30:00Z'],
  ['New York falls back (2026-11-01), the second 01:30', '2026-11-01T06:30:00Z'],
  ['2028-02-29 noon UTC', '2028-02-29T12:00:00Z'],
  ['2028-02-29 23:30 in New York (UTC: 1 March)', '2028-03-01T04:30:00Z'],
  ['2026-12-31 23:30 UTC', '2026-12-31T23:30:00Z'],
  ['2027-01-01 00:30 UTC', '2027-01-01T00:30:00Z'],
];

/** The local date of an instant in a zone, by the platform's Intl (en-CA formats YYYY-MM-DD). */
const localDate = (at: Date, zone: string) => new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(at);
const shiftMonth = (month: string, by: number) => {
  const [y, m] = month.split('-').map(Number);
  const i = y * 12 + (m - 1) + by;
  return `${Math.floor(i / 12)}-${String((i % 12) + 1).padStart(2, '0')}`;
};
/** Every date from `from` to `to`, both included (UTC calendar arithmetic on dates). */
const days = (from: string, to: string) => {
  const out: string[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += 86_400_000) out.push(new Date(t).toISOString().slice(0, 10));
  return out;
};

let clock = new Date(INSTANTS[0][1]);
let service: Service;
const api = async (path: string) => {
  const res = await fetch(`${service.url}/api/v1${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, any> };
};

beforeAll(async () => {
  service = await startService(testConfig({ PORT: '0', TIMEZONES: ZONES.join(','), APP_BUDGETS: JSON.stringify({ a: 1_000_000 }), BUDGET_CURRENCY: 'USD' }), {
    now: () => clock,
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension([anomalyRoutes])],
  });
  // Each zone's day rows of every month an instant falls in and the month before: a day costs its day of the month.
  const rows = ZONES.flatMap((timezone) =>
    [...days('2026-02-01', '2026-03-12'), ...days('2026-10-01', '2027-01-03'), ...days('2028-01-01', '2028-03-03')].map((day) =>
      usageDayRow(day, { timezone, cost_total: String(Number(day.slice(8, 10))), cost_subtotal: String(Number(day.slice(8, 10))) }),
    ),
  );
  await service.store.client.insert({ table: 'usage_buckets', values: rows, format: 'JSONEachRow' });
  // A finding in the hour each instant falls in (UTC): the anomalies' default range must hold it.
  const findings = INSTANTS.map(([, at], i) => {
    const hour = new Date(Math.floor(Date.parse(at) / 3_600_000) * 3_600_000);
    return {
      series_kind: 'app', series_id: 'a', measure: 'volume', grain: 'hour', unit: 'requests', bucket: toDateTime64(hour), finding_id: `f-${i}`,
      expected: 10, expected_low: 5, expected_high: 15, actual: 40, score: 6, direction: 'up', summary: 's', explanation: '', version: 1, is_deleted: 0, evaluated_at: toDateTime64(hour),
    } as const;
  });
  const written = service.writer.insert(anomalies, findings);
  await service.writer.flush();
  await written;
}, 180_000);

afterAll(async () => {
  await service?.close();
});

describe.each(INSTANTS)('at %s (%s)', (_name, at) => {
  const now = new Date(at);
  beforeAll(() => {
    clock = now;
  });

  it.each(ZONES)('in %s: the budget is of the local month, to the local today, and spent is the month to today', async (zone) => {
    const today = localDate(now, zone);
    const d = Number(today.slice(8, 10));
    const r = await api(`/budgets?timezone=${encodeURIComponent(zone)}`);
    expect(r.status).toBe(200);
    expect([r.body.month, r.body.today]).toEqual([today.slice(0, 7), today]);
    const budget = (r.body.budgets as Array<Record<string, unknown>>).find((b) => b.scope === 'app' && b.name === 'a');
    expect(Number(budget?.spent)).toBe((d * (d + 1)) / 2);
    expect(budget?.days_in_month).toBe(new Date(Date.UTC(Number(today.slice(0, 4)), Number(today.slice(5, 7)), 0)).getUTCDate());
    expect(budget?.spent_final).toBe(false);
  });

  it.each(ZONES)('in %s: the local month is partial, the one before complete, the next one not started', async (zone) => {
    const month = localDate(now, zone).slice(0, 7);
    const current = await api(`/reports/finance?month=${month}&timezone=${encodeURIComponent(zone)}`);
    expect([current.status, current.body.month_complete]).toEqual([200, false]);
    const before = await api(`/reports/finance?month=${shiftMonth(month, -1)}&timezone=${encodeURIComponent(zone)}`);
    expect([before.status, before.body.month_complete]).toEqual([200, true]);
    const next = await api(`/reports/finance?month=${shiftMonth(month, 1)}&timezone=${encodeURIComponent(zone)}`);
    expect([next.status, next.body.error?.parameter]).toEqual([400, 'month']);
  });

  it('the anomalies\u2019 default range ends after the current hour, so its finding is listed', async () => {
    const i = INSTANTS.findIndex(([, a]) => a === at);
    const r = await api('/anomalies');
    expect(r.status).toBe(200);
    expect(r.body.to > localDate(now, 'UTC')).toBe(true);
    expect((r.body.rows as Array<{ finding_id: string }>).map((f) => f.finding_id)).toContain(`f-${i}`);
  });
});
