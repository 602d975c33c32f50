// The simulator's HTTP server: node:http (not fastify) because the faults need raw control of the socket
// (reset mid-body, truncated bodies, answers slower than a client's timeout).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { SimModel } from './model.js';
import { Handlers, json, type Reply } from './handlers.js';
import { ApiError, bad, Params } from './http-util.js';
import type { FaultKind, FaultPlan } from './faults.js';
import { hex, mix } from './prng.js';
import { renderMetrics, simMemory } from './metrics.js';
import { renderRunnerMetrics, runnerMetricsAt } from './runner-metrics.js';
import type { Webhooks } from './webhooks.js';
import type { Truth } from './truth.js';
import { toJson } from './money.js';
import { TIMEFRAMES, type Timeframe } from './time.js';
import type { Logger } from '../log.js';
import { LogStreams } from './log-stream.js';
import { scenarioTruth } from './scenario.js';

type Scope = 'none' | 'api' | 'admin';

export interface ServerDeps {
  model: SimModel;
  keys: { api: string; admin: string };
  faults: FaultPlan;
  slowMs: number;
  retryAfterSeconds: number;
  webhooks: Webhooks;
  truth: Truth;
  stats: { requestsServed: number; recordsServed: number; faultsInjected: Record<string, number> };
  requestLog: RequestLog;
  /** Add the simulator's own memory to /metrics (standalone only: it differs between runs). */
  selfMetrics: boolean;
  log: Logger;
  /** Hook for /_sim/faults so tests can change the fault rate of a running sim. */
  configureFaults(rate: number, kinds?: FaultKind[]): void;
  /**
   * A lying platform (issue 49.2): paths matching `endless` are answered 200 with a body that never ends (written
   * as fast as the client reads, until it hangs up). Set through Sim.setEndless or /_sim/faults {"endless": regex}.
   */
  lying: { endless: RegExp | null; refusedExpand: Set<string> };
  /** Serve exactly the interface (sim --strict-interface): the notes-only routes answer 404. */
  strictInterface: boolean;
}

/** The path of the live log stream: answered as Server-Sent Events, outside the JSON reply path. */
const LOG_STREAM_PATH = '/v1/serverless/logs/stream';

interface Route {
  method: 'GET' | 'POST';
  pattern: RegExp;
  scope: Scope;
  faultable: boolean;
  /** Only platform-notes.md names it (rule 3: "optional"): absent from a strict-interface simulator. */
  notesOnly?: boolean;
  handle(ctx: { params: Params; match: RegExpExecArray; body: unknown; nowMs: number }): Reply | Promise<Reply>;
}

export interface LoggedCall {
  method: string;
  path: string;
  query: Record<string, string | string[]>;
}

/**
 * The platform calls served, for tests to inspect: kept as raw request lines (parsed when read), the first
 * `limit` of them only, so a long-running simulator stops adding (0: keep none).
 */
export class RequestLog {
  private readonly lines: string[] = [];
  constructor(private readonly limit: number) {}

  add(method: string, path: string, query: string): void {
    if (this.lines.length < this.limit) this.lines.push(`${method} ${path}?${query}`);
  }

  entries(): LoggedCall[] {
    return this.lines.map((line) => {
      const space = line.indexOf(' ');
      const mark = line.indexOf('?', space);
      return { method: line.slice(0, space), path: line.slice(space + 1, mark), query: new Params(line.slice(mark + 1)).toRecord() };
    });
  }

  get size(): number {
    return this.lines.length;
  }
}

export function createSimServer(deps: ServerDeps): { server: Server; pendingTimers: Set<NodeJS.Timeout>; logStreams: LogStreams } {
  const { model } = deps;
  const h = new Handlers(model, deps.strictInterface);
  const logStreams = new LogStreams(model, h);
  const pendingTimers = new Set<NodeJS.Timeout>();
  const seg = '([A-Za-z0-9._-]+)';
  const allRoutes: Route[] = [
    { method: 'GET', pattern: /^\/v1\/meta$/, scope: 'none', faultable: true, handle: () => h.meta() },
    { method: 'GET', pattern: /^\/\.well-known\/jwks\.json$/, scope: 'none', faultable: false, handle: () => json(deps.webhooks.jwks()) },
    { method: 'GET', pattern: /^\/v1\/models$/, scope: 'api', faultable: true, handle: (c) => h.models(c.params, c.nowMs) },
    { method: 'GET', pattern: /^\/v1\/models\/analytics$/, scope: 'api', faultable: true, handle: (c) => analyticsReply(c.params, c.nowMs, 'models') },
    { method: 'GET', pattern: /^\/v1\/models\/usage$/, scope: 'admin', faultable: true, handle: (c) => h.modelsUsage(c.params, c.nowMs) },
    { method: 'GET', pattern: /^\/v1\/models\/pricing$/, scope: 'api', faultable: true, notesOnly: true, handle: (c) => h.modelsPricing(c.params, c.nowMs) },
    { method: 'GET', pattern: /^\/v1\/models\/billing-events$/, scope: 'admin', faultable: true, notesOnly: true, handle: (c) => h.modelsBillingEvents(c.params, c.nowMs) },
    { method: 'GET', pattern: /^\/v1\/serverless\/usage$/, scope: 'admin', faultable: true, handle: (c) => h.usage(c.params, c.nowMs) },
    { method: 'GET', pattern: /^\/v1\/serverless\/requests\/by-endpoint$/, scope: 'api', faultable: true, handle: (c) => h.requestsByEndpoint(c.params, c.nowMs) },
    { method: 'GET', pattern: /^\/v1\/serverless\/analytics$/, scope: 'api', faultable: true, handle: (c) => analyticsReply(c.params, c.nowMs, 'serverless') },
    { method: 'GET', pattern: /^\/v1\/serverless\/apps$/, scope: 'api', faultable: true, handle: (c) => h.apps(c.params, c.nowMs) },
    { method: 'GET', pattern: new RegExp(`^/v1/serverless/apps/${seg}/${seg}/events$`), scope: 'api', faultable: true, handle: (c) => h.events(c.match[1], c.match[2], c.params, c.nowMs) },
    { method: 'GET', pattern: new RegExp(`^/v1/serverless/apps/${seg}/${seg}/revisions$`), scope: 'api', faultable: true, handle: (c) => h.revisions(c.match[1], c.match[2], c.params, c.nowMs) },
    { method: 'GET', pattern: new RegExp(`^/v1/serverless/apps/${seg}/${seg}/runners/history$`), scope: 'api', faultable: true, handle: (c) => h.runnerHistory(c.match[1], c.match[2], c.params, c.nowMs) },
    { method: 'GET', pattern: new RegExp(`^/v1/serverless/apps/${seg}/${seg}/queue$`), scope: 'api', faultable: true, notesOnly: true, handle: (c) => h.queue(c.match[1], c.match[2], c.nowMs) },
    { method: 'POST', pattern: /^\/v1\/serverless\/logs\/stream$/, scope: 'api', faultable: true, notesOnly: true, handle: () => json({}) },
    { method: 'POST', pattern: /^\/v1\/serverless\/logs\/history$/, scope: 'api', faultable: true, notesOnly: true, handle: (c) => h.logsHistory(c.params, c.body, c.nowMs) },
    { method: 'GET', pattern: /^\/metrics$/, scope: 'api', faultable: true, handle: (c) => metricsReply(c.nowMs) },
    { method: 'GET', pattern: /^\/v1\/serverless\/metrics$/, scope: 'api', faultable: true, notesOnly: true, handle: (c) => metricsReply(c.nowMs) },
    { method: 'GET', pattern: new RegExp(`^/metrics/runners/${seg}$`), scope: 'api', faultable: true, handle: (c) => runnerMetricsReply(c.match[1], c.nowMs) },
    { method: 'GET', pattern: /^\/_sim\/truth$/, scope: 'admin', faultable: false, handle: (c) => truthReply(c.params) },
    { method: 'GET', pattern: /^\/_sim\/clock$/, scope: 'admin', faultable: false, handle: () => json({ now: model.clock.now().toISOString() }) },
    { method: 'POST', pattern: /^\/_sim\/clock$/, scope: 'admin', faultable: false, handle: (c) => clockReply(c.body) },
    { method: 'GET', pattern: /^\/_sim\/stats$/, scope: 'admin', faultable: false, handle: () => json({ ...deps.stats, memory: simMemory(model.caches) }) },
    { method: 'POST', pattern: /^\/_sim\/faults$/, scope: 'admin', faultable: false, handle: (c) => faultsReply(c.body) },
  ];
  const routes = allRoutes.filter((r) => !(deps.strictInterface && r.notesOnly));

  /** A platform that refuses some `expand` values (Sim.setRefusedExpand): 422 validation_error, as a strict check would. */
  function analyticsReply(p: Params, nowMs: number, kind: 'serverless' | 'models'): Reply {
    const refused = (p.list('expand') ?? []).find((e) => deps.lying.refusedExpand.has(e));
    if (refused !== undefined) throw new ApiError(422, 'validation_error', `expand: '${refused}' is not supported`);
    return h.analytics(p, nowMs, kind);
  }

  async function metricsReply(nowMs: number): Promise<Reply> {
    const self = deps.selfMetrics ? simMemory(model.caches) : undefined;
    const { text, contentType } = await renderMetrics(model.world, model.runners, model.requests, nowMs, self);
    return { status: 200, body: text, contentType, records: 0 };
  }

  async function runnerMetricsReply(runnerId: string, nowMs: number): Promise<Reply> {
    const sample = runnerMetricsAt(model.world, model.runners, runnerId, nowMs);
    if (!sample) throw new ApiError(404, 'not_found', `no live runner ${runnerId}`);
    const { text, contentType } = await renderRunnerMetrics(sample);
    return { status: 200, body: text, contentType, records: 0 };
  }

  function clockReply(body: unknown): Reply {
    const b = (body ?? {}) as { now?: unknown; advance_ms?: unknown };
    if (typeof b.now === 'string') {
      if (!Number.isFinite(Date.parse(b.now))) throw bad(`now: expected an ISO 8601 datetime, got '${b.now}'`);
      model.clock.set(b.now);
    } else if (typeof b.advance_ms === 'number' && Number.isFinite(b.advance_ms)) {
      model.clock.advance(b.advance_ms);
    } else throw bad('body: expected {"now": ISO} or {"advance_ms": N}');
    return json({ now: model.clock.now().toISOString() });
  }

  function faultsReply(body: unknown): Reply {
    const b = (body ?? {}) as { rate?: unknown; kinds?: unknown; endless?: unknown };
    if (b.endless !== undefined) {
      if (b.endless !== null && typeof b.endless !== 'string') throw bad('endless: expected a regular expression of paths, or null');
      try {
        deps.lying.endless = b.endless === null ? null : new RegExp(b.endless);
      } catch {
        throw bad('endless: not a valid regular expression');
      }
      if (b.rate === undefined) return json({ endless: b.endless });
    }
    if (typeof b.rate !== 'number' || b.rate < 0 || b.rate > 1) throw bad('rate: expected a number from 0 to 1');
    deps.configureFaults(b.rate, Array.isArray(b.kinds) ? (b.kinds as FaultKind[]) : undefined);
    return json({ rate: b.rate });
  }

  function truthReply(p: Params): Reply {
    const kind = p.one('kind') ?? 'usage';
    const from = p.one('from') ?? '';
    const to = p.one('to') ?? '';
    const timezone = p.one('timezone') ?? 'UTC';
    const tfRaw = p.one('timeframe');
    if (tfRaw && !(TIMEFRAMES as readonly string[]).includes(tfRaw)) throw bad(`timeframe: expected one of ${TIMEFRAMES.join(', ')}`);
    const timeframe = tfRaw as Timeframe | undefined;
    const apps = p.list('app', 10_000);
    const endpointIds = p.list('endpoint_id', 10_000);
    const owner = p.one('owner') ?? '';
    const name = p.one('name') ?? '';
    const need = (...names: Array<[string, string]>): void => {
      for (const [n, v] of names) if (!v) throw bad(`${n}: required for kind=${kind}`);
    };
    let value: unknown;
    try {
      switch (kind) {
        case 'usage': need(['from', from], ['to', to]); value = deps.truth.usage({ from, to, timezone, timeframe, apps }); break;
        case 'usage_summary': need(['from', from], ['to', to]); value = deps.truth.usageSummary({ from, to, timezone, apps }); break;
        case 'requests': need(['from', from], ['to', to]); value = deps.truth.requests({ from, to, timezone, endpointIds }); break;
        case 'request_list': need(['from', from], ['to', to], ['endpoint_id', endpointIds?.[0] ?? '']); value = deps.truth.requestList({ endpointId: endpointIds![0], from, to }); break;
        case 'analytics': case 'models_analytics':
          need(['from', from], ['to', to], ['endpoint_id', endpointIds?.[0] ?? '']);
          value = deps.truth.analytics({ endpointIds: endpointIds!, from, to, timezone, timeframe, kind: kind === 'analytics' ? 'serverless' : 'models' });
          break;
        case 'runner_history': {
          need(['from', from], ['to', to], ['owner', owner], ['name', name]);
          const aggregation = p.one('aggregation') === 'avg' ? 'avg' : 'max';
          value = deps.truth.runnerHistory({ owner, name, from, to, timeframe, aggregation, timezone });
          break;
        }
        case 'runner_states': need(['owner', owner], ['name', name]); value = deps.truth.runnerStates({ owner, name }); break;
        case 'apps': value = deps.truth.apps(); break;
        case 'events': need(['owner', owner], ['name', name]); value = deps.truth.events(owner, name); break;
        case 'revisions': need(['owner', owner], ['name', name]); value = deps.truth.revisions(owner, name); break;
        case 'webhooks': value = deps.truth.webhooksSent(); break;
        case 'drain': value = deps.truth.drainSent(); break;
        case 'scenario': value = scenarioTruth(model.world); break;
        default: throw bad(`kind: expected usage, usage_summary, requests, request_list, analytics, models_analytics, runner_history, runner_states, apps, events, revisions, webhooks, drain or scenario`);
      }
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw bad(err instanceof Error ? err.message : String(err));
    }
    return json(value);
  }

  const errorBody = (type: string, message: string, requestId: string): string => toJson({ error: { type, message, request_id: requestId } });

  function send(res: ServerResponse, status: number, body: string, headers: Record<string, string>): void {
    if (res.destroyed || res.writableEnded) return;
    res.writeHead(status, { 'content-length': String(Buffer.byteLength(body)), ...headers });
    res.end(body);
  }

  /** 200 and a body without end, written whenever the client has read the last piece (backpressure), until it hangs up. */
  function sendEndless(res: ServerResponse, path: string): void {
    const stream = path === LOG_STREAM_PATH;
    const text = path.startsWith('/metrics') || path.endsWith('/metrics');
    res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : text ? 'text/plain; version=0.0.4' : 'application/json' });
    // A stream's event that never ends, an exposition comment that never ends, a JSON string that never ends.
    res.write(stream ? 'data: ' : text ? '# ' : '{"items":["');
    const piece = Buffer.alloc(64 * 1024, 'x');
    const pump = (): void => {
      while (!res.destroyed && res.write(piece));
      if (!res.destroyed) res.once('drain', pump);
    };
    pump();
  }

  async function readBody(req: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }

  function authorize(req: IncomingMessage, scope: Scope): { ok: true } | { ok: false; status: number; message: string } {
    if (scope === 'none') return { ok: true };
    const header = req.headers.authorization;
    if (!header) return { ok: false, status: 401, message: "missing Authorization header; send 'Authorization: Key <API_KEY>'" };
    const m = /^Key\s+(\S+)\s*$/.exec(header);
    if (!m) return { ok: false, status: 401, message: "Authorization header must use the 'Key' prefix: 'Authorization: Key <API_KEY>'" };
    const key = m[1];
    if (key === deps.keys.admin) return { ok: true };
    if (key === deps.keys.api) {
      if (scope === 'admin') return { ok: false, status: 403, message: 'this endpoint needs an ADMIN-scope key; the key given has API scope' };
      return { ok: true };
    }
    return { ok: false, status: 401, message: 'invalid or revoked API key' };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.sendDate = false; // responses must be byte-identical across runs
    deps.stats.requestsServed++;
    const url = req.url ?? '/';
    const qi = url.indexOf('?');
    const path = qi < 0 ? url : url.slice(0, qi);
    const params = new Params(qi < 0 ? '' : url.slice(qi + 1));
    const method = (req.method ?? 'GET').toUpperCase();
    if (!path.startsWith('/_sim/')) deps.requestLog.add(method, path, qi < 0 ? '' : url.slice(qi + 1));
    let rawBody = '';
    if (method === 'POST' || method === 'PUT') rawBody = await readBody(req);
    const faultKey = `${method} ${path}?${params.canonical()}${rawBody ? '#' + rawBody : ''}`;
    const route = routes.find((r) => r.method === method && r.pattern.test(path)) ?? routes.find((r) => r.pattern.test(path));
    const decision = route?.faultable ? deps.faults.decide(faultKey) : { kind: null, token: mix(deps.model.world.seed, path.length), occurrence: 0 };
    const requestId = `req_${hex(decision.token, 8)}${hex(mix(decision.token, 1), 8)}`;
    const baseHeaders: Record<string, string> = { 'content-type': 'application/json', 'x-request-id': requestId };

    let reply: Reply;
    try {
      if (!route) throw new ApiError(404, 'not_found', `no route ${method} ${path}`);
      if (route.method !== method) throw new ApiError(405, 'validation_error', `method ${method} not allowed on ${path}; use ${route.method}`);
      const auth = authorize(req, route.scope);
      if (!auth.ok) throw new ApiError(auth.status, 'authorization_error', auth.message);
      let body: unknown;
      if (rawBody.trim()) {
        try {
          body = JSON.parse(rawBody);
        } catch {
          throw bad('body: expected JSON');
        }
      }
      if (deps.lying.endless?.test(path)) {
        sendEndless(res, path);
        return;
      }
      if (path === LOG_STREAM_PATH && !decision.kind) {
        logStreams.start(res, params, body);
        return;
      }
      reply = await route.handle({ params, match: route.pattern.exec(path)!, body, nowMs: model.clock.nowMs() });
    } catch (err) {
      if (err instanceof ApiError) {
        send(res, err.status, errorBody(err.type, err.message, requestId), baseHeaders);
      } else {
        send(res, 500, errorBody('server_error', 'internal error in the simulator', requestId), baseHeaders);
        deps.log.error({ err, path, requestId }, 'sim: handler failed');
      }
      return;
    }
    const headers = { ...baseHeaders, 'content-type': reply.contentType ?? 'application/json' };
    const kind = reply.status < 300 ? decision.kind : null;
    if (!kind) {
      deps.stats.recordsServed += reply.records;
      send(res, reply.status, reply.body, headers);
      return;
    }
    deps.stats.faultsInjected[kind] = (deps.stats.faultsInjected[kind] ?? 0) + 1;
    const t = decision.token;
    switch (kind) {
      case 'rate_limit': {
        const limit = 10;
        const extra: Record<string, string> = { 'x-ratelimit-limit': String(limit) };
        if (t % 3 === 0) extra['retry-after'] = String(deps.retryAfterSeconds);
        else extra['x-ratelimit-reset'] = String(deps.retryAfterSeconds);
        send(res, 429, toJson({ error: { type: 'rate_limited', message: `concurrency limit of ${limit} requests reached`, limit, request_id: requestId } }), { ...baseHeaders, ...extra });
        return;
      }
      case 'server_error':
      case 'server_error_final': {
        const options: Array<[number, string]> = [[500, 'runner_server_error'], [502, 'runner_incomplete_response'], [503, 'runner_scheduling_failure']];
        const [status, errorType] = options[t % options.length];
        send(res, status, toJson({ detail: `Request failed: ${errorType}`, error_type: errorType }), {
          ...baseHeaders, 'x-svc-error-type': errorType, 'x-svc-retryable': kind === 'server_error' ? 'true' : 'false',
        });
        return;
      }
      case 'platform_error':
        send(res, 500, errorBody('server_error', 'internal server error', requestId), baseHeaders);
        return;
      case 'model_error':
        send(res, 422, toJson({ detail: [{ loc: ['body'], msg: 'This feature is not supported for the request', type: 'feature_not_supported', url: 'https://docs.svc.example/errors/#feature_not_supported' }] }), {
          ...baseHeaders, 'x-svc-retryable': 'false',
        });
        return;
      case 'slow': {
        const timer = setTimeout(() => {
          pendingTimers.delete(timer);
          deps.stats.recordsServed += reply.records;
          send(res, reply.status, reply.body, headers);
        }, deps.slowMs);
        pendingTimers.add(timer);
        res.on('close', () => {
          clearTimeout(timer);
          pendingTimers.delete(timer);
        });
        return;
      }
      case 'reset': {
        const buf = Buffer.from(reply.body);
        res.writeHead(reply.status, { ...headers, 'content-length': String(buf.length) });
        res.write(buf.subarray(0, Math.floor(buf.length / 2)), () => res.socket?.destroy());
        return;
      }
      case 'truncated': {
        const buf = Buffer.from(reply.body);
        const cut = buf.subarray(0, Math.max(1, Math.floor(buf.length * 0.6)));
        res.writeHead(reply.status, { ...headers, 'content-length': String(cut.length) });
        res.end(cut);
        return;
      }
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      deps.log.error({ err }, 'sim: request failed');
      if (!res.headersSent) send(res, 500, '{"error":{"type":"server_error","message":"internal error"}}', { 'content-type': 'application/json' });
      else res.destroy();
    });
  });
  // Longer than undici's default keep-alive so pooled clients do not race a server-side close.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  return { server, pendingTimers, logStreams };
}
