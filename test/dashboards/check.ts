// Checks a Grafana dashboard model without Grafana: the model's structure, then every panel's SQL expanded as
// the ClickHouse plugin expands it (grafana-sql.ts) and run against a store. Returns problems instead of throwing,
// so a test can show a broken dashboard being caught.
import type { Store } from '../../src/store/client.js';
import { DATASOURCE_UID, PLUGIN_ID } from '../../dashboards/lib/datasource.js';
import { expandSql, panelIntervalMs, type TemplateVariable } from './grafana-sql.js';

type Model = Record<string, any>;

const GRID_COLUMNS = 24;
const MAX_UID_LENGTH = 40;
const DS_REF = '${datasource}';
/** Grafana sizes a panel's interval from its width in pixels; a typical wide panel. */
export const MAX_DATA_POINTS = 1000;
const FORMAT_TIMESERIES = 0;
const FORMAT_LOGS = 2;

const isInt = (v: unknown): v is number => Number.isInteger(v);

/** Structural checks of one dashboard model. */
export function checkModel(model: Model): string[] {
  const problems: string[] = [];
  const where = `dashboard ${JSON.stringify(model.title ?? model.uid)}`;
  if (typeof model.uid !== 'string' || model.uid.length === 0 || model.uid.length > MAX_UID_LENGTH) {
    problems.push(`${where}: uid must be 1-${MAX_UID_LENGTH} characters, got ${JSON.stringify(model.uid)}`);
  }
  if (typeof model.title !== 'string' || model.title.trim() === '') problems.push(`${where}: no title`);
  if (!isInt(model.schemaVersion) || model.schemaVersion < 36) problems.push(`${where}: schemaVersion must be an integer >= 36`);

  const vars: Model[] = model.templating?.list ?? [];
  const dsVar = vars.find((v) => v.name === 'datasource');
  if (!dsVar || dsVar.type !== 'datasource' || dsVar.query !== PLUGIN_ID) {
    problems.push(`${where}: needs a "datasource" variable of type datasource for ${PLUGIN_ID}`);
  } else if (dsVar.current?.value !== DATASOURCE_UID) {
    problems.push(`${where}: the datasource variable should default to the provisioned uid ${DATASOURCE_UID}`);
  }
  const names = new Set<string>();
  for (const v of vars) {
    if (names.has(v.name)) problems.push(`${where}: variable ${v.name} defined twice`);
    names.add(v.name);
    if (v.type === 'query') {
      if (v.datasource?.uid !== DS_REF || v.datasource?.type !== PLUGIN_ID) problems.push(`${where}: variable ${v.name} must query ${DS_REF}`);
      if (v.query?.editorType !== 'sql' || typeof v.query?.rawSql !== 'string') problems.push(`${where}: variable ${v.name} must be raw SQL`);
    }
    if ((v.name === 'app' || v.name === 'endpoint') && !(v.multi === true && v.includeAll === true)) {
      problems.push(`${where}: variable ${v.name} must be multi-value with All`);
    }
  }

  for (const a of model.annotations?.list ?? []) {
    if (a.builtIn) continue;
    if (a.datasource?.type !== PLUGIN_ID || a.datasource?.uid !== DS_REF) problems.push(`${where}: annotation ${a.name} must query ${DS_REF}`);
    if (a.target?.editorType !== 'sql' || typeof a.target?.rawSql !== 'string') problems.push(`${where}: annotation ${a.name} must be raw SQL`);
  }

  const ids = new Set<number>();
  const cells = new Map<string, string>();
  for (const p of model.panels ?? []) {
    const at = `${where}, panel ${JSON.stringify(p.title)}`;
    if (!isInt(p.id)) problems.push(`${at}: id must be an integer`);
    else if (ids.has(p.id)) problems.push(`${at}: duplicate panel id ${p.id}`);
    else ids.add(p.id);
    if (typeof p.title !== 'string' || p.title === '') problems.push(`${at}: no title`);
    if (p.datasource?.type !== PLUGIN_ID || p.datasource?.uid !== DS_REF) problems.push(`${at}: data source must be ${DS_REF}`);
    const unit = p.fieldConfig?.defaults?.unit;
    if (typeof unit !== 'string' || unit === '') problems.push(`${at}: no unit`);
    const g = p.gridPos ?? {};
    if (![g.x, g.y, g.w, g.h].every(isInt) || g.x < 0 || g.y < 0 || g.w < 1 || g.h < 1 || g.x + g.w > GRID_COLUMNS) {
      problems.push(`${at}: gridPos ${JSON.stringify(g)} is not inside ${GRID_COLUMNS} columns`);
    } else {
      for (let x = g.x; x < g.x + g.w; x++) {
        for (let y = g.y; y < g.y + g.h; y++) {
          const other = cells.get(`${x},${y}`);
          if (other) {
            problems.push(`${at}: overlaps panel ${JSON.stringify(other)}`);
            x = g.x + g.w;
            break;
          }
          cells.set(`${x},${y}`, p.title);
        }
      }
    }
    const targets: Model[] = p.targets ?? [];
    if (targets.length === 0) problems.push(`${at}: no query`);
    const refIds = new Set<string>();
    for (const t of targets) {
      if (refIds.has(t.refId)) problems.push(`${at}: duplicate refId ${t.refId}`);
      refIds.add(t.refId);
      if (t.datasource?.type !== PLUGIN_ID || t.datasource?.uid !== DS_REF) problems.push(`${at} ${t.refId}: query data source must be ${DS_REF}`);
      if (t.editorType !== 'sql' || typeof t.rawSql !== 'string' || t.rawSql.trim() === '') problems.push(`${at} ${t.refId}: not a raw SQL query`);
      if (![0, 1, 2].includes(t.format)) problems.push(`${at} ${t.refId}: format must be 0 (time series), 1 (table) or 2 (logs)`);
      if (p.type === 'timeseries' && t.format !== FORMAT_TIMESERIES) problems.push(`${at} ${t.refId}: a time series panel needs the time series format`);
    }
  }
  return problems;
}

export interface RunOptions {
  fromMs: number;
  toMs: number;
  /** Select each multi-value variable's first option instead of All (the SQL must still run). */
  firstOptions?: boolean;
}

export interface QueryResult {
  panel: string;
  refId: string;
  sql: string;
  rows: number;
  columns: Array<{ name: string; type: string }>;
}

export interface RunReport {
  problems: string[];
  variables: TemplateVariable[];
  results: QueryResult[];
}

const NUMERIC = /^(Nullable\()?(U?Int\d+|Float\d+|Decimal)/;
const TIME = /^(Nullable\()?(DateTime|DateTime64|Date)\b/;

async function run(store: Store, sql: string): Promise<{ meta: Array<{ name: string; type: string }>; data: Record<string, unknown>[] }> {
  const rs = await store.client.query({ query: sql, format: 'JSON' });
  const body = await rs.json<Record<string, unknown>>();
  return { meta: body.meta ?? [], data: body.data };
}

/** Resolves the variables in order (query variables run their SQL), then runs every panel query. */
export async function runDashboard(model: Model, store: Store, opts: RunOptions): Promise<RunReport> {
  const problems: string[] = [];
  const where = `dashboard ${JSON.stringify(model.title)}`;
  const variables: TemplateVariable[] = [];
  // Variable queries run with the dashboard's range and the data source's default interval.
  const rangeCtx = { fromMs: opts.fromMs, toMs: opts.toMs, intervalMs: panelIntervalMs(opts.fromMs, opts.toMs, MAX_DATA_POINTS) };
  for (const v of model.templating?.list ?? []) {
    if (v.type === 'datasource') {
      variables.push({ name: v.name, type: v.type, current: { value: DATASOURCE_UID }, options: [DATASOURCE_UID] });
      continue;
    }
    let options: string[] = [];
    if (v.type === 'query') {
      try {
        const sql = expandSql(v.query.rawSql, variables, rangeCtx);
        const { meta, data } = await run(store, sql);
        options = data.map((row) => String(row[meta[0].name]));
      } catch (err) {
        problems.push(`${where}, variable ${v.name}: ${(err as Error).message}`);
      }
      if (options.length === 0) problems.push(`${where}, variable ${v.name}: its query returned no values`);
    } else if (v.type === 'custom') {
      options = String(v.query).split(',').map((s) => s.trim());
    }
    let current: string | string[];
    if (v.type === 'textbox') current = v.current?.value ?? '';
    else if (v.multi) current = opts.firstOptions && options.length > 0 ? [options[0]] : v.includeAll ? ['$__all'] : options.slice(0, 1);
    else current = v.current?.value && options.includes(v.current.value) ? v.current.value : (options[0] ?? '');
    variables.push({ name: v.name, type: v.type, current: { value: current }, options });
  }

  const results: QueryResult[] = [];
  // Annotations run with the dashboard's range; markers are sparse, so only the SQL and its time column count.
  for (const a of model.annotations?.list ?? []) {
    if (a.builtIn) continue;
    const at = `${where}, annotation ${JSON.stringify(a.name)}`;
    try {
      const sql = expandSql(a.target.rawSql, variables, rangeCtx);
      const result = await run(store, sql);
      results.push({ panel: `annotation ${a.name}`, refId: a.target.refId, sql, rows: result.data.length, columns: result.meta });
      if (!result.meta.some((c) => c.name === 'time' && TIME.test(c.type))) problems.push(`${at}: needs a time column named time`);
    } catch (err) {
      problems.push(`${at}: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  for (const p of model.panels ?? []) {
    const ctx = { fromMs: opts.fromMs, toMs: opts.toMs, intervalMs: panelIntervalMs(opts.fromMs, opts.toMs, p.maxDataPoints ?? MAX_DATA_POINTS, p.interval) };
    for (const t of p.targets ?? []) {
      const at = `${where}, panel ${JSON.stringify(p.title)} ${t.refId}`;
      let sql: string;
      try {
        sql = expandSql(t.rawSql, variables, ctx);
      } catch (err) {
        problems.push(`${at}: ${(err as Error).message}`);
        continue;
      }
      let result;
      try {
        result = await run(store, sql);
      } catch (err) {
        problems.push(`${at}: ClickHouse refused the query: ${(err as Error).message.split('\n')[0]}\n${sql}`);
        continue;
      }
      results.push({ panel: p.title, refId: t.refId, sql, rows: result.data.length, columns: result.meta });
      if (opts.firstOptions) continue; // a single app may legitimately have nothing to show
      if (result.data.length === 0) problems.push(`${at}: returned no rows\n${sql}`);
      if (t.format === FORMAT_TIMESERIES) problems.push(...checkTimeSeries(at, result));
      if (t.format === FORMAT_LOGS) problems.push(...checkLogs(at, result));
    }
  }
  return { problems, variables, results };
}

/** A time column sorted ascending (the plugin's long-to-wide conversion requires it) and a numeric column. */
function checkTimeSeries(at: string, r: { meta: Array<{ name: string; type: string }>; data: Record<string, unknown>[] }): string[] {
  const problems: string[] = [];
  const time = r.meta.find((c) => TIME.test(c.type));
  if (!time) problems.push(`${at}: a time series needs a time column, got ${r.meta.map((c) => `${c.name} ${c.type}`).join(', ')}`);
  if (!r.meta.some((c) => NUMERIC.test(c.type))) problems.push(`${at}: a time series needs a numeric column, got ${r.meta.map((c) => `${c.name} ${c.type}`).join(', ')}`);
  if (time) {
    const values = r.data.map((row) => String(row[time.name]));
    if (values.some((v, i) => i > 0 && v < values[i - 1])) problems.push(`${at}: rows are not sorted by ${time.name}`);
  }
  return problems;
}

/** Grafana's log view needs a time column and the line text in `body`. */
function checkLogs(at: string, r: { meta: Array<{ name: string; type: string }> }): string[] {
  const problems: string[] = [];
  if (!r.meta.some((c) => TIME.test(c.type))) problems.push(`${at}: a log query needs a time column`);
  if (!r.meta.some((c) => c.name === 'body' && /String/.test(c.type))) problems.push(`${at}: a log query needs a string column named body`);
  return problems;
}
