import type { FastifyInstance } from 'fastify';
import { DateTime, IANAZone } from 'luxon';
import { z } from 'zod';
import type { Runtime } from '../runtime.js';
import { ERROR_METRICS, errorsByBucket, latencyByBucket } from '../store/tables/analytics-buckets.js';
import { runnerHistoryByBucket } from '../store/tables/runner-history.js';
import { webhookErrorCounts } from '../store/tables/webhook-deliveries.js';
import { badParameter, DAY_OR_INSTANT, checkRangeDays, formatParam, listParam, sendTable, type Table } from './http.js';
import type { RouteRegistry } from './routes.js';
import { ErrorsResponse, LatencyResponse, RunnersResponse } from './responses.js';

/** A date (local midnight in the timezone) or an ISO 8601 date-time. */
const instantParam = (what: string) =>
  z
    .string({ error: `expected a date YYYY-MM-DD or an ISO 8601 date-time (${what})` })
    .max(40, `expected a date YYYY-MM-DD or an ISO 8601 date-time (${what})`)
    .regex(/^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/, `expected a date YYYY-MM-DD or an ISO 8601 date-time (${what})`)
    .meta({ description: `a date YYYY-MM-DD or an ISO 8601 date-time (${what})`, ...DAY_OR_INSTANT });

function toUtc(value: string, timezone: string, parameter: string): DateTime {
  const dt = DateTime.fromISO(value.replace(' ', 'T'), { zone: timezone });
  if (!dt.isValid || dt.year < 2000 || dt.year > 2100) throw badParameter(parameter, 'expected a real date or date-time between 2000 and 2100');
  return dt.toUTC();
}

const RangeQuery = {
  from: instantParam('start, inclusive'),
  to: instantParam('end, exclusive'),
  timezone: z.string().default('UTC').describe('timezone the buckets were collected in'),
  timeframe: z.enum(['minute', 'hour', 'day']).optional().describe('bucket size (default ANALYTICS_TIMEFRAME)'),
  endpoint_id: listParam().describe('only these endpoint ids (repeatable)'),
  format: formatParam,
};

function range(rt: Runtime, q: { from: string; to: string; timezone: string; timeframe?: string }) {
  if (!IANAZone.isValidZone(q.timezone) || !rt.config.TIMEZONES.includes(q.timezone)) {
    throw badParameter('timezone', `expected one of the collected timezones: ${rt.config.TIMEZONES.join(', ')}`);
  }
  const from = toUtc(q.from, q.timezone, 'from');
  const to = toUtc(q.to, q.timezone, 'to');
  if (to <= from) throw badParameter('to', 'expected an end after from (to is exclusive)');
  checkRangeDays(to.diff(from, 'days').days, rt.config.API_MAX_RANGE_DAYS, 'API_MAX_RANGE_DAYS');
  return { from: from.toISO()!, to: to.toISO()!, timezone: q.timezone, timeframe: q.timeframe ?? rt.config.ANALYTICS_TIMEFRAME };
}

/** The bucket start as ISO 8601 with the offset it had in the collected timezone. */
function bucketIso(utc: string, offsetMinutes: number): string {
  return DateTime.fromSQL(utc, { zone: 'utc' }).setZone(offsetMinutes === 0 ? 'utc' : `UTC${offsetMinutes >= 0 ? '+' : '-'}${Math.floor(Math.abs(offsetMinutes) / 60)}:${String(Math.abs(offsetMinutes) % 60).padStart(2, '0')}`).toISO({ suppressMilliseconds: true })!;
}

function table<T extends Record<string, unknown>>(rows: T[], columns: string[]): Table {
  return { columns, rows: rows.map((r) => Object.fromEntries(columns.map((c) => [c, (r[c] ?? null) as string | number | null]))) };
}

/** GET /latency, /errors, /runners: the analytics and runner history as delivered, per endpoint and bucket. */
export function analyticsRoutes(app: FastifyInstance, registry: RouteRegistry, rt: Runtime): void {
  const kind = z.enum(['serverless', 'models']).default('serverless').describe('serverless apps or the platform models');

  registry.get(app, {
    path: '/latency',
    operationId: 'getLatency',
    response: LatencyResponse,
    summary: 'Duration, prepare-time and cold-boot percentiles per endpoint and bucket, as the platform computed them',
    description: 'Percentiles are never averaged or summed across buckets; app-scope rows include their routes.',
    query: z.strictObject({ ...RangeQuery, kind }),
    csv: true,
    handler: async (q, request, reply) => {
      const r = range(rt, q);
      const rows = (await latencyByBucket(rt.store, { ...r, kind: q.kind, endpoint_ids: q.endpoint_id })).map((row) => ({
        ...row,
        bucket: bucketIso(row.bucket_utc, row.bucket_offset_minutes),
      }));
      const metrics = Object.keys(rows[0] ?? {}).filter((k) => /duration$|_count$/.test(k));
      const t = table(rows, ['endpoint_id', 'endpoint_scope', 'bucket', ...(metrics.length ? metrics : ['request_count'])]);
      return sendTable(reply, request, q.format, t, () => ({ ...r, kind: q.kind, rows: t.rows }), 'latency.csv');
    },
  });

  registry.get(app, {
    path: '/errors',
    operationId: 'getErrors',
    response: ErrorsResponse,
    summary: 'Outcomes (2xx, 4xx, 5xx) and error-type counts (startup, connection, timeout, runtime) per endpoint and bucket',
    query: z.strictObject({ ...RangeQuery, kind }),
    csv: true,
    handler: async (q, request, reply) => {
      const r = range(rt, q);
      const rows = (await errorsByBucket(rt.store, { ...r, kind: q.kind, endpoint_ids: q.endpoint_id })).map((row) => ({
        ...row,
        bucket: bucketIso(row.bucket_utc, row.bucket_offset_minutes),
      }));
      const columns = ['endpoint_id', 'endpoint_scope', 'bucket', ...ERROR_METRICS];
      const t = table(rows, columns);
      const webhookErrors = await webhookErrorCounts(rt.store, { from: r.from, to: r.to });
      return sendTable(reply, request, q.format, t, () => ({ ...r, kind: q.kind, rows: t.rows, webhook_errors: webhookErrors }), 'errors.csv');
    },
  });

  registry.get(app, {
    path: '/runners',
    operationId: 'getRunners',
    response: RunnersResponse,
    summary: 'Runner counts by state (running, idle, pending, draining) per app and bucket',
    query: z.strictObject({ ...RangeQuery, aggregation: z.enum(['max', 'avg']).default('max').describe('max or time-weighted avg within the bucket') }),
    csv: true,
    handler: async (q, request, reply) => {
      const r = range(rt, q);
      const rows = (await runnerHistoryByBucket(rt.store, { ...r, aggregation: q.aggregation, endpoint_ids: q.endpoint_id })).map((row) => ({
        ...row,
        bucket: bucketIso(row.timestamp_utc, row.timestamp_offset_minutes),
      }));
      const t = table(rows, ['endpoint_id', 'bucket', 'running', 'idle', 'pending', 'draining']);
      return sendTable(reply, request, q.format, t, () => ({ ...r, aggregation: q.aggregation, rows: t.rows }), 'runners.csv');
    },
  });
}
