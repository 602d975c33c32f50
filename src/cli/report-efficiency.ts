import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DateTime } from 'luxon';
import { getConfig } from '../config.js';
import { commandIO } from '../http/command-host.js';
import { withCommandRuntime } from '../service.js';
import { efficiencyCoverage, efficiencyTable, hintTable, loadEfficiency, loadRecommendations } from '../api/efficiency-routes.js';
import { toCsv } from '../api/http.js';
import { monthReportOptions } from '../api/report-options.js';

export const EFFICIENCY_USAGE =
  'tallyhouse report efficiency --month YYYY-MM [--timezone ZONE] [--hints] [--margin-percent N] [--out file.csv] [--format csv|json]\n';

/**
 * `tallyhouse report efficiency --month YYYY-MM`: busy, idle and draining spend per day, app and machine type of a
 * month (CSV by default), or with --hints the right-sizing and keep-warm recommendations; JSON holds both.
 */
export async function efficiencyCommand(args: string[]): Promise<number> {
  const io = commandIO();
  let values: { month?: string; timezone?: string; out?: string; format?: string; hints?: boolean; 'margin-percent'?: string };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        month: { type: 'string' }, timezone: { type: 'string' }, out: { type: 'string' }, format: { type: 'string' },
        hints: { type: 'boolean' }, 'margin-percent': { type: 'string' },
      },
      strict: true,
    }));
  } catch (err) {
    io.err(`tallyhouse report efficiency: ${(err as Error).message}\n\nUsage: ${EFFICIENCY_USAGE}`);
    return 2;
  }
  const { problems, timezone, format } = monthReportOptions(values);
  const margin = values['margin-percent'] === undefined ? undefined : Number(values['margin-percent']);
  if (margin !== undefined && !(Number.isFinite(margin) && margin >= 0 && margin <= 1000)) problems.push('--margin-percent: expected a number from 0 to 1000');
  if (values.out && !existsSync(dirname(resolve(values.out)))) problems.push(`--out: the directory ${dirname(resolve(values.out))} does not exist`);
  if (problems.length > 0) {
    io.err(`tallyhouse report efficiency: ${problems.join('; ')}\n\nUsage: ${EFFICIENCY_USAGE}`);
    return 2;
  }
  return withCommandRuntime(getConfig(), async (rt) => {
    const start = DateTime.fromISO(`${values.month}-01`, { zone: timezone });
    const rows = await loadEfficiency(rt.store, { from: start.toISODate()!, to: start.plus({ months: 1 }).toISODate()!, timezone });
    if (rows.length === 0) {
      io.err(`tallyhouse report efficiency: no usage stored for ${values.month} in ${timezone}; run \`tallyhouse collect usage --from ${start.toISODate()} --to ${start.plus({ months: 1 }).toISODate()} --timezone ${timezone}\` and the runners job first\n`);
      return 1;
    }
    const coverage = await efficiencyCoverage(rt, { from: start.toISODate()!, to: start.plus({ months: 1 }).toISODate()!, timezone });
    // What the figures rest on goes to stderr, so the CSV or JSON on stdout stays whole (rule 23).
    if (coverage.status !== 'complete') io.err(`tallyhouse report efficiency: warning: ${coverage.warning}\n`);
    const { hints, window } = await loadRecommendations(rt.store, {
      month: values.month!, timezone, marginPercent: margin ?? rt.config.RIGHTSIZING_VRAM_MARGIN_PERCENT, nowMs: rt.now().getTime(),
      schedulingSharePercent: rt.config.SCHEDULING_FAILURE_HINT_PERCENT,
    });
    const text = format === 'json'
      ? `${JSON.stringify({ month: values.month, timezone, coverage, rows, hints, keep_warm_window: window }, null, 2)}\n`
      : toCsv(values.hints ? hintTable(hints) : efficiencyTable(rows));
    if (values.out) {
      await io.writeFile(values.out, text);
      io.err(`efficiency report ${values.month} (${timezone}): ${rows.length} rows, ${hints.length} hints -> ${values.out}\n`);
    } else {
      io.out(text);
    }
    return 0;
  });
}
