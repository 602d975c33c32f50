import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { stringify } from 'csv-stringify/sync';
import { HttpProblem, installProblemHandlers, redactStatement } from '../http/problem.js';
import { z } from 'zod';
import type { Runtime } from '../runtime.js';
import { ISO_DATE } from '../values.js';
import { coverageHeader, type Coverage } from '../insights/coverage.js';

/** A client error that names the parameter and what it expects; the only kind of detail a response carries. */
export class ApiError extends HttpProblem {}

export function badParameter(parameter: string, expected: string): ApiError {
  return new ApiError(400, 'validation_error', `${parameter}: ${expected}`, parameter);
}

/** Query-string values arrive as a string or, when repeated, an array: normalise a list parameter. */
export function listParam() {
  return z
    .union([z.string(), z.array(z.string())])
    .optional()
    .transform((v) =>
      v === undefined ? [] : (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean),
    );
}

export const dateParam = (what: string) =>
  z
    .string({ error: `expected a date YYYY-MM-DD (${what})` })
    .regex(ISO_DATE, `expected a date YYYY-MM-DD (${what})`)
    .refine((v) => {
      const d = new Date(`${v}T00:00:00Z`);
      return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(v) && v >= '2000-01-01' && v <= '2100-01-01';
    }, `expected a real calendar date between 2000-01-01 and 2100-01-01 (${what})`)
    .meta({ description: `a date YYYY-MM-DD (${what})`, format: 'date' });

/** OpenAPI formats of answer fields: a calendar day (`2026-03-01`) and an instant (`2026-03-01T10:00:00Z`). */
export const isoDay = () => z.string().meta({ format: 'date' });
export const isoInstant = () => z.string().meta({ format: 'date-time' });
/** What a parameter taking a date or an ISO 8601 date-time declares. */
export const DAY_OR_INSTANT = { anyOf: [{ format: 'date' }, { format: 'date-time' }] };

/** A month YYYY-MM between 2000-01 and 2100-01: the one month parser of every route (a bad month is a 400 naming it). */
export const monthParam = (what: string) =>
  z
    .string()
    .regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'expected a month YYYY-MM')
    .refine((m) => m >= '2000-01' && m <= '2100-01', 'expected a month between 2000-01 and 2100-01')
    .describe(`a month YYYY-MM (${what})`);

export const formatParam = z.enum(['json', 'csv']).optional();

/** Parses a request's query with a zod schema; the first problem becomes a 400 naming the parameter. */
export function parseQuery<S extends z.ZodType>(schema: S, request: FastifyRequest): z.output<S> {
  const result = schema.safeParse(request.query ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const parameter = String(issue.path[0] ?? 'query');
  let expected = issue.message;
  const shape: Record<string, z.ZodType> = (schema as unknown as z.ZodObject).shape ?? {};
  if (issue.code === 'unrecognized_keys') {
    // Issue 30.9: a route without parameters said "allowed: " (empty), and format=csv on a JSON-only route no more.
    const allowed = Object.keys(shape);
    const why = issue.keys[0] === 'format' && !('format' in shape) ? 'this route answers JSON only' : 'unknown parameter';
    return raise(badParameter(issue.keys[0], allowed.length > 0 ? `${why}; allowed: ${allowed.join(', ')}` : `${why}; this route takes no query parameters`));
  }
  if (issue.code === 'invalid_type' && /received undefined$/.test(issue.message)) {
    // A missing parameter said "Invalid input: expected string, received undefined": name it required, and what it takes.
    const probe = shape[parameter]?.safeParse('');
    const takes = probe && !probe.success ? probe.error.issues[0]?.message : undefined;
    return raise(badParameter(parameter, `required${takes && !/received/.test(takes) ? `; ${takes}` : ''}`));
  }
  if (issue.code === 'invalid_value') expected = `expected one of ${issue.values.map(String).join(', ')}`;
  if (issue.code === 'invalid_type' && issue.expected === 'number') expected = 'expected a number';
  return raise(badParameter(parameter, expected));
}

function raise(err: ApiError): never {
  throw err;
}

export type Cell = string | number | boolean | null;
export interface Table {
  columns: string[];
  rows: Array<Record<string, Cell>>;
}

export function wantsCsv(request: FastifyRequest, format?: string): boolean {
  if (format) return format === 'csv';
  const accept = request.headers.accept ?? '';
  return /\btext\/csv\b/.test(accept) && !/\bapplication\/json\b/.test(accept);
}

/** A plain decimal number, as money and quantities are sent (exact decimal text): a spreadsheet reads it as a number. */
const PLAIN_NUMBER = /^-?\d+(\.\d+)?$/;
/** What a spreadsheet treats as the start of a formula (OWASP "CSV injection"). */
const FORMULA_START = /^[=+\-@\t\r]/;
/** A line break followed by a formula start: the start of a line a spreadsheet or a line-based reader may evaluate. */
const LINE_FORMULA_START = /(\r\n|\r|\n)(?=[=+\-@\t])/g;
const LINE_BREAK = /[\r\n]/;

/**
 * A cell a spreadsheet will not evaluate (CONTRIBUTING.md rule 18): text that starts like a formula, or holds a
 * line that does after a line break, gets a leading `'`, and so does every such line (a reader that splits the
 * cell at its line breaks, or a spreadsheet that imports it as several rows, sees only neutralised lines);
 * numbers, and text that is a plain decimal number (a negative difference), stay numbers.
 */
export function safeCell(value: Cell | undefined): string | number | boolean {
  if (value === null || value === undefined) return '';
  if (typeof value !== 'string') return value;
  if (PLAIN_NUMBER.test(value)) return value;
  const lines = LINE_BREAK.test(value) ? value.replace(LINE_FORMULA_START, "$1'") : value;
  return FORMULA_START.test(value) || lines !== value ? `'${lines}` : value;
}

/**
 * RFC 4180 CSV: a header row, CRLF line ends, quoting where needed, numbers unformatted, UTF-8, safe to open. A cell
 * holding CR or LF is always quoted: csv-stringify quotes only the record delimiter (CRLF), and a bare LF left
 * unquoted is a record end to most readers, which would start a new row with the rest of the cell.
 */
export function toCsv(table: Table): string {
  return stringify(
    table.rows.map((r) => table.columns.map((c) => safeCell(r[c]))),
    {
      header: true,
      columns: table.columns,
      record_delimiter: 'windows',
      quoted_match: LINE_BREAK,
      cast: { boolean: (b) => (b ? 'true' : 'false') },
    },
  );
}

/** The header a CSV answer's coverage travels in: `complete`, or the status and the warning. */
export const COVERAGE_HEADER = 'X-Tallyhouse-Coverage';

export function sendTable(
  reply: FastifyReply,
  request: FastifyRequest,
  format: string | undefined,
  table: Table,
  json: () => unknown,
  filename = 'tallyhouse.csv',
  coverage?: Coverage,
): FastifyReply {
  if (wantsCsv(request, format)) {
    // A CSV has no place for the coverage object: it goes in a header the README names (rule 23).
    if (coverage) reply.header(COVERAGE_HEADER, coverageHeader(coverage));
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="${filename}"`)
      .send(toCsv(table));
  }
  return reply.send(json());
}

/** The query API's error handling: the service's (src/http/problem.ts), with a not-found that points at the routes. */
export function installErrorHandler(app: FastifyInstance, _rt?: Pick<Runtime, 'logger'>): void {
  installProblemHandlers(app, {
    notFound: (request) => `no route ${request.method} ${request.url.split('?')[0]}; the routes are listed at /api/v1/openapi.json`,
    failed: 'the query failed; see the service log',
  });
}

export { redactStatement };

/** A range longer than a route answers is a 400 naming the limit (API_MAX_RANGE_DAYS or API_LOGS_MAX_RANGE_DAYS). */
export function checkRangeDays(days: number, maxDays: number, variable: string): void {
  // Written so that NaN (a date no parser should have let through) is refused too: NaN > max is false.
  if (!(days <= maxDays)) throw badParameter('to', `expected a range of at most ${maxDays} days (${variable}); this one spans ${Math.ceil(days)}`);
}
