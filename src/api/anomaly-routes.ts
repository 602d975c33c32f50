import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Runtime } from '../runtime.js';
import { findingsInRange } from '../store/tables/anomalies.js';
import { MEASURES, SERIES_KINDS } from '../insights/anomalies.js';
import { badParameter, checkRangeDays, dateParam, formatParam, sendTable, isoDay, isoInstant } from './http.js';
import type { RouteRegistry } from './routes.js';

const DAY_MS = 86_400_000;
const MAX_LIMIT = 10_000;

const Query = z.strictObject({
  from: dateParam('first UTC day of the buckets, inclusive').optional().describe('default: 7 days before to'),
  to: dateParam('last UTC day of the buckets, exclusive').optional().describe('default: tomorrow (UTC)'),
  series_kind: z.enum(SERIES_KINDS as [string, ...string[]], { error: `expected one of ${SERIES_KINDS.join(', ')}` }).optional(),
  measure: z.enum(MEASURES as [string, ...string[]], { error: `expected one of ${MEASURES.join(', ')}` }).optional(),
  series_id: z.string().optional().describe('one app, endpoint, model endpoint or API key id'),
  limit: z.coerce.number({ error: `expected a whole number from 1 to ${MAX_LIMIT}` }).int().min(1).max(MAX_LIMIT).default(1000),
  format: formatParam,
});

const COLUMNS = ['finding_id', 'series_kind', 'series_id', 'measure', 'grain', 'unit', 'bucket', 'expected', 'expected_low', 'expected_high', 'actual', 'score', 'direction', 'summary', 'explanation', 'evaluated_at'] as const;

export const AnomaliesResponse = z.object({
  from: isoDay().describe('first UTC day, inclusive'),
  to: isoDay().describe('last UTC day, exclusive'),
  rows: z.array(
    z.object({
      finding_id: z.string().describe('stable for a series and bucket (notifications carry it)'),
      series_kind: z.string().describe(SERIES_KINDS.join(', ')),
      series_id: z.string(),
      measure: z.string().describe(MEASURES.join(', ')),
      grain: z.string().describe('day or hour'),
      unit: z.string().describe('the currency (cost), requests, ratio (error rate) or seconds (p95 latency)'),
      bucket: isoInstant().describe('bucket start, ISO 8601 UTC'),
      expected: z.number().describe('median of the same weekday (and hour) of the 4 weeks before, in unit'),
      expected_low: z.number().describe('lower end of the ordinary range, in unit'),
      expected_high: z.number().describe('upper end of the ordinary range, in unit'),
      actual: z.number().describe('the bucket’s value, in unit'),
      score: z.number().describe('(actual - expected) / floored robust spread'),
      direction: z.string().describe('up or down'),
      summary: z.string(),
      explanation: z.string().describe('cost findings: the change attribution against the same weekday a week before'),
      evaluated_at: isoInstant().describe('ISO 8601 UTC'),
    }),
  ),
});

const iso = (utc: string) => `${utc.replace(' ', 'T')}Z`;

/** GET /anomalies: the current findings of the anomalies job (re-evaluated ones replaced), newest first. */
export function anomalyRoutes(app: FastifyInstance, registry: RouteRegistry, rt: Runtime): void {
  registry.get(app, {
    path: '/anomalies',
    operationId: 'getAnomalies',
    response: AnomaliesResponse,
    summary: 'Anomaly findings: series, bucket, expected range, actual, score, direction and explanation',
    description:
      'Per app, endpoint, model endpoint and API key: daily cost, request volume and error rate per hour and day, p95 latency per day, judged against the same weekday (and hour) of the four weeks before. Newest bucket first, then the largest score.',
    query: Query,
    csv: true,
    handler: async (q, request, reply) => {
      const to = q.to ?? new Date(Math.floor(rt.now().getTime() / DAY_MS) * DAY_MS + DAY_MS).toISOString().slice(0, 10);
      const from = q.from ?? new Date(Date.parse(to) - 7 * DAY_MS).toISOString().slice(0, 10);
      if (to <= from) throw badParameter('to', `expected a date after from (${from}); to is exclusive`);
      checkRangeDays((Date.parse(to) - Date.parse(from)) / DAY_MS, rt.config.API_MAX_RANGE_DAYS, 'API_MAX_RANGE_DAYS');
      const found = await findingsInRange(rt.store, {
        from: `${from} 00:00:00.000`,
        to: `${to} 00:00:00.000`,
        series_kind: q.series_kind ?? '',
        measure: q.measure ?? '',
        series_id: q.series_id ?? '',
        limit: q.limit,
      });
      const rows = found.map(({ bucket_utc, evaluated_at, ...f }) => ({ ...f, bucket: iso(bucket_utc), evaluated_at: iso(evaluated_at) }));
      const table = { columns: [...COLUMNS], rows: rows.map((r) => Object.fromEntries(COLUMNS.map((c) => [c, r[c]]))) };
      return sendTable(reply, request, q.format, table, () => ({ from, to, rows }), 'anomalies.csv');
    },
  });
}
