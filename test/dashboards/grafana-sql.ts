// What Grafana and the ClickHouse data source plugin (grafana-clickhouse-datasource v4) do to a panel's raw SQL
// before ClickHouse sees it, in the same order:
//   1. the plugin's frontend replaces $__conditionalAll(condition, $var) (CHDatasource.applyConditionalAll);
//   2. Grafana's template service replaces $var / ${var} / ${var:format}, formatting multi-value variables with
//      the plugin's format function (values quoted and comma-joined) unless a format is named;
//   3. the plugin's backend expands its macros (pkg/macros/macros.go) with the macro scanner of the plugin SDK
//      (grafana-plugin-sdk-go data/sqlutil Interpolate), after sqlutil's default macros are added.
// Ported from those sources so the dashboards can be checked without Grafana.

export interface TemplateVariable {
  name: string;
  type: string;
  /** The selection: a string, or the selected values of a multi-value variable ('$__all' for All). */
  current: { value: string | string[] };
  /** Every option's value (without All), for expanding All. */
  options: string[];
}

export interface QueryContext {
  fromMs: number;
  toMs: number;
  /** The panel's interval (Grafana's $__interval), ms. */
  intervalMs: number;
}

const ALL = '$__all';

function isAll(v: TemplateVariable): boolean {
  const value = v.current.value;
  return Array.isArray(value) ? value.length === 1 && value[0] === ALL : value === ALL;
}

// ---- 1. $__conditionalAll ----------------------------------------------------------------------------------

/** The plugin's getMacroArgs: the arguments of the call whose '(' is at argsIndex, split at top-level commas. */
function getMacroArgs(query: string, argsIndex: number): string[] {
  const args: string[] = [];
  const re = /\(|\)|,/g;
  let bracketCount = 0;
  let lastArgEndIndex = 1;
  let m: RegExpExecArray | null;
  const argsSubstr = query.substring(argsIndex, query.length);
  while ((m = re.exec(argsSubstr)) !== null) {
    const found = m[0];
    if (found === '(') bracketCount++;
    else if (found === ')') bracketCount--;
    if (found === ',' && bracketCount === 1) {
      args.push(argsSubstr.substring(lastArgEndIndex, re.lastIndex - 1));
      lastArgEndIndex = re.lastIndex;
    }
    if (bracketCount === 0) {
      args.push(argsSubstr.substring(lastArgEndIndex, re.lastIndex - 1));
      return args;
    }
  }
  return [];
}

/**
 * $__conditionalAll(condition, $var): the condition, or `1=1` when the variable is All or empty. Applied from the
 * last occurrence backwards, with String.replace on the first textual match, exactly as the plugin does.
 */
export function applyConditionalAll(rawQuery: string, vars: readonly TemplateVariable[]): string {
  if (!rawQuery) return rawQuery;
  const macro = '$__conditionalAll(';
  let macroIndex = rawQuery.lastIndexOf(macro);
  while (macroIndex !== -1) {
    const params = getMacroArgs(rawQuery, macroIndex + macro.length - 1);
    if (params.length !== 2) return rawQuery;
    const templateVar = /(?<=\$\{)[\w\d]+(?=\})|(?<=\$)[\w\d]+/.exec(params[1].trim());
    let phrase = params[0];
    if (templateVar) {
      const v = vars.find((x) => x.name === templateVar[0]);
      const value = v === undefined ? undefined : String(v.current.value);
      if (value === '' || value === ALL) phrase = '1=1';
    }
    rawQuery = rawQuery.replace(`${macro}${params[0]},${params[1]})`, phrase);
    macroIndex = rawQuery.lastIndexOf(macro);
  }
  return rawQuery;
}

// ---- 2. template variables ---------------------------------------------------------------------------------

// Grafana's variable syntax: $name, [[name:format]] (deprecated), ${name}, ${name.fieldPath}, ${name:format}.
const VARIABLE_REGEX = /\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\${(\w+)(?:\.([^:^}]+))?(?::([^}]+))?}/g;

/** The plugin's format function, used when a reference names no format. */
function pluginFormat(value: string | string[]): string {
  return Array.isArray(value) ? `'${value.join("','")}'` : value;
}

/** Grafana's formats (the subset a SQL data source uses). */
function namedFormat(format: string, value: string | string[]): string {
  const list = Array.isArray(value) ? value : [value];
  switch (format) {
    case 'singlequote':
      return list.map((v) => `'${v.replace(/'/g, "\\'")}'`).join(',');
    case 'doublequote':
      return list.map((v) => `"${v.replace(/"/g, '\\"')}"`).join(',');
    case 'sqlstring':
      return list.map((v) => `'${v.replace(/'/g, "''")}'`).join(',');
    case 'csv':
      return list.join(',');
    case 'raw':
      return Array.isArray(value) ? value.join(',') : value;
    default:
      throw new Error(`variable format ${JSON.stringify(format)} is not supported by this check`);
  }
}

/** Grafana's templateSrv.replace with the plugin's format function. Unknown names are left as they are. */
export function replaceVariables(sql: string, vars: readonly TemplateVariable[]): string {
  return sql.replace(VARIABLE_REGEX, (match, plain?: string, bracket?: string, bracketFormat?: string, braced?: string, fieldPath?: string, format?: string) => {
    const name = plain ?? bracket ?? braced!;
    const v = vars.find((x) => x.name === name);
    if (!v) return match;
    if (fieldPath) throw new Error(`\${${name}.${fieldPath}}: field paths are not supported by this check`);
    let value: string | string[] = v.current.value;
    if (isAll(v)) value = v.options; // Grafana's All without a custom all value: every option
    const f = format ?? bracketFormat;
    return f ? namedFormat(f, value) : pluginFormat(value);
  });
}

// ---- 3. backend macros -------------------------------------------------------------------------------------

type Macro = (ctx: QueryContext, args: string[]) => string;

const unix = (ms: number) => Math.floor(ms / 1000);
const isoDate = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const intervalSeconds = (ctx: QueryContext) => Math.trunc(Math.max(ctx.intervalMs / 1000, 1));

function arity(name: string, args: string[], n: number): void {
  if (args.length !== n) throw new Error(`$__${name}: unexpected number of arguments: expected ${n} argument${n === 1 ? '' : 's'}, received ${args.length}`);
}

/** The ClickHouse plugin's macros (pkg/macros/macros.go). */
export const CLICKHOUSE_MACROS: Record<string, Macro> = {
  fromTime: (c) => `toDateTime(${unix(c.fromMs)})`,
  toTime: (c) => `toDateTime(${unix(c.toMs)})`,
  fromTime_ms: (c) => `fromUnixTimestamp64Milli(${c.fromMs})`,
  toTime_ms: (c) => `fromUnixTimestamp64Milli(${c.toMs})`,
  timeFilter: (c, a) => {
    arity('timeFilter', a, 1);
    return `${a[0]} >= toDateTime(${unix(c.fromMs)}) AND ${a[0]} <= toDateTime(${unix(c.toMs)})`;
  },
  timeFilter_ms: (c, a) => {
    arity('timeFilter_ms', a, 1);
    return `${a[0]} >= fromUnixTimestamp64Milli(${c.fromMs}) AND ${a[0]} <= fromUnixTimestamp64Milli(${c.toMs})`;
  },
  dateFilter: (c, a) => {
    arity('dateFilter', a, 1);
    return `${a[0]} >= toDate('${isoDate(c.fromMs)}') AND ${a[0]} <= toDate('${isoDate(c.toMs)}')`;
  },
  dateTimeFilter: (c, a) => dateTimeFilter(c, a),
  dt: (c, a) => dateTimeFilter(c, a),
  timeInterval: (c, a) => {
    arity('timeInterval', a, 1);
    return `toStartOfInterval(toDateTime(${a[0]}), INTERVAL ${intervalSeconds(c)} second)`;
  },
  timeInterval_ms: (c, a) => {
    arity('timeInterval_ms', a, 1);
    return `toStartOfInterval(toDateTime64(${a[0]}, 3), INTERVAL ${Math.trunc(Math.max(c.intervalMs, 1))} millisecond)`;
  },
  interval_s: (c) => String(intervalSeconds(c)),
};

function dateTimeFilter(c: QueryContext, a: string[]): string {
  arity('dateTimeFilter', a, 2);
  return `(${a[0]} >= toDate('${isoDate(c.fromMs)}') AND ${a[0]} <= toDate('${isoDate(c.toMs)}')) AND (${a[1]} >= toDateTime(${unix(c.fromMs)}) AND ${a[1]} <= toDateTime(${unix(c.toMs)}))`;
}

/** sqlutil's default macros, active unless the plugin defines them; their output is not ClickHouse SQL. */
const SDK_DEFAULT_MACROS = ['timeFilter', 'timeFrom', 'timeGroup', 'timeTo', 'table', 'column'];

function macroTable(): Array<[string, Macro]> {
  const out: Array<[string, Macro]> = Object.entries(CLICKHOUSE_MACROS);
  for (const name of SDK_DEFAULT_MACROS) {
    if (!(name in CLICKHOUSE_MACROS)) {
      out.push([name, () => {
        throw new Error(`$__${name} is the plugin SDK's generic macro (not ClickHouse SQL); use the ClickHouse macros`);
      }]);
    }
  }
  return out;
}

/**
 * The plugin SDK's getMacroMatches: finds `$__name` and, scanning on, the parenthesised text after it. Note the
 * scan: a macro without parentheses followed later by '(' (before any ')') takes that far-away text as its
 * arguments, which is why the dashboards write `($__toTime)`.
 */
function sdkMatches(input: string, name: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const rgx = new RegExp(`\\$__${name}\\b`, 'g');
  for (const m of input.matchAll(rgx)) {
    const macroStart = m.index!;
    const rest = input.slice(macroStart);
    let macroEnd = 0;
    let argStart = 0;
    let depth = 0;
    for (let idx = 0; idx < rest.length; idx++) {
      if ((depth === 0 && macroEnd > 0)) break;
      const r = rest[idx];
      if (r === '(') {
        depth++;
        if (argStart === 0) argStart = idx + 1;
      } else if (r === ')') {
        if (depth === 0) {
          macroEnd = 0;
          break;
        }
        depth--;
        macroEnd = idx + 1;
      }
    }
    if (macroEnd === 0) macroEnd = m[0].length;
    out.push([rest.slice(0, macroEnd), argStart > 0 ? rest.slice(argStart, macroEnd - 1) : '']);
  }
  return out;
}

/** The older sqlds scanner: `\$__name\b(?:\((.*?)\))?`, arguments up to the first ')'. */
function regexMatches(input: string, name: string): Array<[string, string]> {
  return [...input.matchAll(new RegExp(`\\$__${name}\\b(?:\\((.*?)\\))?`, 'g'))].map((m) => [m[0], m[1] ?? '']);
}

function interpolate(sql: string, ctx: QueryContext, matches: (input: string, name: string) => Array<[string, string]>): string {
  for (const [name, macro] of macroTable()) {
    for (const [text, args] of matches(sql, name)) {
      const value = macro(ctx, args.split(',').map((s) => s.trim()));
      sql = sql.split(text).join(value);
    }
  }
  return sql;
}

/** The plugin backend's macro expansion (plugin SDK scanner). */
export function interpolateMacros(sql: string, ctx: QueryContext): string {
  return interpolate(sql, ctx, sdkMatches);
}

/** The same with the regex scanner of older plugin versions; a robust query expands identically under both. */
export function interpolateMacrosLegacy(sql: string, ctx: QueryContext): string {
  return interpolate(sql, ctx, regexMatches);
}

// ---- the whole pipeline ------------------------------------------------------------------------------------

/** What reaches ClickHouse for a panel's raw SQL; throws when the two macro scanners disagree or names remain. */
export function expandSql(rawSql: string, vars: readonly TemplateVariable[], ctx: QueryContext): string {
  const templated = replaceVariables(applyConditionalAll(rawSql, vars), vars);
  const sql = interpolateMacros(templated, ctx);
  const legacy = interpolateMacrosLegacy(templated, ctx);
  if (sql !== legacy) throw new Error(`macro expansion depends on the plugin version (write argument-free macros as ($__name)):\n${sql}\n---\n${legacy}`);
  const leftMacro = /\$__\w+/.exec(sql);
  if (leftMacro) throw new Error(`unknown macro ${leftMacro[0]}`);
  const leftVariable = /\$\{?\w+/.exec(sql);
  if (leftVariable) throw new Error(`unknown variable ${leftVariable[0]}`);
  return sql;
}

// ---- Grafana's interval ------------------------------------------------------------------------------------

const DURATION_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000, y: 31_536_000_000 };

/** '1h' -> 3600000 (Grafana's interval syntax, without the '>' prefix). */
export function parseDurationMs(text: string): number {
  const m = /^(\d+)(ms|s|m|h|d|w|y)$/.exec(text);
  if (!m) throw new Error(`not an interval: ${JSON.stringify(text)}`);
  return Number(m[1]) * DURATION_MS[m[2]];
}

/** Grafana's rangeutil.roundInterval. */
export function roundInterval(ms: number): number {
  const steps: Array<[number, number]> = [
    [10, 1], [15, 10], [35, 20], [75, 50], [150, 100], [350, 200], [750, 500], [1500, 1000], [3500, 2000],
    [7500, 5000], [12500, 10000], [17500, 15000], [25000, 20000], [45000, 30000], [90000, 60000],
    [210000, 120000], [450000, 300000], [750000, 600000], [1050000, 900000], [1500000, 1200000],
    [2700000, 1800000], [5400000, 3600000], [9000000, 7200000], [16200000, 10800000], [32400000, 21600000],
    [86400000, 43200000], [604800000, 86400000], [1814400000, 604800000],
  ];
  for (const [limit, value] of steps) if (ms <= limit) return value;
  return ms < 3628800000 ? 2592000000 : 31536000000;
}

/** Grafana's panel interval: the range over the data points, rounded, never below the panel's minimum interval. */
export function panelIntervalMs(fromMs: number, toMs: number, maxDataPoints: number, minInterval?: string): number {
  const interval = roundInterval((toMs - fromMs) / maxDataPoints);
  return minInterval ? Math.max(interval, parseDurationMs(minInterval)) : interval;
}
