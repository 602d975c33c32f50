/**
 * The MCP server over Tallyhouse's data (read-only). Every tool answers by asking the query API's own route in
 * process (`ApiGet`: fastify's inject, no socket), so a tool's figures, its validation, the read-only store user and
 * the per-query limits are the route's, never a copy (CONTRIBUTING.md rule 20): an assistant and a dashboard
 * asking the same question get the same answer. A tool adds only its own input schema (named arguments, checked
 * before anything runs), a cap on rows per answer (MCP_MAX_ROWS: over it, a tool error, never a cut figure) and a
 * one-line summary next to the structured result.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

export type QueryValue = string | number | string[] | undefined;

/** One GET of the query API (path under /api/v1, query parameters); resolves with the status and the JSON body. */
export type ApiGet = (path: string, query?: Record<string, QueryValue>) => Promise<{ status: number; body: unknown }>;

export interface PipelineHealth {
  jobs: Array<{ job: string; last_run: Record<string, unknown> | null; last_success_at: string | null; lag_seconds: number | null }>;
  drain: Record<string, unknown>;
}

export interface McpOptions {
  api: ApiGet;
  /** Rows (or lines, items) one answer may hold; over it the tool answers an error naming how to narrow it. */
  maxRows: number;
  timezones: readonly string[];
  /** The currencies of the collected usage, and the budget currency. */
  currencies: () => Promise<string[]>;
  dashboards: ReadonlyArray<{ uid: string; title: string; file: string }>;
  pipelineHealth: () => Promise<PipelineHealth>;
  /**
   * One request's status, duration, billable units, cost and oldest log lines, as GET /sessions/{id} reports each
   * request it mentions (the same function), looked up among requests that ended in [from, to).
   */
  requestDetail: (requestId: string, window: { from: string; to: string }) => Promise<Record<string, unknown>>;
  /** The Faro sessions whose items mention a request id, earliest first (a few at most). */
  sessionsMentioning: (requestId: string) => Promise<string[]>;
  version: string;
  /**
   * What one HTTP request's answers may still hold, in bytes (MCP_MAX_RESPONSE_BYTES over all the calls of a
   * batch); a tool answer beyond it is a tool error naming the limit, never a cut answer. None: no limit (stdio).
   */
  answerBytes?: { left: number; readonly limit: number };
}

/** The error of a tool call: isError with one line, so the assistant reads what to change. */
function toolError(message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: message }] };
}

class ToolFailure extends Error {}

interface ApiErrorBody {
  error?: { type?: string; message?: string; parameter?: string };
}

/** The route's answer, or a ToolFailure carrying its error in words (a 400 names the argument it was about). */
async function ask(opts: McpOptions, path: string, query: Record<string, QueryValue> = {}): Promise<Record<string, unknown>> {
  const { status, body } = await opts.api(path, { ...query, format: path.startsWith('/sessions/') ? undefined : 'json' });
  if (status === 200) return body as Record<string, unknown>;
  const e = (body as ApiErrorBody)?.error ?? {};
  if (status === 400) throw new ToolFailure(`invalid argument ${e.parameter ?? ''}: ${e.message ?? 'rejected'}`.replace('  ', ' '));
  if (status === 404) throw new ToolFailure(`nothing found: ${e.message ?? path}`);
  if (status === 422) throw new ToolFailure(`over the query limits (no partial answer is given): ${e.message ?? ''}; narrow the range or the filters`);
  throw new ToolFailure(`the query API answered ${status}: ${e.message ?? 'error'}`);
}

function capRows(opts: McpOptions, what: string, count: number, narrow: string): void {
  if (count > opts.maxRows) {
    throw new ToolFailure(`the answer has ${count} ${what}, over the ${opts.maxRows} one answer may hold (MCP_MAX_ROWS); no partial figure is given: ${narrow}`);
  }
}

const answer = (structured: Record<string, unknown>, summary: string): CallToolResult => ({
  structuredContent: structured,
  content: [{ type: 'text', text: summary }],
});

async function run(opts: McpOptions, fn: () => Promise<CallToolResult>): Promise<CallToolResult> {
  let result: CallToolResult;
  try {
    result = await fn();
  } catch (err) {
    if (err instanceof ToolFailure) return toolError(err.message);
    throw err;
  }
  const budget = opts.answerBytes;
  if (budget) {
    const bytes = Buffer.byteLength(JSON.stringify(result));
    if (bytes > budget.left) {
      return toolError(
        `the answer is ${bytes} bytes, over the ${budget.left} bytes this request may still carry (MCP_MAX_RESPONSE_BYTES, ${budget.limit} per request); no partial answer is given: narrow the question, or ask it in a request of its own`,
      );
    }
    budget.left -= bytes;
  }
  return result;
}

const month = () => z.string().regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'expected a month YYYY-MM');
const date = (what: string) => z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'expected a date YYYY-MM-DD').describe(what);
const instant = (what: string) =>
  z.string().regex(/^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/, 'expected a date YYYY-MM-DD or an ISO 8601 date-time').describe(what);
const ids = (what: string) => z.array(z.string().min(1).max(200)).max(100, 'expected at most 100').optional().describe(what);
const Rows = z.array(z.record(z.string(), z.unknown()));
const open = <T extends z.ZodRawShape>(shape: T) => z.looseObject(shape);

/** Money per currency over rows (exact decimal text, summed as scaled integers): for the summary line only. */
function totalsByCurrency(rows: Array<Record<string, unknown>>, column: string): string {
  const sums = new Map<string, { units: bigint; scale: number }>();
  for (const r of rows) {
    const v = r[column];
    if (typeof v !== 'string' || !/^-?\d+(\.\d+)?$/.test(v)) continue;
    const currency = String(r.currency ?? '');
    const scale = Math.max(sums.get(currency)?.scale ?? 0, (v.split('.')[1] ?? '').length);
    const prev = sums.get(currency) ?? { units: 0n, scale };
    const rescale = (units: bigint, from: number) => units * 10n ** BigInt(scale - from);
    const [i, f = ''] = v.replace('-', '').split('.');
    const units = BigInt(i + f.padEnd(scale, '0')) * (v.startsWith('-') ? -1n : 1n);
    sums.set(currency, { units: rescale(prev.units, prev.scale) + units, scale });
  }
  return [...sums].map(([currency, { units, scale }]) => {
    const neg = units < 0n;
    const s = (neg ? -units : units).toString().padStart(scale + 1, '0');
    return `${neg ? '-' : ''}${scale ? `${s.slice(0, -scale)}.${s.slice(-scale)}` : s} ${currency}`.trim();
  }).join(', ') || 'nothing';
}

export function createMcpServer(opts: McpOptions): McpServer {
  const server = new McpServer({ name: 'tallyhouse', version: opts.version }, { capabilities: { tools: {}, resources: {}, prompts: {} } });
  const readOnly = { readOnlyHint: true, openWorldHint: false } as const;

  server.registerTool(
    'cost_breakdown',
    {
      title: 'Cost breakdown',
      description:
        'Cost of serverless usage (group by app, environment, machine_type, surge) or model APIs (group by endpoint, api_key, unit) per local day range, from GET /api/v1/cost. Money is exact decimal text in the currency of its row.',
      inputSchema: {
        from: date('first local day, inclusive'),
        to: date('last local day, exclusive'),
        timezone: z.string().max(64).default('UTC').describe('one of the collected timezones (resource tallyhouse://timezones)'),
        product: z.enum(['serverless', 'model_api']).default('serverless'),
        group_by: z.array(z.string().max(40)).max(8).default([]).describe('serverless: app, environment, machine_type, surge, day...; model_api: endpoint, api_key, unit, day...'),
        app: ids('serverless: only these apps'),
        endpoint: ids('model_api: only these model endpoints'),
        search: z.string().max(200).optional().describe('case-insensitive substring of the app or endpoint'),
      },
      outputSchema: open({ timezone: z.string(), from: z.string(), to: z.string(), product: z.string(), group_by: z.array(z.string()), rows: Rows }),
      annotations: readOnly,
    },
    (a) =>
      run(opts, async () => {
        const body = await ask(opts, '/cost', { ...a, group_by: a.group_by.length ? a.group_by : undefined });
        const rows = body.rows as Array<Record<string, unknown>>;
        capRows(opts, 'rows', rows.length, 'group by fewer dimensions, filter apps or endpoints, or shorten the range');
        return answer(body, `${a.product} cost ${a.from}..${a.to} (${a.timezone}): ${totalsByCurrency(rows, 'cost')} over ${rows.length} row(s)`);
      }),
  );

  server.registerTool(
    'cost_changes',
    {
      title: 'Why the bill changed',
      description:
        'Per group and currency: the cost of a baseline and a current period and the difference split into volume, price, discount, new and gone (GET /api/v1/cost/changes; the parts add up to the difference exactly). Top movers first; totals per currency cover every group.',
      inputSchema: {
        from: date('current period: first local day, inclusive'),
        to: date('current period: last local day, exclusive'),
        baseline_from: date('baseline: first local day (default: the period of the same length just before from)').optional(),
        baseline_to: date('baseline: last local day, exclusive (default: from)').optional(),
        timezone: z.string().max(64).default('UTC'),
        product: z.enum(['all', 'serverless', 'model_api']).default('all'),
        group_by: z.array(z.string().max(40)).max(8).default([]).describe('serverless: app, environment, machine_type, surge; model_api: endpoint, api_key, unit (default app,endpoint)'),
        limit: z.number().int().min(1).max(1000).default(20).describe('the top movers answered (totals always cover every group)'),
      },
      outputSchema: open({ from: z.string(), to: z.string(), baseline_from: z.string(), baseline_to: z.string(), groups: Rows, totals: Rows }),
      annotations: readOnly,
    },
    (a) =>
      run(opts, async () => {
        capRows(opts, 'groups', a.limit, 'ask for fewer top movers (limit)');
        const body = await ask(opts, '/cost/changes', { ...a, group_by: a.group_by.length ? a.group_by.join(',') : undefined });
        const totals = body.totals as Array<Record<string, unknown>>;
        const moved = totals.map((t) => `${t.difference} ${t.currency} (volume ${t.volume}, price ${t.price}, discount ${t.discount}, new ${t.new}, gone ${t.gone})`).join('; ');
        return answer(body, `cost ${body.baseline_from}..${body.baseline_to} -> ${a.from}..${a.to}: ${moved || 'no cost in either period'}`);
      }),
  );

  server.registerTool(
    'anomalies',
    {
      title: 'Anomalies',
      description:
        "The anomalies job's current findings (GET /api/v1/anomalies): per app, endpoint, model endpoint or API key, a bucket far from the same weekday (and hour) of the four weeks before, with expected range, actual, score and, for cost, the change attribution. Newest first.",
      inputSchema: {
        from: date('first UTC day, inclusive (default: 7 days before to)').optional(),
        to: date('last UTC day, exclusive (default: tomorrow)').optional(),
        series_kind: z.enum(['app', 'endpoint', 'model_endpoint', 'api_key']).optional(),
        measure: z.enum(['cost', 'volume', 'error_rate', 'p95_latency']).optional(),
        series_id: z.string().max(200).optional(),
      },
      outputSchema: open({ from: z.string(), to: z.string(), rows: Rows }),
      annotations: readOnly,
    },
    (a) =>
      run(opts, async () => {
        // One more than the cap is asked for: more findings than an answer holds is an error, never a cut list.
        const body = await ask(opts, '/anomalies', { ...a, limit: opts.maxRows + 1 });
        const rows = body.rows as Array<Record<string, unknown>>;
        capRows(opts, 'findings', rows.length, 'narrow by series_kind, measure, series_id or a shorter range');
        return answer(body, `${rows.length} finding(s) ${body.from}..${body.to}${rows[0] ? `; newest: ${rows[0].summary}` : ''}`);
      }),
  );

  server.registerTool(
    'budget_status',
    {
      title: 'Budget status',
      description:
        'Each configured budget (BUDGETS, BUDGETS_FILE, APP_BUDGETS): spent this month, the month-end forecast with a 90% interval, status ok | at_risk | over, and whether spent is final (GET /api/v1/budgets).',
      inputSchema: {
        month: month().optional().describe('default: the current month'),
        today: date('the day to answer as of (default: today in timezone)').optional(),
        timezone: z.string().max(64).optional().describe('default: the first of TIMEZONES'),
      },
      outputSchema: open({ month: z.string(), timezone: z.string(), today: z.string(), budgets: Rows }),
      annotations: readOnly,
    },
    (a) =>
      run(opts, async () => {
        const body = await ask(opts, '/budgets', a);
        const budgets = body.budgets as Array<Record<string, unknown>>;
        capRows(opts, 'budgets', budgets.length, 'the configured budgets are more than one answer holds: read GET /api/v1/budgets');
        const flagged = budgets.filter((b) => b.status !== 'ok').map((b) => `${b.scope} ${b.name} ${b.status} (spent ${b.spent} of ${b.amount} ${b.currency}, forecast ${b.forecast})`);
        return answer(body, `${budgets.length} budget(s) for ${body.month} as of ${body.today}${flagged.length ? `: ${flagged.join('; ')}` : ', all ok'}`);
      }),
  );

  server.registerTool(
    'recommendations',
    {
      title: 'Recommendations',
      description:
        'Right-sizing (a cheaper machine whose VRAM covers the observed peak, and the month saving), keep-warm idle cost, and raising max_concurrency where requests often fail with runner_scheduling_failure (the platform\'s own advice; evidence: share of requests, last seen, the app\'s current max_concurrency) (GET /api/v1/recommendations).',
      inputSchema: {
        month: month().optional().describe('default: the current month'),
        timezone: z.string().max(64).optional().describe('default: UTC'),
      },
      outputSchema: open({ month: z.string(), timezone: z.string(), hints: Rows }),
      annotations: readOnly,
    },
    (a) =>
      run(opts, async () => {
        const body = await ask(opts, '/recommendations', a);
        const hints = body.hints as Array<Record<string, unknown>>;
        capRows(opts, 'hints', hints.length, 'ask for one month at a time, or read GET /api/v1/recommendations');
        const kinds = new Map<string, number>();
        for (const h of hints) kinds.set(String(h.kind), (kinds.get(String(h.kind)) ?? 0) + 1);
        const concurrency = hints.filter((h) => h.kind === 'raise_max_concurrency').map((h) => `${h.app}: ${h.scheduling_failures} of ${h.requests} requests failed with runner_scheduling_failure, max_concurrency ${h.max_concurrency ?? 'unknown'}`);
        return answer(body, `${hints.length} hint(s) for ${body.month}${kinds.size ? ` (${[...kinds].map(([k, n]) => `${n} ${k}`).join(', ')})` : ''}${concurrency.length ? `; ${concurrency.join('; ')}` : ''}`);
      }),
  );

  server.registerTool(
    'finance_report',
    {
      title: 'Finance report',
      description:
        "A month's cost per app and machine type in a timezone, totals per currency, and the reconciliation with the platform's own monthly summary (GET /api/v1/reports/finance). month_complete is false while the month is not over.",
      inputSchema: {
        month: month(),
        timezone: z.string().max(64).default('UTC'),
      },
      outputSchema: open({ month: z.string(), timezone: z.string(), rows: Rows, totals: z.unknown(), reconciliation: z.unknown() }),
      annotations: readOnly,
    },
    (a) =>
      run(opts, async () => {
        const body = await ask(opts, '/reports/finance', a);
        const rows = body.rows as Array<Record<string, unknown>>;
        capRows(opts, 'rows', rows.length, 'the month has more app and machine-type rows than one answer holds: use GET /api/v1/reports/finance?format=csv');
        const totals = (body.totals as Array<Record<string, unknown>> | undefined) ?? [];
        const final = body.month_final === undefined ? '' : body.month_final ? '; final (no figure can change)' : '; provisional (some days can still change)';
        return answer(body, `finance ${a.month} (${a.timezone}): ${totalsByCurrency(totals, 'total')}; ${rows.length} app/machine row(s)${final}`);
      }),
  );

  server.registerTool(
    'session',
    {
      title: 'Front-end session',
      description:
        'A Faro front-end session: its items in time order and each platform request it mentions with status, duration, billable units, cost and log lines (GET /api/v1/sessions/{session_id}).',
      inputSchema: { session_id: z.string().min(1).max(200) },
      outputSchema: open({ session_id: z.string(), items: Rows, requests: Rows }),
      annotations: readOnly,
    },
    (a) =>
      run(opts, async () => {
        const body = await ask(opts, `/sessions/${encodeURIComponent(a.session_id)}`);
        const items = body.items as unknown[];
        const requests = body.requests as Array<Record<string, unknown>>;
        capRows(opts, 'items', items.length, 'the session is longer than one answer holds: read GET /api/v1/sessions/{id}');
        return answer(body, `session ${a.session_id}: ${items.length} item(s), ${requests.length} request(s) costing ${totalsByCurrency(requests, 'cost')}`);
      }),
  );

  server.registerTool(
    'request_trace',
    {
      title: 'Trace one request',
      description:
        'One platform request by id: the Faro session that mentions it, its status, duration, billable units and cost (as GET /api/v1/sessions/{id} reports them; without a session, looked up among requests that ended in the searched range, a day either side), its queue webhook delivery beside the cost (status, deliveries received, last error), and its log lines (GET /api/v1/logs?request_id=, newest first).',
      inputSchema: {
        request_id: z.string().min(1).max(200),
        from: instant('start of the log search, inclusive (default: 24 hours before to)').optional(),
        to: instant('end of the log search, exclusive (default: now)').optional(),
        log_limit: z.number().int().min(1).max(1000).default(100).describe('log lines at most'),
      },
      outputSchema: open({ request_id: z.string(), session_id: z.string().nullable(), request: z.record(z.string(), z.unknown()), log_lines: Rows, log_lines_more: z.boolean() }),
      annotations: readOnly,
    },
    (a) =>
      run(opts, async () => {
        capRows(opts, 'log lines', a.log_limit, 'ask for fewer log lines (log_limit)');
        const sessionIds = await opts.sessionsMentioning(a.request_id);
        const sessionId = sessionIds[0] ?? null;
        const session = sessionId ? await ask(opts, `/sessions/${encodeURIComponent(sessionId)}`) : null;
        const logs = await ask(opts, '/logs', { request_id: a.request_id, from: a.from, to: a.to, limit: a.log_limit });
        // The session's own entry when it has one; else (no session, or beyond the requests a session answers with)
        // the same lookup over the searched range, a day either side (a request ends near where it is looked for).
        let request = (session?.requests as Array<Record<string, unknown>> | undefined)?.find((r) => r.request_id === a.request_id) ?? null;
        const window = { from: String(logs.from), to: String(logs.to) };
        if (!request) request = await opts.requestDetail(a.request_id, window);
        const lines = logs.lines as Array<Record<string, unknown>>;
        const structured = {
          request_id: a.request_id,
          session_id: sessionId,
          other_sessions: sessionIds.slice(1),
          request,
          log_lines: lines,
          log_lines_more: Boolean(logs.has_more),
        };
        const hook = request.webhook as { status: string; attempts: number; last_error: string | null } | null | undefined;
        const hookText = hook ? `webhook ${hook.status || 'without status'} after ${hook.attempts} delivery(ies)${hook.last_error ? ` (${hook.last_error})` : ''}` : 'no webhook delivery stored';
        const what = request.found
          ? `status ${request.status_code ?? 'unknown'}, ${request.billable_units ?? '?'} billable units, cost ${`${request.cost ?? 'not priced'} ${request.currency ?? ''}`.trim()}; ${hookText}`
          : `not found among the requests collected that ended between ${window.from} and ${window.to} (a day either side); ${hookText}`;
        return answer(structured, `request ${a.request_id}: ${what}; session ${sessionId ?? 'none (no stored Faro session mentions it)'}; ${lines.length} log line(s)`);
      }),
  );

  server.registerTool(
    'search_logs',
    {
      title: 'Search logs',
      description: 'Drained log lines by app, minimum level, request id, text and time range, newest first, one page (GET /api/v1/logs); next_cursor continues.',
      inputSchema: {
        app: ids('only these apps'),
        level: z.enum(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL']).optional().describe('minimum level'),
        request_id: z.string().max(200).optional(),
        contains: z.string().min(1).max(500).optional().describe('case-insensitive text the message contains'),
        from: instant('start, inclusive (default: 24 hours before to)').optional(),
        to: instant('end, exclusive (default: now)').optional(),
        limit: z.number().int().min(1).max(1000).default(100),
        cursor: z.string().max(500).optional().describe('next_cursor of the previous answer'),
      },
      outputSchema: open({ from: z.string(), to: z.string(), lines: Rows, next_cursor: z.string().nullable(), has_more: z.boolean() }),
      annotations: readOnly,
    },
    (a) =>
      run(opts, async () => {
        capRows(opts, 'lines', a.limit, 'ask for fewer lines (limit) and page with cursor');
        const body = await ask(opts, '/logs', a);
        const lines = body.lines as unknown[];
        return answer(body, `${lines.length} log line(s)${body.has_more ? ', more follow (next_cursor)' : ''}`);
      }),
  );

  server.registerTool(
    'latency_errors',
    {
      title: 'Latency and errors',
      description:
        'Per endpoint and bucket: duration, prepare-time and cold-boot percentiles as the platform computed them (GET /api/v1/latency), and outcomes with error-type counts (GET /api/v1/errors).',
      inputSchema: {
        from: instant('start, inclusive'),
        to: instant('end, exclusive'),
        timezone: z.string().max(64).default('UTC'),
        timeframe: z.enum(['minute', 'hour', 'day']).optional(),
        endpoint_id: ids('only these endpoint ids'),
        kind: z.enum(['serverless', 'models']).default('serverless'),
      },
      outputSchema: open({ latency: Rows, errors: Rows, webhook_errors: z.unknown() }),
      annotations: readOnly,
    },
    (a) =>
      run(opts, async () => {
        const latency = await ask(opts, '/latency', a);
        const errors = await ask(opts, '/errors', a);
        const l = latency.rows as Array<Record<string, unknown>>;
        const e = errors.rows as Array<Record<string, unknown>>;
        capRows(opts, 'rows', l.length + e.length, 'shorten the range, use a larger timeframe or fewer endpoints');
        const failed = e.reduce((s, r) => s + Number(r.error_count ?? 0), 0);
        return answer(
          { from: latency.from, to: latency.to, timezone: latency.timezone, timeframe: latency.timeframe, kind: a.kind, latency: l, errors: e, webhook_errors: errors.webhook_errors },
          `${l.length} latency and ${e.length} outcome bucket(s); ${failed} error(s) counted`,
        );
      }),
  );

  server.registerTool(
    'runner_history',
    {
      title: 'Runner history',
      description: 'Runner counts by state (running, idle, pending, draining) per app and bucket (GET /api/v1/runners).',
      inputSchema: {
        from: instant('start, inclusive'),
        to: instant('end, exclusive'),
        timezone: z.string().max(64).default('UTC'),
        timeframe: z.enum(['minute', 'hour', 'day']).optional(),
        endpoint_id: ids('only these endpoint ids'),
        aggregation: z.enum(['max', 'avg']).default('max'),
      },
      outputSchema: open({ rows: Rows }),
      annotations: readOnly,
    },
    (a) =>
      run(opts, async () => {
        const body = await ask(opts, '/runners', a);
        const rows = body.rows as unknown[];
        capRows(opts, 'rows', rows.length, 'shorten the range, use a larger timeframe or fewer endpoints');
        return answer(body, `${rows.length} runner bucket(s)`);
      }),
  );

  server.registerTool(
    'pipeline_health',
    {
      title: 'Pipeline health',
      description: "Each job's last run and how long since its last success, the log drain's spool depth and state: whether the figures are up to date.",
      inputSchema: {},
      outputSchema: open({ jobs: Rows, drain: z.record(z.string(), z.unknown()) }),
      annotations: readOnly,
    },
    () =>
      run(opts, async () => {
        const health = await opts.pipelineHealth();
        const failing = health.jobs.filter((j) => j.last_run?.status === 'failed').map((j) => j.job);
        return answer(health as unknown as Record<string, unknown>, `${health.jobs.length} job(s)${failing.length ? `, last run failed: ${failing.join(', ')}` : ''}`);
      }),
  );

  server.registerResource('openapi', 'tallyhouse://openapi.json', { title: 'Query API OpenAPI document', mimeType: 'application/json' }, async (uri) => {
    const { body } = await opts.api('/openapi.json');
    return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(body) }] };
  });
  server.registerResource('dashboards', 'tallyhouse://dashboards', { title: 'Grafana dashboards', mimeType: 'application/json' }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ dashboards: opts.dashboards }) }],
  }));
  server.registerResource('timezones', 'tallyhouse://timezones', { title: 'Configured timezones (TIMEZONES)', mimeType: 'application/json' }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ timezones: opts.timezones }) }],
  }));
  server.registerResource('currencies', 'tallyhouse://currencies', { title: 'Currencies', mimeType: 'application/json' }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ currencies: await opts.currencies() }) }],
  }));

  server.registerPrompt(
    'explain_month_bill',
    { title: "Explain this month's bill", description: 'Walk through a month: totals, the largest apps, reconciliation with the platform, what is not final yet.', argsSchema: { month: month(), timezone: z.string().optional() } },
    ({ month, timezone }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'text',
            text: `Explain Tallyhouse's bill for ${month}${timezone ? ` in ${timezone}` : ''}. Call finance_report for the month, then cost_breakdown grouped by app for the month's days, and say: the total per currency, the apps that make most of it, whether the reconciliation with the platform's summary matches (and by how much it differs when it does not), and whether the month is complete. Quote figures exactly as the tools give them.`,
          },
        },
      ],
    }),
  );
  server.registerPrompt(
    'investigate_request',
    { title: 'Investigate this request', description: 'Follow one request from the browser session to the bill.', argsSchema: { request_id: z.string().min(1).max(200) } },
    ({ request_id }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'text',
            text: `Investigate request ${request_id}. Call request_trace, then session for its session if there is one. Say what the user was doing, the request's status and duration, what it cost (billable units and price), what its log lines show, and whether the endpoint's errors or latency at that time (latency_errors) suggest a wider problem.`,
          },
        },
      ],
    }),
  );
  return server;
}
