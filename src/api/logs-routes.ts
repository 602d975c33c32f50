import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { DateTime } from 'luxon';
import { z } from 'zod';
import type { Runtime } from '../runtime.js';
import { badParameter, DAY_OR_INSTANT, checkRangeDays, formatParam, listParam, sendTable } from './http.js';
import type { RouteRegistry } from './routes.js';
import { LogsResponse } from './responses.js';
import { LOG_LEVELS, searchLogSizes, searchLogs, type LogLevel } from '../store/tables/logs.js';

const timeParam = (what: string) =>
  z
    .string()
    .max(40, `expected an ISO 8601 date-time (${what})`)
    .refine((v) => DateTime.fromISO(v, { zone: 'utc' }).isValid && /^\d{4}-/.test(v), `expected an ISO 8601 date-time (${what})`)
    .meta({ description: `an ISO 8601 date-time, or a date for its midnight UTC (${what})`, ...DAY_OR_INSTANT })
    .transform((v) => DateTime.fromISO(v, { zone: 'utc' }).toUTC());

/** The filters of a log search, shared by GET /logs and GET /logs/stream. */
export const logFilterFields = {
  app: listParam().describe('only these apps (repeatable)'),
  level: z
    .string()
    .transform((v) => v.toUpperCase())
    .pipe(z.enum(Object.keys(LOG_LEVELS) as [LogLevel, ...LogLevel[]], { error: `expected a level: ${Object.keys(LOG_LEVELS).join(', ')}` }))
    .optional()
    .describe('minimum level'),
  request_id: z.string().max(200, 'expected at most 200 characters').optional(),
  contains: z.string().min(1, 'expected at least one character').max(500, 'expected at most 500 characters').optional().describe('case-insensitive text the message contains'),
};

const LogsQuery = z.strictObject({
  ...logFilterFields,
  from: timeParam('start, inclusive').optional().describe('default: 24 hours before to'),
  to: timeParam('end, exclusive').optional().describe('default: now'),
  limit: z.coerce.number({ error: 'expected a number 1..1000' }).int('expected a whole number 1..1000').min(1, 'expected a number 1..1000').max(1000, 'expected at most 1000').default(100),
  cursor: z.string().max(500, 'expected a cursor from a previous answer').optional().describe('next_cursor of the previous page'),
  format: formatParam,
});

/**
 * Cursors are the position of the last line served (timestamp, batch, line) and a digest of the filters,
 * signed with a key of this process: a forged, altered or foreign cursor (or one from before a restart) is a
 * clear 400, never a query.
 */
class CursorCodec {
  private readonly key = randomBytes(32);

  encode(position: { t: string; b: string; l: number }, filters: string): string {
    const body = Buffer.from(JSON.stringify({ ...position, f: filters })).toString('base64url');
    return `${body}.${this.sign(body)}`;
  }

  decode(cursor: string, filters: string): { t: string; b: string; l: number } {
    const [body, sig] = cursor.split('.');
    const bad = () => badParameter('cursor', 'expected the next_cursor of a previous answer with the same filters (cursors end when the service restarts)');
    if (!body || !sig) throw bad();
    const expected = Buffer.from(this.sign(body));
    const given = Buffer.from(sig);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw bad();
    const parsed = z
      .object({ t: z.string(), b: z.string().uuid(), l: z.number().int().nonnegative(), f: z.string() })
      .safeParse(JSON.parse(Buffer.from(body, 'base64url').toString()));
    if (!parsed.success || parsed.data.f !== filters) throw bad();
    return parsed.data;
  }

  private sign(body: string): string {
    return createHmac('sha256', this.key).update(body).digest('base64url');
  }
}

/** GET /logs: search the drained log lines, newest first, in pages of at most 1,000. */
export function logsRoutes(app: FastifyInstance, registry: RouteRegistry, rt: Runtime): void {
  const cursors = new CursorCodec();
  registry.get(app, {
    path: '/logs',
    operationId: 'searchLogs',
    responseHeaders: { 'X-Next-Cursor': 'when more lines follow: the cursor of the next page (CSV answers carry it only here)' },
    response: LogsResponse,
    summary: 'Log lines by app, minimum level, request id, text and time range; newest first, paged with an opaque cursor',
    description:
      'A page holds at most limit lines and at most API_LOGS_MAX_PAGE_BYTES bytes of their text (one line at least): when either bound stops it, has_more is true and next_cursor carries on from the last line served.',
    query: LogsQuery,
    csv: true,
    handler: async (q, request, reply) => {
      const to = q.to ?? DateTime.utc();
      const from = q.from ?? to.minus({ hours: 24 });
      if (to <= from) throw badParameter('to', 'expected an end after from (to is exclusive)');
      checkRangeDays(to.diff(from, 'days').days, rt.config.API_LOGS_MAX_RANGE_DAYS, 'API_LOGS_MAX_RANGE_DAYS');
      const filters = createHash('sha256')
        .update(JSON.stringify([q.app, q.level ?? '', q.request_id ?? '', q.contains ?? '', from.toISO(), to.toISO()]))
        .digest('base64url');
      const after = q.cursor ? cursors.decode(q.cursor, filters) : null;
      const search = {
        from: from.toFormat('yyyy-MM-dd HH:mm:ss.SSS'),
        to: to.toFormat('yyyy-MM-dd HH:mm:ss.SSS'),
        apps: q.app,
        min_severity: q.level ? LOG_LEVELS[q.level] : 0,
        request_id: q.request_id ?? '',
        contains: q.contains ?? '',
        has_cursor: after ? 1 : 0,
        after_t: after?.t ?? '1970-01-01 00:00:00.000',
        after_b: after?.b ?? '00000000-0000-0000-0000-000000000000',
        after_l: after?.l ?? 0,
      };
      // A page is bounded in bytes as well as rows (CONTRIBUTING.md rule 21): the sizes of the next limit + 1 lines
      // first (no text read), then only the lines that fit in API_LOGS_MAX_PAGE_BYTES (one at least, so a page
      // always moves on); the cursor carries on from the last line served.
      const sizes = await searchLogSizes(rt.store, { ...search, limit: q.limit + 1 });
      let fit = 0;
      for (let bytes = 0; fit < Math.min(q.limit, sizes.length); fit++) {
        bytes += sizes[fit].line_bytes;
        if (fit > 0 && bytes > rt.config.API_LOGS_MAX_PAGE_BYTES) break;
      }
      const rows = fit === 0 ? [] : await searchLogs(rt.store, { ...search, limit: fit });
      const last = rows[rows.length - 1];
      const nextCursor = sizes.length > rows.length && last ? cursors.encode({ t: last.timestamp, b: last.batch_id, l: last.line }, filters) : null;
      const lines = rows.map((r) => ({ ...r, timestamp: `${r.timestamp.replace(' ', 'T')}Z` }));
      const columns = ['timestamp', 'level', 'app', 'endpoint', 'request_id', 'job_id', 'node', 'worker', 'source', 'message'];
      // CSV has no room for the cursor: the next page's is a header (JSON carries it too).
      if (nextCursor) reply.header('x-next-cursor', nextCursor);
      return sendTable(
        reply,
        request,
        q.format,
        { columns, rows: lines.map((l) => Object.fromEntries(columns.map((c) => [c, (l as Record<string, string | number>)[c]]))) },
        () => ({ from: from.toISO(), to: to.toISO(), lines, next_cursor: nextCursor, has_more: nextCursor !== null }),
        'logs.csv',
      );
    },
  });
}
