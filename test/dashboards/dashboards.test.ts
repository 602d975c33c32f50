// The Grafana dashboards without Grafana: each model is checked, then every panel's SQL is expanded the way the
// ClickHouse plugin expands it and run against a store the collectors filled from the simulator.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DateTime } from 'luxon';
import { buildDashboards } from '../../dashboards/boards/index.js';
import { dashboardText } from '../../dashboards/lib/dashboard.js';
import { checkModel, runDashboard, type RunReport } from './check.js';
import { openDemoStore, type DemoStore } from './demo-store.js';
import { parseDurationMs } from './grafana-sql.js';
import { toDateTime64 } from '../../src/values.js';

const DIR = fileURLToPath(new URL('../../dashboards/', import.meta.url));
const built = buildDashboards();
const committed = readdirSync(DIR).filter((f) => f.endsWith('.json')).sort();
const models = committed.map((file) => ({ file, model: JSON.parse(readFileSync(`${DIR}${file}`, 'utf8')) as Record<string, any> }));


/** The dashboard's default range ('now-30d' .. 'now') relative to `nowMs`. */
function defaultRange(model: Record<string, any>, nowMs: number): { fromMs: number; toMs: number } {
  const rel = (expr: string) => {
    if (expr === 'now') return nowMs;
    const m = /^now-(\d+[smhdw])$/.exec(expr);
    if (!m) throw new Error(`unsupported time expression ${expr}`);
    return nowMs - parseDurationMs(m[1]);
  };
  return { fromMs: rel(model.time.from), toMs: rel(model.time.to) };
}

describe('dashboard models', () => {
  it('the committed JSON is exactly what dashboards/boards/ builds (run `npx tsx dashboards/generate.ts`)', () => {
    expect(committed).toEqual(built.map((b) => b.file).sort());
    for (const { file, model } of built) expect(readFileSync(`${DIR}${file}`, 'utf8'), file).toBe(dashboardText(model));
  });

  it('one dashboard per concern, uids and titles unique', () => {
    expect(models.map((m) => m.model.uid).sort()).toEqual([
      'tallyhouse-cost',
      'tallyhouse-efficiency',
      'tallyhouse-errors',
      'tallyhouse-latency',
      'tallyhouse-logs',
      'tallyhouse-pipeline',
      'tallyhouse-runners',
    ]);
    expect(new Set(models.map((m) => m.model.title)).size).toBe(models.length);
  });

  it.each(models)('$file: uid, title, schemaVersion, unique panel ids, data source variable, grid, units', ({ model }) => {
    expect(checkModel(model)).toEqual([]);
    expect(model.panels.length).toBeGreaterThanOrEqual(6);
  });

  it('the model check catches a duplicate id, a panel outside the grid or on another, a fixed data source and a missing unit', () => {
    const broken = structuredClone(models.find((m) => m.file === 'cost.json')!.model);
    broken.uid = 'x'.repeat(41);
    broken.panels[1].id = broken.panels[0].id;
    broken.panels[2].gridPos = { x: 20, y: 0, w: 6, h: 5 };
    broken.panels[3].datasource = { type: 'grafana-clickhouse-datasource', uid: 'tallyhouse-clickhouse' };
    delete broken.panels[4].fieldConfig.defaults.unit;
    const problems = checkModel(broken);
    expect(problems).toEqual([
      expect.stringMatching(/uid must be 1-40 characters/),
      expect.stringMatching(/"Cost in range \(\$\{currency\}\)": duplicate panel id 1/),
      expect.stringMatching(/"Surge share": gridPos .* is not inside 24 columns/),
      expect.stringMatching(/"Daily cost by app \(\$\{currency\}\)": data source must be \$\{datasource\}/),
      expect.stringMatching(/"Daily cost by machine type \(\$\{currency\}\)": no unit/),
    ]);
  });
});

describe('every panel against a store filled by the collectors from the simulator', () => {
  let demo: DemoStore;
  const reports = new Map<string, RunReport>();

  beforeAll(async () => {
    demo = await openDemoStore();
  });
  afterAll(async () => {
    await demo?.close();
  });

  async function report(file: string): Promise<RunReport> {
    let r = reports.get(file);
    if (!r) {
      const { model } = models.find((m) => m.file === file)!;
      r = await runDashboard(model, demo.service.store, defaultRange(model, demo.nowMs));
      reports.set(file, r);
    }
    return r;
  }

  it.each(committed)('%s: every panel returns rows; time series return a sorted time column and a numeric column', async (file) => {
    const r = await report(file);
    // Every panel, none excused: the demo store fills every table a panel reads.
    expect(r.problems).toEqual([]);
    const { model } = models.find((m) => m.file === file)!;
    const annotations = model.annotations.list.filter((a: any) => !a.builtIn).length;
    const queries = model.panels.reduce((n: number, p: any) => n + p.targets.length, annotations);
    expect(r.results.length).toBe(queries); // every query ran
    expect(r.results.every((x) => x.rows > 0)).toBe(true);
  });

  it.each(committed)('%s: with the first option of every multi-value variable selected, every query still runs', async (file) => {
    const { model } = models.find((m) => m.file === file)!;
    const r = await runDashboard(model, demo.service.store, { ...defaultRange(model, demo.nowMs), firstOptions: true });
    expect(r.problems).toEqual([]);
    const selected = r.variables.filter((v) => Array.isArray(v.current.value));
    for (const v of selected) expect(v.current.value).toEqual([v.options[0]]);
    // The selection reached the SQL as a quoted list, not as "All".
    if (selected.some((v) => v.name === 'app')) {
      const app = r.variables.find((v) => v.name === 'app')!.options[0];
      expect(r.results.some((x) => x.sql.includes(`IN ('${app}')`))).toBe(true);
    }
  });

  it('Cost: daily cost per app equals the simulator\u2019s truth to the cent, in the selected timezone', async () => {
    const r = await report('cost.json');
    const timezone = r.variables.find((v) => v.name === 'timezone')!.current.value as string;
    const { model } = models.find((m) => m.file === 'cost.json')!;
    const { fromMs, toMs } = defaultRange(model, demo.nowMs);
    const panel = r.results.find((x) => x.panel === 'Daily cost by app (${currency})')!;
    const rows = (await (await demo.service.store.client.query({ query: panel.sql, format: 'JSONEachRow' })).json()) as Array<{ time: string; app: string; cost: number }>;
    const stored = new Map(rows.filter((x) => x.cost !== 0).map((x) => [`${Date.parse(`${x.time.replace(' ', 'T')}Z`)}|${x.app}`, x.cost]));

    const fromS = Math.floor(fromMs / 1000) * 1000;
    const toS = Math.floor(toMs / 1000) * 1000;
    const local = (ms: number) => DateTime.fromMillis(ms, { zone: timezone });
    const truth = new Map<string, number>();
    for (const t of demo.sim.truth.usage({ from: local(fromMs).toISODate()!, to: local(toMs).plus({ days: 1 }).toISODate()!, timezone, timeframe: 'day' })) {
      const at = DateTime.fromISO(t.bucket!, { setZone: true }).toMillis();
      if (at < fromS || at > toS) continue;
      const key = `${at}|${t.app}`;
      truth.set(key, (truth.get(key) ?? 0) + t.cost_total_nanos);
    }
    for (const [k, v] of truth) if (v === 0) truth.delete(k);
    expect([...stored.keys()].sort()).toEqual([...truth.keys()].sort());
    expect(stored.size).toBeGreaterThan(8 * 5);
    for (const [key, nanos] of truth) expect(stored.get(key), key).toBeCloseTo(nanos / 1e9, 2);
  });

  it('Cost: month to date, run rate and forecast equal what the simulator\u2019s truth gives', async () => {
    const r = await report('cost.json');
    const timezone = r.variables.find((v) => v.name === 'timezone')!.current.value as string;
    const { model } = models.find((m) => m.file === 'cost.json')!;
    const { toMs } = defaultRange(model, demo.nowMs);
    const panel = r.results.find((x) => x.panel === 'Month to date and forecast (${currency})')!;
    const [got] = (await (await demo.service.store.client.query({ query: panel.sql, format: 'JSONEachRow' })).json()) as Array<Record<string, number>>;

    const rangeEnd = Math.floor(toMs / 1000) * 1000;
    const today = DateTime.fromMillis(rangeEnd, { zone: timezone }).startOf('day');
    const sum = (from: DateTime, to: DateTime) =>
      demo.sim.truth.usage({ from: from.toISODate()!, to: to.toISODate()!, timezone, timeframe: 'day' }).reduce((s, t) => s + t.cost_total_nanos, 0) / 1e9;
    const monthToDate = sum(today.startOf('month'), today.plus({ days: 1 }));
    const rate = sum(today.minus({ days: 7 }), today) / 7;
    const forecast = monthToDate + (rate * (today.endOf('month').plus({ milliseconds: 1 }).toMillis() - rangeEnd)) / 86_400_000;
    expect(rate).toBeGreaterThan(0); // 7 whole days of history: never vacuous, whatever today's date
    expect(got.month_to_date).toBeCloseTo(monthToDate, 2);
    expect(got.daily_run_rate).toBeCloseTo(rate, 2);
    expect(got.forecast_month_end).toBeCloseTo(forecast, 2);
  });

  it('Pipeline health: the drain reject ratio is the share of lines the simulator sent malformed', async () => {
    const r = await report('pipeline.json');
    const panel = r.results.find((x) => x.panel === 'Drain reject ratio')!;
    const [got] = (await (await demo.service.store.client.query({ query: panel.sql, format: 'JSONEachRow' })).json()) as Array<{ reject_ratio: number }>;
    expect(demo.drain.malformed).toBeGreaterThan(0);
    expect(got.reject_ratio).toBeCloseTo(demo.drain.malformed / demo.drain.linesSent, 9);
  });

  it('a deliberately broken copy fails: a misspelt column, a time series without a time column, a macro the plugin reads differently', async () => {
    const broken = structuredClone(models.find((m) => m.file === 'cost.json')!.model);
    const byTitle = (title: string) => broken.panels.find((p: any) => p.title === title);
    byTitle('Daily cost by app (${currency})').targets[0].rawSql = byTitle('Daily cost by app (${currency})').targets[0].rawSql.replace('sum(cost_total)', 'sum(cost_totl)');
    byTitle('Daily cost by machine type (${currency})').targets[0].rawSql = byTitle('Daily cost by machine type (${currency})').targets[0].rawSql.replace('SELECT bucket AS time', 'SELECT toString(bucket) AS time');
    // An argument-free macro followed by a parenthesis: newer plugin versions read that text as its arguments.
    byTitle('Surge share').targets[0].rawSql = byTitle('Surge share').targets[0].rawSql.replace(
      'WHERE ',
      'WHERE bucket <= $__toTime AND toDate(bucket) >= toDate(0) AND ',
    );
    const { problems } = await runDashboard(broken, demo.service.store, defaultRange(broken, demo.nowMs));
    expect(problems).toEqual([
      expect.stringMatching(/"Surge share" A: macro expansion depends on the plugin version/),
      expect.stringMatching(/"Daily cost by app \(\$\{currency\}\)" A: ClickHouse refused the query: .*cost_totl/),
      expect.stringMatching(/"Daily cost by machine type \(\$\{currency\}\)" A: a time series needs a time column/),
    ]);
  });

  it('Cost: a tombstone (a usage row the platform no longer returns: currency empty) is no currency or app option', async () => {
    const { model } = models.find((m) => m.file === 'cost.json')!;
    const range = defaultRange(model, demo.nowMs);
    const timezone = (await report('cost.json')).variables.find((v) => v.name === 'timezone')!.current.value as string;
    const day = DateTime.fromMillis(demo.nowMs, { zone: timezone }).startOf('day');
    // The other columns take their defaults (0, '', NULL): what a tombstone holds.
    await demo.service.store.client.command({
      query: `INSERT INTO usage_buckets (timezone, timeframe, bucket, bucket_offset_minutes, bucket_date, app, machine_type, version, is_deleted)
              VALUES ({timezone:String}, 'day', {bucket:DateTime64(3, 'UTC')}, {offset:Int32}, {date:Date}, 'gone-app', 'GPU-GONE', 1, 1)`,
      query_params: { timezone, bucket: toDateTime64(day.toJSDate()), offset: day.offset, date: day.toISODate() },
    });
    const r = await runDashboard(model, demo.service.store, range);
    expect(r.problems).toEqual([]);
    const options = (name: string) => r.variables.find((v) => v.name === name)!.options;
    expect(options('currency').length).toBeGreaterThan(0);
    expect(options('currency')).not.toContain('');
    expect(options('app')).not.toContain('gone-app');
  });
});
