import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DateTime } from 'luxon';
import { parse as parseCsv } from 'csv-parse/sync';
import { startSim, type Sim } from '../../src/sim/index.js';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { decimalToScaled } from '../../src/values.js';
import { runJob } from '../support/jobs.js';
import { queryRows, testConfig } from '../support/store.js';
import { nonEmpty, nonZero } from '../support/truth.js';

let sim: Sim;
let service: Service;
const TOKEN = 'test-token-0123456789abcdef';

async function api(path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${service.url}/api/v1${path}`, {
    ...init,
    headers: { authorization: `Bearer ${TOKEN}`, ...(init.headers ?? {}) },
  });
}

beforeAll(async () => {
  sim = await startSim({ seed: 5, now: '2026-11-21T12:00:00Z', days: 60 });
  const config = testConfig({ PORT: '0', API_TOKENS: TOKEN, TIMEZONES: 'UTC,America/New_York,Asia/Kolkata' });
  service = await startService(config, {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension()],
  });
  for (const timezone of ['UTC', 'America/New_York', 'Asia/Kolkata']) {
    const run = await runJob(service, sim, 'usage', { from: '2026-10-01', to: '2026-11-22', timezone });
    expect(run.status, run.error).toBe('ok');
  }
}, 120_000);

afterAll(async () => {
  await service?.close();
  await sim?.close();
});

const nanos = (v: string | number) => decimalToScaled(String(v), 9);

function truthBy(timezone: string, from: string, to: string, key: (r: { app: string; machine_type: string; day: string }) => string) {
  const out = new Map<string, bigint>();
  for (const r of sim.truth.usage({ from, to, timezone, timeframe: 'day' })) {
    const day = DateTime.fromISO(r.bucket!, { setZone: true }).toISODate()!;
    const k = key({ app: r.app, machine_type: r.machine_type, day });
    out.set(k, (out.get(k) ?? 0n) + BigInt(r.cost_total_nanos));
  }
  return out;
}

/** The non-zero entries, sorted: the store keeps no row for a day without cost, the truth may. */
const nonZeroEntries = (m: Map<string, bigint>) => [...m].filter(([, v]) => v !== 0n).sort(([a], [b]) => a.localeCompare(b));

describe('GET /reports/finance', () => {
  it('equals the truth per app and machine type in America/New_York, and its CSV parses back to the same numbers', async () => {
    const res = await api('/reports/finance?month=2026-10&timezone=America/New_York');
    expect(res.status).toBe(200);
    const report = (await res.json()) as {
      rows: Array<Record<string, string | boolean | null>>;
      totals: Array<Record<string, string | boolean | null>>;
      reconciliation: { complete_month: boolean; flagged: number; rows: unknown[]; summary_range: { from: string; to: string } };
    };
    const truth = truthBy('America/New_York', '2026-10-01', '2026-11-01', (r) => `${r.app}|${r.machine_type}`);
    const got = new Map(report.rows.map((r) => [`${r.app}|${r.machine_type}`, nanos(r.total as string)]));
    expect(nonZeroEntries(got)).toEqual(nonZeroEntries(nonZero(truth, 'October cost per app and machine type in New York', ([, v]) => v)));
    expect(report.rows.every((r) => r.currency === 'USD')).toBe(true);

    // One total row per currency, equal to the sum of the truth.
    expect(report.totals).toHaveLength(1);
    expect(nanos(report.totals[0].total as string)).toBe([...truth.values()].reduce((a, b) => a + b, 0n));

    // Machine-seconds include surge; surge machine-seconds are the surge part.
    const qty = new Map<string, { all: number; surge: number }>();
    for (const r of sim.truth.usage({ from: '2026-10-01', to: '2026-11-01', timezone: 'America/New_York', timeframe: 'day' })) {
      const k = `${r.app}|${r.machine_type}`;
      const q = qty.get(k) ?? { all: 0, surge: 0 };
      q.all += r.quantity;
      if (r.is_surge) q.surge += r.quantity;
      qty.set(k, q);
    }
    for (const r of report.rows) {
      const q = qty.get(`${r.app}|${r.machine_type}`)!;
      expect(Number(r.machine_seconds)).toBe(q.all);
      expect(Number(r.surge_machine_seconds)).toBe(q.surge);
    }

    // The platform summary for October is complete and agrees to well within a cent (per-row rounding only).
    expect(report.reconciliation.complete_month).toBe(true);
    expect(report.reconciliation.summary_range).toEqual({ from: '2026-10-01', to: '2026-11-01' });
    expect(report.reconciliation.flagged).toBe(0);
    expect(report.reconciliation.rows.length).toBe(report.rows.length);

    const csvRes = await api('/reports/finance?month=2026-10&timezone=America/New_York&format=csv');
    expect(csvRes.headers.get('content-type')).toMatch(/^text\/csv/);
    const records = parseCsv(await csvRes.text(), { columns: true }) as Array<Record<string, string>>;
    const items = records.filter((r) => r.row_type === 'item');
    expect(items).toHaveLength(report.rows.length);
    for (const [i, r] of items.entries()) {
      expect(r.app).toBe(report.rows[i].app);
      expect(nanos(r.total)).toBe(nanos(report.rows[i].total as string));
      expect(r.machine_seconds).toBe(report.rows[i].machine_seconds);
    }
    const totalRow = records.find((r) => r.row_type === 'total')!;
    expect(nanos(totalRow.total)).toBe(nanos(report.totals[0].total as string));
  });

  it('also answers in CSV for Accept: text/csv, and flags a month whose summary disagrees', async () => {
    const res = await api('/reports/finance?month=2026-11&timezone=UTC', { headers: { accept: 'text/csv' } });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.split('\r\n')[0]).toBe(
      'row_type,product,app,machine_type,currency,machine_seconds,surge_machine_seconds,subtotal,discount,total,platform_summary_total,difference,flagged,month_complete,endpoint_id,unit,quantity,api_key,final',
    );
    // Tamper with one stored summary row: the reconciliation must notice.
    const [victim] = await queryRows<{ app: string; machine_type: string }>(
      service,
      "SELECT app, machine_type FROM usage_summaries FINAL WHERE timezone = 'UTC' AND range_start = '2026-11-01' ORDER BY app LIMIT 1",
    );
    await service.store.client.command({
      query: `INSERT INTO usage_summaries SELECT * REPLACE (cost_total + 1 AS cost_total, version + 1 AS version)
              FROM usage_summaries FINAL WHERE timezone = 'UTC' AND range_start = '2026-11-01' AND app = {app:String} AND machine_type = {mt:String}
              ORDER BY environment, is_surge LIMIT 1`,
      query_params: { app: victim.app, mt: victim.machine_type },
    });
    const report = (await (await api('/reports/finance?month=2026-11&timezone=UTC')).json()) as {
      reconciliation: { flagged: number; complete_month: boolean; rows: Array<{ app: string; flagged: boolean; difference: string }> };
    };
    expect(report.reconciliation.complete_month).toBe(false); // November is not over at "now"
    const flagged = report.reconciliation.rows.filter((r) => r.flagged);
    expect(flagged.map((r) => r.app)).toEqual([victim.app]);
    expect(Number(flagged[0].difference)).toBeCloseTo(-1, 6);
  });
});

describe('GET /cost', () => {
  it.each(['UTC', 'Asia/Kolkata'])('grouped by app and day in %s equals the truth', async (timezone) => {
    const res = await api(`/cost?from=2026-10-05&to=2026-11-20&timezone=${encodeURIComponent(timezone)}&group_by=app,day`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { rows: Array<{ app: string; day: string; cost: string; currency: string }> };
    const got = new Map(body.rows.map((r) => [`${r.app}|${r.day}`, nanos(r.cost)]));
    const truth = truthBy(timezone, '2026-10-05', '2026-11-20', (r) => `${r.app}|${r.day}`);
    expect(nonZeroEntries(got)).toEqual(nonZeroEntries(nonZero(truth, `cost per app and day in ${timezone}`, ([, v]) => v)));
  });

  it('per-app totals include surge and non-surge usage; surge_cost is the surge part', async () => {
    const body = (await (await api('/cost?from=2026-10-01&to=2026-11-01&group_by=app')).json()) as {
      rows: Array<{ app: string; cost: string; surge_cost: string }>;
    };
    const all = nonZero(truthBy('UTC', '2026-10-01', '2026-11-01', (r) => r.app), 'October cost per app', ([, v]) => v);
    const surge = new Map<string, bigint>();
    for (const r of sim.truth.usage({ from: '2026-10-01', to: '2026-11-01', timezone: 'UTC', timeframe: 'day' })) {
      if (r.is_surge) surge.set(r.app, (surge.get(r.app) ?? 0n) + BigInt(r.cost_total_nanos));
    }
    expect(body.rows.some((r) => nanos(r.surge_cost) > 0n)).toBe(true);
    for (const r of body.rows) {
      expect(nanos(r.cost)).toBe(all.get(r.app) ?? 0n);
      expect(nanos(r.surge_cost)).toBe(surge.get(r.app) ?? 0n);
    }
  });

  it('groups by week, surge and machine type with search, each amount equal to the truth; month and app filter too', async () => {
    // Oracle: the simulator's truth, grouped here by a second implementation of the calendar groups (luxon's ISO
    // week starts on Monday, where the route uses ClickHouse's toMonday) and of search (a case-insensitive substring).
    const search = 'UPSCAL';
    const all = nonEmpty(sim.truth.usage({ from: '2026-10-01', to: '2026-11-01', timezone: 'UTC', timeframe: 'day' }), 'October usage');
    const matching = nonEmpty(all.filter((r) => r.app.toLowerCase().includes(search.toLowerCase())), `October usage of apps named *${search}*`);
    // The search must leave some apps out, or it is not shown to filter.
    expect(new Set(matching.map((r) => r.app)).size).toBeLessThan(new Set(all.map((r) => r.app)).size);
    type Sums = { machine_seconds: number; surge_machine_seconds: number; subtotal: bigint; discount: bigint; cost: bigint; surge_cost: bigint };
    const zero = (): Sums => ({ machine_seconds: 0, surge_machine_seconds: 0, subtotal: 0n, discount: 0n, cost: 0n, surge_cost: 0n });
    const expected = new Map<string, Sums>();
    for (const r of matching) {
      const week = DateTime.fromISO(r.bucket!, { setZone: true }).startOf('week').toISODate()!;
      const k = `${week}|${r.is_surge}|${r.machine_type}`;
      const s = expected.get(k) ?? zero();
      s.machine_seconds += r.quantity;
      s.subtotal += BigInt(r.cost_subtotal_nanos);
      s.discount += BigInt(r.cost_discount_nanos);
      s.cost += BigInt(r.cost_total_nanos);
      if (r.is_surge) {
        s.surge_machine_seconds += r.quantity;
        s.surge_cost += BigInt(r.cost_total_nanos);
      }
      expected.set(k, s);
    }
    nonZero(expected, 'October cost per week, surge and machine type', ([, s]: [string, Sums]) => s.cost);
    expect([...expected.values()].some((s) => s.discount > 0n), 'the truth has a discount to compare').toBe(true);
    // October 2026 starts on a Thursday: its first week is the one of Monday 28 September.
    expect(new Set([...expected.keys()].map((k) => k.split('|')[0]))).toEqual(new Set(['2026-09-28', '2026-10-05', '2026-10-12', '2026-10-19', '2026-10-26']));

    const res = await api(`/cost?from=2026-10-01&to=2026-11-01&group_by=week&group_by=surge&group_by=machine_type&search=${search}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      rows: Array<{ week: string; surge: boolean; machine_type: string; currency: string; machine_seconds: string; surge_machine_seconds: string; subtotal: string; discount: string; cost: string; surge_cost: string }>;
    };
    const got = new Map(
      body.rows.map((r) => [
        `${r.week}|${r.surge}|${r.machine_type}`,
        {
          machine_seconds: Number(r.machine_seconds),
          surge_machine_seconds: Number(r.surge_machine_seconds),
          subtotal: nanos(r.subtotal),
          discount: nanos(r.discount),
          cost: nanos(r.cost),
          surge_cost: nanos(r.surge_cost),
        },
      ]),
    );
    expect(body.rows.every((r) => r.currency === 'USD')).toBe(true);
    expect(got).toEqual(expected);

    const byMonth = (await (await api('/cost?from=2026-10-01&to=2026-11-01&group_by=month')).json()) as { rows: Array<{ month: string; cost: string }> };
    expect(byMonth.rows.map((r) => [r.month, nanos(r.cost)])).toEqual([['2026-10-01', all.reduce((n, r) => n + BigInt(r.cost_total_nanos), 0n)]]);

    const one = nonEmpty(sim.truth.apps().filter((a) => a.owned_by_caller), 'owned apps')[0].name;
    const filtered = (await (await api(`/cost?from=2026-10-01&to=2026-11-01&group_by=app&app=${one}`)).json()) as { rows: Array<{ app: string; cost: string }> };
    expect(filtered.rows.map((r) => [r.app, nanos(r.cost)])).toEqual([[one, all.filter((r) => r.app === one).reduce((n, r) => n + BigInt(r.cost_total_nanos), 0n)]]);
  });

  it('a timezone that was not collected gets 400 listing those that were', async () => {
    const res = await api('/cost?from=2026-10-01&to=2026-11-01&timezone=Europe/Paris');
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { parameter: string; message: string } };
    expect(body.error.parameter).toBe('timezone');
    expect(body.error.message).toContain('America/New_York, Asia/Kolkata, UTC');
  });
});

describe('hostile input', () => {
  async function tableCounts() {
    return queryRows(
      service,
      'SELECT name, total_rows FROM system.tables WHERE database = currentDatabase() ORDER BY name',
    );
  }

  it('each bad parameter gets a 400 naming it, leaks no SQL or stack, and changes nothing', async () => {
    const before = await tableCounts();
    const injection = encodeURIComponent("x' OR 1=1; DROP TABLE usage_buckets; --");
    const cases: Array<[string, string]> = [
      ['/cost?from=2026-10-01&to=2026-11-01&group_by=app,password', 'group_by'],
      ['/cost?from=2026-10-01&to=2026-11-01&group_by=' + injection, 'group_by'],
      [`/cost?from=${injection}&to=2026-11-01`, 'from'],
      [`/cost?from=2026-10-01&to=${injection}`, 'to'],
      [`/cost?from=2026-10-01&to=2026-11-01&timezone=${injection}`, 'timezone'],
      ['/cost?from=2026-02-30&to=2026-11-01', 'from'],
      ['/cost?from=1900-01-01&to=2026-11-01', 'from'],
      ['/cost?from=2026-11-01&to=2026-10-01', 'to'],
      ['/cost?from=2026-10-01&to=2026-11-01&format=xml', 'format'],
      ['/cost?from=2026-10-01&to=2026-11-01&limit=10', 'limit'],
      ['/cost?to=2026-11-01', 'from'],
      [`/reports/finance?month=${injection}`, 'month'],
      ['/reports/finance?month=2026-13', 'month'],
      [`/reports/finance?month=2026-10&timezone=${injection}`, 'timezone'],
    ];
    for (const [path, parameter] of cases) {
      const res = await api(path);
      const text = await res.text();
      expect(res.status, path).toBe(400);
      expect(JSON.parse(text).error.parameter, path).toBe(parameter);
      expect(text, path).not.toMatch(/SELECT|FROM usage|DB::Exception|\bat .+\.ts:\d+/);
    }
    // Injection through values that are valid strings is just data: bound, never interpolated.
    const search = await api(`/cost?from=2026-10-01&to=2026-11-01&group_by=app&search=${injection}&app=${injection}`);
    expect(search.status).toBe(200);
    expect(((await search.json()) as { rows: unknown[] }).rows).toEqual([]);
    expect(await tableCounts()).toEqual(before);
  });

  it('requires the bearer token', async () => {
    const res = await fetch(`${service.url}/api/v1/cost?from=2026-10-01&to=2026-11-01`);
    expect(res.status).toBe(401);
    const wrong = await fetch(`${service.url}/api/v1/cost?from=2026-10-01&to=2026-11-01`, { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
  });

  it('serves an OpenAPI document generated from the same schemas', async () => {
    const doc = (await (await api('/openapi.json')).json()) as { openapi: string; paths: Record<string, { get: { parameters: Array<{ name: string }> } }> };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.paths['/api/v1/cost'].get.parameters.map((p) => p.name)).toEqual(['from', 'to', 'timezone', 'product', 'group_by', 'app', 'endpoint', 'search', 'format']);
    expect(Object.keys(doc.paths)).toContain('/api/v1/reports/finance');
  });
});
