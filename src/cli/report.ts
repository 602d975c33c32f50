import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DateTime, IANAZone } from 'luxon';
import { getConfig } from '../config.js';
import { commandIO } from '../http/command-host.js';
import { describeArgsError, didYouMean } from '../suggest.js';
import { withCommandRuntime } from '../service.js';
import { financeReport, financeTable } from '../api/finance.js';
import { financeProblem } from '../insights/finance.js';
import { focusReport, focusTable } from '../api/focus.js';
import { focusOptions, FocusNoDataError } from '../insights/focus.js';
import { toCsv } from '../api/http.js';
import { monthReportOptions } from '../api/report-options.js';
import { efficiencyCommand, EFFICIENCY_USAGE } from './report-efficiency.js';
import { CHANGE_GROUP_NAMES, costChangesReport, costChangesTable } from '../api/cost-changes-report.js';
import { changePeriods } from '../insights/cost-changes.js';

const USAGE =
  'tallyhouse report finance --month YYYY-MM [--timezone ZONE] [--out file.csv] [--format csv|json]\n' +
  '       tallyhouse report focus --month YYYY-MM [--out file.csv]   (FOCUS 1.2, UTC days, both product lines)\n' +
  '       tallyhouse report changes --month YYYY-MM [--baseline YYYY-MM] [--group-by ...]   (why the bill changed)\n' +
  `       ${EFFICIENCY_USAGE}`;

const REPORTS = ['finance', 'focus', 'efficiency', 'changes'];

const FINANCE_HELP =
  'Usage: tallyhouse report finance --month YYYY-MM [--timezone ZONE] [--out file.csv] [--format csv|json]\n\n' +
  'The monthly finance report of both product lines, from the store. --timezone (default UTC) is the zone whose\n' +
  'month is reported; its usage must have been collected in that zone (TIMEZONES, or collect usage --timezone).\n' +
  '--format defaults to json for an --out ending in .json, else csv.\n';
const FOCUS_HELP =
  'Usage: tallyhouse report focus --month YYYY-MM [--out file.csv]\n\n' +
  'The month as a FOCUS 1.2 cost-and-usage CSV, in UTC days: it needs usage collected in UTC.\n';

/** `tallyhouse report [finance|focus] --help`. */
export function reportHelp(kind: string | undefined): number {
  const io = commandIO();
  if (kind === 'finance' || kind === 'focus') {
    io.out(kind === 'finance' ? FINANCE_HELP : FOCUS_HELP);
    return 0;
  }
  if (kind === 'efficiency') {
    io.out(`Usage: ${EFFICIENCY_USAGE}\nThe month's busy, idle and draining spend per day, app and machine type (--hints: right-sizing and keep-warm hints).\n`);
    return 0;
  }
  if (kind === 'changes') {
    io.out(
      `Usage: ${CHANGES_USAGE}\nWhy the bill changed: per group the month against its baseline (default the month before; a month not over\n` +
      'compared to date against the same days of its baseline), split into volume, price, discount, new and gone. Groups\n' +
      'seen in one period only while the other was not wholly collected are not_collected; the coverage warning goes to stderr.\n',
    );
    return 0;
  }
  if (kind !== undefined) {
    io.err(`tallyhouse report: unknown report ${JSON.stringify(kind)}${didYouMean(kind, REPORTS)}\nUsage: ${USAGE}`);
    return 2;
  }
  io.out(`Usage: ${USAGE}`);
  return 0;
}

/** `tallyhouse report finance|focus ...`: a report from the store, as CSV (default) or JSON. */
export async function reportCommand(argv: string[]): Promise<number> {
  const io = commandIO();
  const [kind, ...rest] = argv;
  if (kind === 'focus') return focusCommand(rest);
  if (kind === 'efficiency') return efficiencyCommand(rest);
  if (kind === 'changes') return changesCommand(rest);
  if (kind !== 'finance') {
    io.err(`tallyhouse report: ${kind ? `unknown report ${JSON.stringify(kind)}${didYouMean(kind, REPORTS)}` : 'which report? finance, focus, efficiency or changes'}\nUsage: ${USAGE}`);
    return 2;
  }
  let values: { month?: string; timezone?: string; out?: string; format?: string };
  try {
    ({ values } = parseArgs({
      args: rest,
      options: { month: { type: 'string' }, timezone: { type: 'string' }, out: { type: 'string' }, format: { type: 'string' } },
      strict: true,
    }));
  } catch (err) {
    io.err(`tallyhouse report finance: ${describeArgsError(err, ['month', 'timezone', 'out', 'format'])}\nUsage: ${USAGE}`);
    return 2;
  }
  const { problems, timezone, format } = monthReportOptions(values);
  if (problems.length === 0 && DateTime.fromFormat(values.month!, 'yyyy-MM', { zone: timezone }) > DateTime.now() /* before the store opens: the machine's clock */) {
    problems.push(`--month: expected a month that has started in ${timezone}; ${values.month} has not`);
  }
  if (problems.length > 0) {
    io.err(`tallyhouse report finance: ${problems.join('; ')}\n\nUsage: ${USAGE}`);
    return 2;
  }
  if (values.out && !existsSync(dirname(resolve(values.out)))) {
    io.err(`tallyhouse report finance: --out: the directory ${dirname(resolve(values.out))} does not exist\n\nUsage: ${USAGE}`);
    return 2;
  }
  return withCommandRuntime(getConfig(), async (rt) => {
    const report = await financeReport(rt.store, values.month!, timezone, rt.now(), { windowHours: rt.config.LATE_BILLING_WINDOW_HOURS });
    const problem = financeProblem(report, { configuredTimezones: rt.config.TIMEZONES, now: rt.now() });
    if (!problem && !rt.config.TIMEZONES.includes(timezone)) {
      io.err(`tallyhouse report finance: warning: ${timezone} is not in TIMEZONES, so scheduled runs do not keep its usage up to date\n`);
    }
    if (problem) {
      // A month that has not started is a usage error; a month with nothing collected says what would fill it.
      io.err(`tallyhouse report finance: ${problem.kind === 'future' ? '--month: ' : ''}${problem.message}\n`);
      return problem.kind === 'future' ? 2 : 1;
    }
    const text = format === 'json' ? `${JSON.stringify(report, null, 2)}\n` : toCsv(financeTable(report));
    if (values.out) {
      await io.writeFile(values.out, text);
      io.err(
        `finance report ${values.month} (${timezone}): ${report.rows.length} rows, ${report.reconciliation.flagged} flagged by the reconciliation -> ${values.out}\n`,
      );
    } else {
      io.out(text);
    }
    return 0;
  });
}

/** `tallyhouse report focus --month YYYY-MM [--out file.csv]`: the FOCUS 1.2 file of a month. */
async function focusCommand(args: string[]): Promise<number> {
  const io = commandIO();
  let values: { month?: string; out?: string };
  try {
    ({ values } = parseArgs({ args, options: { month: { type: 'string' }, out: { type: 'string' } }, strict: true }));
  } catch (err) {
    io.err(`tallyhouse report focus: ${describeArgsError(err, ['month', 'out'])}\nUsage: ${USAGE}`);
    return 2;
  }
  if (!values.month || !/^\d{4}-(0[1-9]|1[0-2])$/.test(values.month)) {
    io.err(`tallyhouse report focus: --month: expected YYYY-MM\n\nUsage: ${USAGE}`);
    return 2;
  }
  if (values.out && !existsSync(dirname(resolve(values.out)))) {
    io.err(`tallyhouse report focus: --out: the directory ${dirname(resolve(values.out))} does not exist\n\nUsage: ${USAGE}`);
    return 2;
  }
  return withCommandRuntime(getConfig(), async (rt) => {
    let rows;
    try {
      rows = await focusReport(rt.store, values.month!, focusOptions(rt.config, rt.now()));
    } catch (err) {
      if (!(err instanceof FocusNoDataError)) throw err;
      // The commands with the month's dates, as the finance report's hint gives them (issue 30.5: it said `...`).
      const from = `${values.month}-01`;
      const to = DateTime.fromISO(from, { zone: 'utc' }).plus({ months: 1 }).toISODate()!;
      io.err(`tallyhouse report focus: ${err.message.replaceAll('--timezone UTC ...', `--timezone UTC --from ${from} --to ${to}`)}\n`);
      return 1;
    }
    const text = toCsv(focusTable(rows));
    if (values.out) {
      await io.writeFile(values.out, text);
      io.err(`FOCUS ${values.month}: ${rows.length} rows -> ${values.out}\n`);
    } else {
      io.out(text);
    }
    return 0;
  });
}

const CHANGES_USAGE =
  'tallyhouse report changes --month YYYY-MM [--baseline YYYY-MM] [--group-by app,endpoint] [--product all|serverless|model_api]\n' +
  '                          [--timezone ZONE] [--top N] [--out file.csv] [--format csv|json]\n';

function nextMonth(month: string, n: number): string {
  const d = new Date(Date.UTC(Number(month.slice(0, 4)), Number(month.slice(5, 7)) - 1 + n, 1));
  return d.toISOString().slice(0, 7);
}

/** `tallyhouse report changes --month YYYY-MM [--baseline YYYY-MM]`: why the bill changed (src/insights/cost-changes.ts). */
async function changesCommand(args: string[]): Promise<number> {
  const io = commandIO();
  let values: { month?: string; baseline?: string; 'group-by'?: string; product?: string; timezone?: string; top?: string; out?: string; format?: string };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        month: { type: 'string' }, baseline: { type: 'string' }, 'group-by': { type: 'string' }, product: { type: 'string' },
        timezone: { type: 'string' }, top: { type: 'string' }, out: { type: 'string' }, format: { type: 'string' },
      },
      strict: true,
    }));
  } catch (err) {
    io.err(`tallyhouse report changes: ${(err as Error).message}\n\nUsage: ${CHANGES_USAGE}`);
    return 2;
  }
  const problems: string[] = [];
  const monthRe = /^\d{4}-(0[1-9]|1[0-2])$/;
  if (!values.month || !monthRe.test(values.month)) problems.push('--month: expected YYYY-MM');
  if (values.baseline !== undefined && !monthRe.test(values.baseline)) problems.push('--baseline: expected YYYY-MM');
  const timezone = values.timezone ?? 'UTC';
  if (!IANAZone.isValidZone(timezone)) problems.push(`--timezone: unknown IANA time zone ${JSON.stringify(timezone)}`);
  const product = values.product ?? 'all';
  if (product !== 'all' && product !== 'serverless' && product !== 'model_api') problems.push('--product: expected all, serverless or model_api');
  const groupBy = (values['group-by'] ?? 'app,endpoint').split(',').map((s) => s.trim()).filter(Boolean);
  const wrong = groupBy.filter((g) => !CHANGE_GROUP_NAMES.includes(g));
  if (wrong.length > 0) problems.push(`--group-by: ${wrong.join(', ')} not one of ${CHANGE_GROUP_NAMES.join(', ')}`);
  const top = values.top === undefined ? undefined : Number(values.top);
  if (top !== undefined && !(Number.isInteger(top) && top >= 1)) problems.push('--top: expected a whole number >= 1');
  const format = values.format ?? (values.out?.endsWith('.json') ? 'json' : 'csv');
  if (format !== 'csv' && format !== 'json') problems.push('--format: expected csv or json');
  if (problems.length > 0) {
    io.err(`tallyhouse report changes: ${problems.join('; ')}\n\nUsage: ${CHANGES_USAGE}`);
    return 2;
  }
  if (values.out && !existsSync(dirname(resolve(values.out)))) {
    io.err(`tallyhouse report changes: --out: the directory ${dirname(resolve(values.out))} does not exist\n\nUsage: ${CHANGES_USAGE}`);
    return 2;
  }
  const month = values.month!;
  return withCommandRuntime(getConfig(), async (rt) => {
    const now = rt.now();
    // The API's default (src/insights/cost-changes.ts): the month before, and a month not over to date against the
    // same days of its baseline.
    const periods = changePeriods({
      from: `${month}-01`, to: `${nextMonth(month, 1)}-01`, baselineFrom: values.baseline ? `${values.baseline}-01` : undefined,
      today: DateTime.fromJSDate(now, { zone: timezone }).toISODate()!,
    });
    const baseline = periods.baselineFrom.slice(0, 7);
    const report = await costChangesReport(rt.store, {
      timezone,
      ...periods,
      product: product as 'all' | 'serverless' | 'model_api',
      groupBy,
      windowHours: rt.config.LATE_BILLING_WINDOW_HOURS,
      now,
    });
    if (report.groups.length === 0) {
      io.err(`tallyhouse report changes: no cost collected in ${baseline} or ${month} (${timezone}); collect it with \`tallyhouse collect usage --from ... --to ...\` and \`collect models\`\n`);
      return 1;
    }
    // What the figures rest on goes to stderr (after the nothing-collected case, which says it all), so the CSV or
    // JSON on stdout stays whole (rule 23).
    if (report.coverage.status !== 'complete') io.err(`tallyhouse report changes: warning: ${report.coverage.warning}\n`);
    if (periods.toDate) io.err(`tallyhouse report changes: ${month} is not over: comparing ${periods.from} to ${periods.to} with ${periods.baselineFrom} to ${periods.baselineTo} (per-day figures in the totals)\n`);
    const shown = top === undefined ? report : { ...report, groups: report.groups.slice(0, top) };
    const text = format === 'json' ? `${JSON.stringify(shown, null, 2)}\n` : toCsv(costChangesTable(report, top));
    if (values.out) {
      await io.writeFile(values.out, text);
      io.err(`cost changes ${baseline} -> ${month} (${timezone}): ${shown.groups.length} groups -> ${values.out}\n`);
    } else {
      io.out(text);
    }
    return 0;
  });
}

