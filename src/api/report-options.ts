import { IANAZone } from 'luxon';
/**
 * The options every monthly report shares (finance, efficiency): --month, --timezone (UTC), --format (from --out's
 * extension, else csv). Returns what is wrong with them, one entry per option, and their values.
 */
export function monthReportOptions(values: { month?: string; timezone?: string; out?: string; format?: string }): { problems: string[]; timezone: string; format: string } {
  const problems: string[] = [];
  if (!values.month || !/^\d{4}-(0[1-9]|1[0-2])$/.test(values.month)) problems.push('--month: expected YYYY-MM');
  const timezone = values.timezone ?? 'UTC';
  if (!IANAZone.isValidZone(timezone)) problems.push(`--timezone: unknown IANA time zone ${JSON.stringify(timezone)}`);
  const format = values.format ?? (values.out?.endsWith('.json') ? 'json' : 'csv');
  if (format !== 'csv' && format !== 'json') problems.push('--format: expected csv or json');
  return { problems, timezone, format };
}
