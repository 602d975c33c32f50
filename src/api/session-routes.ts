// Front-end sessions (Faro items) joined with the platform requests they mention and those requests' cost:
// GET /sessions/:session_id and GET /sessions (ranked by cost, then errors).
import type { FastifyInstance } from 'fastify';
import { DateTime } from 'luxon';
import { z } from 'zod';
import type { Runtime } from '../runtime.js';
import { ApiError, badParameter, checkRangeDays } from './http.js';
import type { RouteRegistry } from './routes.js';
import { SessionResponse, SessionsResponse } from './responses.js';
import { modelRequestCosts, requestsByIds, sessionItems, sessionRanking, sessionRequestLogs } from '../store/tables/faro-items.js';
import { webhookOutcomes } from '../store/tables/webhook-deliveries.js';

/** Request ids one lookup query holds (a session's are looked up in chunks of this many). */
const IDS_PER_QUERY = 500;
/** A log line's message is cut here in a session's answer (GET /logs has it whole). */
const MAX_LINE_CHARS = 16_384;
const timeParam = (what: string) =>
  z
    .string()
    .max(40, `expected an ISO 8601 date-time (${what})`)
    .refine((v) => DateTime.fromISO(v, { zone: 'utc' }).isValid && /^\d{4}-/.test(v), `expected an ISO 8601 date-time (${what})`)
    .transform((v) => DateTime.fromISO(v, { zone: 'utc' }).toUTC());
const sql = (d: DateTime) => d.toFormat('yyyy-MM-dd HH:mm:ss.SSS');

/** 2xx success, 4xx the caller's error, 5xx the platform's (as the analytics count them). */
const outcome = (status: number) => (status >= 500 ? 'error' : status >= 400 ? 'user_error' : 'success');

/**
 * Each request's status, duration, billable units, cost (serverless or model API) and oldest log lines, by id: what
 * GET /sessions/:id answers per mentioned request, and what the MCP request_trace tool answers for one request.
 * Serverless requests are looked up among those that ended in [window.from, window.to) (bounding the scan).
 */
export async function requestDetails(rt: Runtime, ids: string[], window: { from: DateTime; to: DateTime }) {
  const perRequest = rt.config.API_SESSION_MAX_LOG_LINES;
  // Four queries per chunk of ids (one per request made a 5,000-request session take 38 s); chunks one after
  // another, so the engine is never held long by one of them and a person's /cost goes between (read lanes).
  const serverless: Awaited<ReturnType<typeof requestsByIds>> = [];
  const model: Awaited<ReturnType<typeof modelRequestCosts>> = [];
  const lines: Awaited<ReturnType<typeof sessionRequestLogs>> = [];
  const hooks: Awaited<ReturnType<typeof webhookOutcomes>> = [];
  for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
    const chunk = ids.slice(i, i + IDS_PER_QUERY);
    const [s, m, l, w] = await Promise.all([
      requestsByIds(rt.store, { ids: chunk, endpoint_ids: [], from: sql(window.from), to: sql(window.to) }),
      modelRequestCosts(rt.store, { ids: chunk }),
      sessionRequestLogs(rt.store, { ids: chunk, per_request: perRequest + 1, max_chars: MAX_LINE_CHARS }),
      webhookOutcomes(rt.store, { ids: chunk }),
    ]);
    serverless.push(...s);
    model.push(...m);
    lines.push(...l);
    hooks.push(...w);
  }
  const hookById = new Map(hooks.map((w) => [w.request_id, w]));
  const serverlessById = new Map(serverless.map((r) => [r.request_id, r]));
  const modelById = new Map(model.map((m) => [m.request_id, m]));
  const linesById = new Map<string, typeof lines>();
  for (const l of lines) linesById.set(l.request_id, [...(linesById.get(l.request_id) ?? []), l]);
  return ids.map((id) => {
    const s = serverlessById.get(id);
    const m = modelById.get(id);
    const logs = linesById.get(id) ?? [];
    return {
      request_id: id,
      found: s !== undefined || m !== undefined,
      endpoint_id: s?.endpoint_id ?? m?.endpoint_id ?? null,
      product: s ? 'serverless' : m ? 'model_api' : null,
      ended_at: s?.ended_at ?? null,
      status_code: s?.status_code ?? null,
      outcome: s ? outcome(s.status_code) : null,
      duration: s?.duration ?? null,
      billable_units: s?.billable_units ?? m?.output_units ?? null,
      cost: s?.cost ?? m?.cost ?? null,
      currency: s?.currency ?? m?.currency ?? null,
      log_lines: logs.slice(0, perRequest).map((l) => ({ timestamp: l.line_time, level: l.level, message: l.line_message, message_truncated: l.message_truncated })),
      log_lines_truncated: logs.length > perRequest,
      webhook: webhookOf(hookById.get(id)),
    };
  });
}

/** A request's queue webhook as the receiver stored it (issue 50.8); null when no delivery is stored. */
function webhookOf(w: Awaited<ReturnType<typeof webhookOutcomes>>[number] | undefined) {
  if (!w) return null;
  return {
    status: w.status,
    attempts: w.attempts,
    // The delivery body's `error` (the request's failure), else its `payload_error` (a result that could not be sent).
    last_error: w.error || w.payload_error || null,
    error_types: w.error_types,
    first_received_at: isoUtc(w.first_received_at),
    last_received_at: isoUtc(w.last_received_at),
  };
}

export function sessionRoutes(app: FastifyInstance, registry: RouteRegistry, rt: Runtime): void {
  registry.get(app, {
    path: '/sessions/:session_id',
    operationId: 'getSession',
    errors: { 404: 'No Faro item of this session is stored' },
    heavy: true,
    response: SessionResponse,
    summary: "A front-end session: its Faro items in time order, and each platform request it mentions with status, duration, billable units, cost and log lines",
    description:
      'Bounded whatever is stored: the first API_SESSION_MAX_ITEMS items, the first API_SESSION_MAX_REQUESTS requests they mention, the oldest API_SESSION_MAX_LOG_LINES log lines of each (messages cut at 16,384 characters); `truncated`, `log_lines_truncated` and `message_truncated` say what was left out (GET /logs?request_id= has every line).',
    params: z.strictObject({ session_id: z.string().min(1).max(200, 'expected at most 200 characters') }),
    query: z.strictObject({}),
    handler: async (_q, request) => {
      const { session_id } = request.params as { session_id: string };
      // Bounded whatever is stored (CONTRIBUTING.md rule 21): one more than the cap is read to tell that there were more.
      const maxItems = rt.config.API_SESSION_MAX_ITEMS;
      const read = await sessionItems(rt.store, { session_id, limit: maxItems + 1 });
      if (read.length === 0) throw new ApiError(404, 'no_data', `no Faro items of session ${JSON.stringify(session_id)} are stored`);
      const items = read.slice(0, maxItems);
      const mentioned = [...new Set(items.map((i) => i.request_id).filter(Boolean))];
      const ids = mentioned.slice(0, rt.config.API_SESSION_MAX_REQUESTS);
      const first = DateTime.fromSQL(items[0].timestamp, { zone: 'utc' });
      const last = DateTime.fromSQL(items[items.length - 1].timestamp, { zone: 'utc' });
      // A request ends near the items that mention it: a day either side bounds the scan.
      const requests = await requestDetails(rt, ids, { from: first.minus({ days: 1 }), to: last.plus({ days: 1 }) });
      return {
        session_id,
        items: items.map((i) => isoTimes(i)),
        requests: requests.map((r) => ({ ...r, ended_at: isoUtc(r.ended_at), log_lines: r.log_lines.map((l) => ({ ...l, timestamp: isoUtc(l.timestamp) })) })),
        request_ids_total: mentioned.length,
        truncated: { items: read.length > maxItems, requests: mentioned.length > ids.length },
      };
    },
  });

  registry.get(app, {
    path: '/sessions',
    operationId: 'listSessions',
    response: SessionsResponse,
    summary: 'Front-end sessions in a time range, ranked by the cost of the platform requests they mention, then by errors',
    query: z.strictObject({
      app: z.string().max(200).default('').describe('only sessions of this front-end app (FARO_APP_KEYS name)'),
      from: timeParam('start, inclusive').optional().describe('default: 24 hours before to'),
      to: timeParam('end, exclusive').optional().describe('default: now'),
      limit: z.coerce.number().int().min(1, 'expected a number 1..1000').max(1000, 'expected at most 1000').default(100),
    }),
    handler: async (q) => {
      const to = q.to ?? DateTime.utc();
      const from = q.from ?? to.minus({ hours: 24 });
      if (to <= from) throw badParameter('to', 'expected an end after from (to is exclusive)');
      checkRangeDays(to.diff(from, 'days').days, rt.config.API_MAX_RANGE_DAYS, 'API_MAX_RANGE_DAYS');
      const sessions = await sessionRanking(rt.store, { app: q.app, from: sql(from), to: sql(to), limit: q.limit, endpoint_ids: [] });
      return { from: from.toISO(), to: to.toISO(), sessions: sessions.map((x) => isoTimes(x)) };
    },
  });
}

/** Issue 30.14: the store's "2026-11-26 05:01:59.631" (UTC) as the ISO 8601 with Z the rest of the API answers. */
const SQL_TIME = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?$/;
function isoUtc<T>(value: T): T | string {
  return typeof value === 'string' && SQL_TIME.test(value) ? DateTime.fromSQL(value, { zone: 'utc' }).toISO()! : value;
}
function isoTimes<T extends object>(row: T): T {
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, isoUtc(v)])) as T;
}
