import type { FastifyInstance } from 'fastify';
import { DateTime, IANAZone } from 'luxon';
import { z } from 'zod';
import type { Runtime } from '../runtime.js';
import { ERROR_METRICS, errorsByBucket, LATENCY_METRICS, latencyByBucket } from '../store/tables/analytics-buckets.js';
import { latencySummaries } from '../store/tables/analytics-summaries.js';
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

type Metrics = Record<(typeof LATENCY_METRICS)[number], number | null>;
type LatencySummary = { endpoint_id: string; endpoint_scope: string; percentiles_source: 'platform_summary' | 'bucket_max'; covered_until: string | null } & Metrics;

/**
 * The whole range per endpoint (issue 50.2). Where the platform's own summary of exactly this range is stored (a
 * local day or calendar month the analytics job collected): its figures, `platform_summary`. Otherwise, from the
 * buckets, never merged into a false percentile: counts summed, each percentile the largest bucket value
 * (`bucket_max`: an upper bound of the range's percentile, not the percentile itself; equal to it only when one
 * bucket spans the range).
 */
function wholeRange(
  stored: Array<{ endpoint_id: string; endpoint_scope: string; covered_until: string } & Metrics>,
  buckets: Array<{ endpoint_id: string; endpoint_scope: string } & Metrics>,
): LatencySummary[] {
  const out = new Map<string, LatencySummary>();
  for (const s of stored) {
    const metrics = Object.fromEntries(LATENCY_METRICS.map((m) => [m, s[m]])) as Metrics;
    out.set(s.endpoint_id, {
      endpoint_id: s.endpoint_id,
      endpoint_scope: s.endpoint_scope,
      percentiles_source: 'platform_summary',
      covered_until: DateTime.fromSQL(s.covered_until, { zone: 'utc' }).toISO({ suppressMilliseconds: true }),
      ...metrics,
    });
  }
  const fallback = new Map<string, LatencySummary>();
  for (const b of buckets) {
    if (out.has(b.endpoint_id)) continue;
    let f = fallback.get(b.endpoint_id);
    if (!f) {
      f = { endpoint_id: b.endpoint_id, endpoint_scope: b.endpoint_scope, percentiles_source: 'bucket_max', covered_until: null, ...(Object.fromEntries(LATENCY_METRICS.map((m) => [m, null])) as Metrics) };
      fallback.set(b.endpoint_id, f);
    }
    for (const m of LATENCY_METRICS) {
      const v = b[m];
      if (v === null || v === undefined) continue;
      const cur = f[m];
      f[m] = m.endsWith('_count') ? (cur ?? 0) + v : cur === null ? v : Math.max(cur, v);
    }
  }
  return [...out.values(), ...fallback.values()].sort((a, b) => (a.endpoint_id < b.endpoint_id ? -1 : a.endpoint_id > b.endpoint_id ? 1 : 0));
}

/** GET /latency, /errors, /runners: the analytics and runner history as delivered, per endpoint and bucket. */
export function analyticsRoutes(app: FastifyInstance, registry: RouteRegistry, rt: Runtime): void {
  const kind = z.enum(['serverless', 'models']).default('serverless').describe('serverless apps or the platform models');

  registry.get(app, {
    path: '/latency',
    operationId: 'getLatency',
    response: LatencyResponse,
    summary: 'Duration, prepare-time and cold-boot percentiles per endpoint and bucket, as the platform computed them',
    description:
      "Percentiles are never averaged or summed across buckets; app-scope rows include their routes. `summary` gives the whole range per endpoint: the platform's own percentiles when the range is a local day or calendar month the analytics job collected (percentiles_source platform_summary), else the largest bucket value, an upper bound (bucket_max). The CSV holds the bucket rows only.",
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
      const stored = await latencySummaries(rt.store, { kind: q.kind, timezone: r.timezone, from: r.from, to: r.to, endpoint_ids: q.endpoint_id });
      const summary = wholeRange(stored, rows);
      return sendTable(reply, request, q.format, t, () => ({ ...r, kind: q.kind, summary, rows: t.rows }), 'latency.csv');
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
