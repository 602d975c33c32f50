import { describe, expect, it } from 'vitest';
import {
  applyConditionalAll,
  expandSql,
  interpolateMacros,
  interpolateMacrosLegacy,
  panelIntervalMs,
  replaceVariables,
  type TemplateVariable,
} from './grafana-sql.js';

const F = Date.UTC(2026, 10, 1, 0, 0, 0, 250); // 1793491200.25 s
const T = Date.UTC(2026, 10, 8, 12, 30, 0, 999); // 1794141000.999 s
const ctx = { fromMs: F, toMs: T, intervalMs: 600_000 };

const multi = (name: string, value: string[], options = ['a', 'b', "o'brien"]): TemplateVariable => ({ name, type: 'query', current: { value }, options });
const single = (name: string, value: string): TemplateVariable => ({ name, type: 'query', current: { value }, options: [value] });

describe('the plugin backend macros', () => {
  it('time filter, bounds and interval as in pkg/macros/macros.go', () => {
    expect(interpolateMacros('WHERE $__timeFilter(ts)', ctx)).toBe('WHERE ts >= toDateTime(1793491200) AND ts <= toDateTime(1794141000)');
    expect(interpolateMacros('SELECT $__timeInterval(ts) AS t', ctx)).toBe('SELECT toStartOfInterval(toDateTime(ts), INTERVAL 600 second) AS t');
    expect(interpolateMacros('x / ($__interval_s), ($__fromTime), ($__toTime)', ctx)).toBe('x / (600), (toDateTime(1793491200)), (toDateTime(1794141000))');
    expect(interpolateMacros('$__timeFilter_ms(ts)', ctx)).toBe(`ts >= fromUnixTimestamp64Milli(${F}) AND ts <= fromUnixTimestamp64Milli(${T})`);
    expect(interpolateMacros('$__dateFilter(d)', ctx)).toBe("d >= toDate('2026-11-01') AND d <= toDate('2026-11-08')");
    // An interval below a second is one second.
    expect(interpolateMacros('$__timeInterval(ts) $__interval_s', { ...ctx, intervalMs: 200 })).toBe('toStartOfInterval(toDateTime(ts), INTERVAL 1 second) 1');
    expect(() => interpolateMacros('$__timeFilter(a, b)', ctx)).toThrow(/expected 1 argument, received 2/);
  });

  it("an argument-free macro followed by '(' swallows the text up to it in the SDK scanner, not in the regex one", () => {
    const sql = 'WHERE ts <= $__toTime AND app IN (1)';
    expect(interpolateMacros(sql, ctx)).toBe('WHERE ts <= toDateTime(1794141000)');
    expect(interpolateMacrosLegacy(sql, ctx)).toBe('WHERE ts <= toDateTime(1794141000) AND app IN (1)');
    expect(() => expandSql(sql, [], ctx)).toThrow(/depends on the plugin version/);
    const safe = 'WHERE ts <= ($__toTime) AND app IN (1)';
    expect(expandSql(safe, [], ctx)).toBe('WHERE ts <= (toDateTime(1794141000)) AND app IN (1)');
  });

  it('leaves nothing unexpanded', () => {
    expect(() => expandSql('SELECT $__table', [], ctx)).toThrow(/generic macro/);
    expect(() => expandSql('SELECT $__nope(x)', [], ctx)).toThrow(/unknown macro \$__nope/);
    expect(() => expandSql('SELECT ${missing}', [], ctx)).toThrow(/unknown variable/);
  });
});

describe('$__conditionalAll and template variables', () => {
  const cond = "SELECT 1 WHERE $__conditionalAll(app IN (${app:singlequote}), $app) AND $__conditionalAll(splitByChar('/', e)[2] IN (${e:singlequote}), ${e})";

  it('All (and an empty text box) drop the condition; a selection keeps it, quoted', () => {
    const all = [multi('app', ['$__all']), multi('e', ['$__all'])];
    expect(replaceVariables(applyConditionalAll(cond, all), all)).toBe('SELECT 1 WHERE 1=1 AND 1=1');
    const some = [multi('app', ['a', "o'brien"]), multi('e', ['b'])];
    expect(replaceVariables(applyConditionalAll(cond, some), some)).toBe(
      "SELECT 1 WHERE app IN ('a','o\\'brien') AND splitByChar('/', e)[2] IN ('b')",
    );
    const box: TemplateVariable = { name: 'rid', type: 'textbox', current: { value: '' }, options: [] };
    expect(applyConditionalAll('x AND $__conditionalAll(r = ${rid:singlequote}, $rid)', [box])).toBe('x AND 1=1');
  });

  it("formats: the plugin's own for a bare reference, Grafana's for a named one; All expands to every option", () => {
    const vars = [multi('app', ['a', 'b']), single('tz', 'UTC'), multi('every', ['$__all'])];
    expect(replaceVariables('$app | ${app} | ${app:singlequote} | ${app:sqlstring} | $tz | ${tz:singlequote}', vars)).toBe(
      "'a','b' | 'a','b' | 'a','b' | 'a','b' | UTC | 'UTC'",
    );
    expect(replaceVariables('${every:singlequote}', vars)).toBe("'a','b','o\\'brien'");
    expect(replaceVariables('$__timeFilter(x) $__interval_s $unknown', vars)).toBe('$__timeFilter(x) $__interval_s $unknown');
  });
});

describe("Grafana's interval", () => {
  it('is the range over the data points, rounded, and at least the panel minimum', () => {
    expect(panelIntervalMs(0, 7 * 86_400_000, 1000)).toBe(600_000); // 7 d / 1000 = 605 s -> 10 m
    expect(panelIntervalMs(0, 86_400_000, 1000)).toBe(60_000); // 86 s -> 1 m
    expect(panelIntervalMs(0, 86_400_000, 1000, '1h')).toBe(3_600_000);
    expect(panelIntervalMs(0, 30 * 86_400_000, 1000)).toBe(1_800_000);
  });
});
