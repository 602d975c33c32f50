// Issue 33: the MCP server, driven by the SDK's own Client over both transports (POST /mcp, and `tallyhouse mcp` on
// stdio, which bridges to this service because it holds DATA_DIR). Oracles: the simulator's truth for the cost
// figures, the query API's own answer for the same question, and hand-built rows for the request trace.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DateTime } from 'luxon';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startSim, type Sim } from '../../src/sim/index.js';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { analyticsRoutes } from '../../src/api/analytics-routes.js';
import { logsRoutes } from '../../src/api/logs-routes.js';
import { sessionRoutes } from '../../src/api/session-routes.js';
import { requestCostRoutes } from '../../src/api/request-cost-routes.js';
import { anomalyRoutes } from '../../src/api/anomaly-routes.js';
import { adminExtension } from '../../src/http/admin.js';
import { mcpExtension } from '../../src/mcp/extension.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { decimalToScaled } from '../../src/values.js';
import { runJob } from '../support/jobs.js';
import { processDataDir, testConfig } from '../support/store.js';
import { BIN } from '../support/process.js';
import { nonEmpty } from '../support/truth.js';

const TOKEN = 'mcp-test-token-0123456789abcdef';
const NOW = '2026-11-21T12:00:00Z';
let sim: Sim;
let service: Service;
const clients: Record<'http' | 'stdio', Client> = {} as never;
let stdioStderr = '';
let budgetApp = '';

async function api(path: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${service.url}/api/v1${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return { status: res.status, body: await res.json() };
}

const insert = (table: string, values: unknown[]) => service.store.client.insert({ table, values, format: 'JSONEachRow' });
const nanos = (v: unknown) => decimalToScaled(String(v), 9);

// The hand-built request a front-end session mentions: 1,250 billable units at 0.002 USD = 2.5 USD, status 503.
// wall-clock: the request's log rows must sit inside the logs TTL, which ClickHouse applies on the machine's clock
const TRACE_AT = DateTime.utc().minus({ hours: 1 }).startOf('minute');
const at = (ms: number) => TRACE_AT.plus({ milliseconds: ms }).toFormat('yyyy-MM-dd HH:mm:ss.SSS');
const TRACE_ID = 'req-trace-0001';

async function connect(kind: 'http' | 'stdio'): Promise<Client> {
  const client = new Client({ name: 'tallyhouse-test', version: '1' });
  if (kind === 'http') {
    await client.connect(new StreamableHTTPClientTransport(new URL(`${service.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }));
  } else {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp'],
      env: { ...(process.env as Record<string, string>), NODE_ENV: 'test', DATA_DIR: processDataDir(), API_TOKENS: TOKEN, TIMEZONES: 'UTC', CLI_LOG_LEVEL: 'warn' },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (d: Buffer) => (stdioStderr += d.toString()));
    await client.connect(transport);
  }
  return client;
}

beforeAll(async () => {
  sim = await startSim({ seed: 33, now: NOW, days: 25, apps: 4 });
  budgetApp = sim.truth.apps().find((x) => x.owned_by_caller)!.name;
  const budgets = [
    { scope: 'product', name: 'serverless', amount: 1, currency: 'USD' },
    { scope: 'app', name: budgetApp, amount: 1_000_000, currency: 'USD' },
  ];
  service = await startService(testConfig({ PORT: '0', API_TOKENS: TOKEN, TIMEZONES: 'UTC', MCP_MAX_ROWS: '200', BUDGETS: JSON.stringify(budgets) }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [
      apiExtension([requestCostRoutes, analyticsRoutes, logsRoutes, sessionRoutes, anomalyRoutes]),
      mcpExtension('test'),
      adminExtension({ commands: {}, reportFatal: () => 1 }),
    ],
  });
  for (const [job, args] of [
    ['apps', {}],
    ['usage', { from: '2026-11-01', to: '2026-11-22', timezone: 'UTC' }],
    ['analytics', { from: '2026-11-19', to: '2026-11-21' }],
    ['runners', { from: '2026-11-19', to: '2026-11-21' }],
  ] as const) {
    const run = await runJob(service, sim, job, args);
    expect(run.status, `${job}: ${run.error}`).toBe('ok');
  }
  await insert('unit_prices', [{ endpoint_id: 'acme/api', effective_from: '2020-01-01 00:00:00.000', unit_price: '0.002', currency: 'USD', source: 'test', version: 1, loaded_at: '2020-01-01 00:00:00.000' }]);
  await insert('requests', [
    { request_id: TRACE_ID, endpoint_id: 'acme/api', ended_at: at(5_000), status_code: 503, duration: 1.5, billable_units: '1250', raw: '', version: 1, collected_at: at(5_000) },
    // A request no session mentions: 400 units at 0.002 USD = 0.8 USD.
    { request_id: 'req-lonely', endpoint_id: 'acme/api', ended_at: at(9_000), status_code: 200, duration: 0.25, billable_units: '400', raw: '', version: 1, collected_at: at(9_000) },
  ]);
  const item = (session_id: string, ms: number, request_id: string, kind = 'event') => ({
    received_at: at(ms), timestamp: at(ms), kind, app: 'shop-web', app_namespace: '', release: '', app_version: '', environment: 'production', session_id,
    user_id: '', page_url: '/checkout', level: '', message: kind === 'exception' ? 'Error: payment failed' : 'fetch', domain: '', values: {}, attributes: {},
    trace_id: '', span_id: '', request_id, raw: '{}',
  });
  await insert('faro_items', [item('sess-trace', 0, TRACE_ID), item('sess-trace', 6_000, '', 'exception'), item('sess-other', 1_000, 'req-elsewhere')]);
  await insert(
    'logs',
    ['accepted payment', 'calling bank', 'bank timed out'].map((message, i) => ({
      timestamp: at(1_000 + i), level: i === 2 ? 'ERROR' : 'INFO', app: 'acme/api', app_id: 'app_1', request_id: TRACE_ID, job_id: '', endpoint: 'acme/api', node: '', worker: '',
      source: 'stdout', isolate_source: '', message, attributes: {}, received_at: at(1_000 + i), batch_id: '00000000-0000-4000-8000-000000000033', line: i, origin: 'drain',
    })),
  );
  // Two anomaly findings, the cost one stored twice (the newer version answers), as the anomalies job writes them.
  const finding = (over: Record<string, unknown>) => ({
    series_kind: 'app', series_id: 'acme/flux', measure: 'cost', grain: 'day', unit: 'USD', bucket: '2026-11-19 00:00:00.000', finding_id: 'f-cost',
    expected: 100, expected_low: 70, expected_high: 130, actual: 150, score: 8.5, direction: 'up', summary: 'cost of app acme/flux on 2026-11-19: 150 USD',
    explanation: 'price effect +50 USD on acme/flux', version: 1, is_deleted: 0, evaluated_at: '2026-11-20 06:00:00.000', ...over,
  });
  await insert('anomalies', [
    finding({ actual: 140 }),
    finding({ version: 2 }),
    finding({ finding_id: 'f-err', series_kind: 'endpoint', series_id: 'acme/api', measure: 'error_rate', grain: 'hour', unit: 'ratio', bucket: '2026-11-20 14:00:00.000', expected: 0.01, expected_low: 0, expected_high: 0.08, actual: 0.3, score: 6.1, summary: 'error rate of acme/api', explanation: '' }),
  ]);
  clients.http = await connect('http');
  clients.stdio = await connect('stdio');
}, 180_000);

afterAll(async () => {
  await clients.stdio?.close();
  await clients.http?.close();
  await service?.close();
  await sim?.close();
});

type Result = { isError?: boolean; structuredContent?: any; content: Array<{ type: string; text?: string }> };
async function callBoth(name: string, args: Record<string, unknown>): Promise<Result> {
  const [http, stdio] = (await Promise.all([clients.http.callTool({ name, arguments: args }), clients.stdio.callTool({ name, arguments: args })])) as Result[];
  expect(stdio, `stdio and http answer ${name} alike`).toEqual(http);
  return http;
}

const TOOLS = ['cost_breakdown', 'cost_changes', 'anomalies', 'budget_status', 'recommendations', 'finance_report', 'session', 'request_trace', 'search_logs', 'latency_errors', 'runner_history', 'pipeline_health'];

describe('issue 33: tools listed with their schemas (SDK client, both transports)', () => {
  it('lists every tool with an input schema naming its arguments and an output schema', async () => {
    for (const client of [clients.http, clients.stdio]) {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual([...TOOLS].sort());
      const cost = tools.find((t) => t.name === 'cost_breakdown')!;
      expect(Object.keys(cost.inputSchema.properties ?? {})).toEqual(['from', 'to', 'timezone', 'product', 'group_by', 'app', 'endpoint', 'search']);
      expect(cost.inputSchema.required).toEqual(['from', 'to']);
      expect(Object.keys(cost.outputSchema?.properties ?? {})).toContain('rows');
      expect(tools.every((t) => t.annotations?.readOnlyHint === true)).toBe(true);
    }
  });

  it('lists the resources and prompts, and reads the timezones and currencies', async () => {
    const resources = (await clients.stdio.listResources()).resources.map((r) => r.uri).sort();
    expect(resources).toEqual(['tallyhouse://currencies', 'tallyhouse://dashboards', 'tallyhouse://openapi.json', 'tallyhouse://timezones']);
    const tz = await clients.http.readResource({ uri: 'tallyhouse://timezones' });
    expect(JSON.parse(String((tz.contents[0] as { text: string }).text))).toEqual({ timezones: ['UTC'] });
    const currencies = JSON.parse(String(((await clients.http.readResource({ uri: 'tallyhouse://currencies' })).contents[0] as { text: string }).text));
    expect(currencies.currencies).toEqual([...new Set([...sim.truth.usage({ from: '2026-11-01', to: '2026-11-22', timeframe: 'day' }).map((r) => r.currency), 'USD'])].sort());
    const openapi = JSON.parse(String(((await clients.stdio.readResource({ uri: 'tallyhouse://openapi.json' })).contents[0] as { text: string }).text));
    expect(openapi).toEqual((await api('/openapi.json')).body);
    const dashboards = JSON.parse(String(((await clients.http.readResource({ uri: 'tallyhouse://dashboards' })).contents[0] as { text: string }).text));
    expect(dashboards.dashboards.map((d: { uid: string }) => d.uid)).toContain('tallyhouse-cost');
    expect((await clients.http.listPrompts()).prompts.map((p) => p.name).sort()).toEqual(['explain_month_bill', 'investigate_request']);
    const prompt = await clients.stdio.getPrompt({ name: 'investigate_request', arguments: { request_id: TRACE_ID } });
    expect(JSON.stringify(prompt.messages)).toContain(TRACE_ID);
  });
});

describe('issue 33: every figure equals the query API and the simulator', () => {
  it('cost_breakdown by app equals GET /cost and the truth to the nano-dollar', async () => {
    const res = await callBoth('cost_breakdown', { from: '2026-11-01', to: '2026-11-22', group_by: ['app'] });
    expect(res.isError).toBeFalsy();
    const viaApi = await api('/cost?from=2026-11-01&to=2026-11-22&group_by=app&format=json');
    expect(res.structuredContent).toEqual(viaApi.body);
    const truth = new Map<string, bigint>();
    for (const r of nonEmpty(sim.truth.usage({ from: '2026-11-01', to: '2026-11-22', timezone: 'UTC', timeframe: 'day' }), 'November usage')) {
      truth.set(r.app, (truth.get(r.app) ?? 0n) + BigInt(r.cost_total_nanos));
    }
    const got = new Map<string, bigint>(res.structuredContent.rows.map((r: { app: string; cost: string }) => [r.app, nanos(r.cost)]));
    expect([...got].filter(([, v]) => v !== 0n).sort()).toEqual([...truth].filter(([, v]) => v !== 0n).sort());
    expect(res.content[0].text).toMatch(/^serverless cost 2026-11-01\.\.2026-11-22 \(UTC\): /);
  });

  it('cost_changes equals GET /cost/changes; the difference per currency equals the truth of both periods', async () => {
    const res = await callBoth('cost_changes', { from: '2026-11-11', to: '2026-11-21', group_by: ['app'] });
    expect(res.isError, res.content[0].text).toBeFalsy();
    expect(res.structuredContent).toEqual((await api('/cost/changes?from=2026-11-11&to=2026-11-21&group_by=app&limit=20')).body);
    expect([res.structuredContent.baseline_from, res.structuredContent.baseline_to]).toEqual(['2026-11-01', '2026-11-11']);
    const period = (from: string, to: string) => {
      const m = new Map<string, bigint>();
      for (const r of sim.truth.usage({ from, to, timezone: 'UTC', timeframe: 'day' })) m.set(r.currency, (m.get(r.currency) ?? 0n) + BigInt(r.cost_total_nanos));
      return m;
    };
    const [before, after] = [period('2026-11-01', '2026-11-11'), period('2026-11-11', '2026-11-21')];
    const totals = nonEmpty(res.structuredContent.totals as Array<{ currency: string; baseline: string; current: string; difference: string }>, 'change totals');
    for (const t of totals) {
      expect([nanos(t.baseline), nanos(t.current)], t.currency).toEqual([before.get(t.currency) ?? 0n, after.get(t.currency) ?? 0n]);
      expect(nanos(t.difference)).toBe((after.get(t.currency) ?? 0n) - (before.get(t.currency) ?? 0n));
    }
    const bad = await callBoth('cost_changes', { from: '2026-11-11', to: '2026-11-21', group_by: ['weather'] });
    expect([bad.isError, bad.content[0].text?.startsWith('invalid argument group_by: ')]).toEqual([true, true]);
  });

  it('anomalies equals GET /anomalies: the newer version of a re-evaluated finding, once', async () => {
    const res = await callBoth('anomalies', { from: '2026-11-18', to: '2026-11-21' });
    expect(res.isError, res.content[0].text).toBeFalsy();
    expect(res.structuredContent).toEqual((await api('/anomalies?from=2026-11-18&to=2026-11-21&limit=201')).body);
    expect(res.structuredContent.rows.map((r: { finding_id: string; actual: number }) => [r.finding_id, r.actual])).toEqual([['f-err', 0.3], ['f-cost', 150]]);
    const cost = await callBoth('anomalies', { from: '2026-11-18', to: '2026-11-21', measure: 'cost' });
    expect(cost.structuredContent.rows.map((r: { explanation: string }) => r.explanation)).toEqual(['price effect +50 USD on acme/flux']);
    const bad = await callBoth('anomalies', { measure: 'weather' });
    expect([bad.isError, /measure/.test(bad.content[0].text!)]).toEqual([true, true]);
  });

  it('budget_status equals GET /budgets; spent equals the truth of the month up to today; 1 USD is over, a million ok', async () => {
    const res = await callBoth('budget_status', { month: '2026-11', today: '2026-11-11' });
    expect(res.isError, res.content[0].text).toBeFalsy();
    expect(res.structuredContent).toEqual((await api('/budgets?month=2026-11&today=2026-11-11')).body);
    const truth = (apps?: string[]) =>
      sim.truth.usage({ from: '2026-11-01', to: '2026-11-12', timezone: 'UTC', timeframe: 'day', apps }).reduce((sum, r) => sum + BigInt(r.cost_total_nanos), 0n);
    const [product, app] = res.structuredContent.budgets as Array<{ scope: string; name: string; spent: string; status: string }>;
    expect([product.scope, product.name, product.status]).toEqual(['product', 'serverless', 'over']);
    expect(nanos(product.spent)).toBe(truth());
    expect([app.scope, app.name, app.status]).toEqual(['app', budgetApp, 'ok']);
    expect(nanos(app.spent)).toBe(truth([budgetApp]));
    expect(nanos(app.spent)).toBeGreaterThan(0n);
    expect(res.content[0].text).toContain('product serverless over');
  });

  it('finance_report equals GET /reports/finance, totals equal the truth', async () => {
    const res = await callBoth('finance_report', { month: '2026-11' });
    expect(res.isError, res.content[0].text).toBeFalsy();
    expect(res.structuredContent).toEqual((await api('/reports/finance?month=2026-11&timezone=UTC')).body);
    let truth = 0n;
    for (const r of sim.truth.usage({ from: '2026-11-01', to: '2026-11-22', timezone: 'UTC', timeframe: 'day' })) truth += BigInt(r.cost_total_nanos);
    expect(truth).toBeGreaterThan(0n);
    expect(nanos(res.structuredContent.totals[0].total)).toBe(truth);
    // November is not over on the simulator's clock: nothing in it is final yet, and the summary says provisional.
    expect(res.structuredContent.month_final).toBe(false);
    expect(res.content[0].text).toContain('provisional');
  });

  it('latency_errors and runner_history equal GET /latency, /errors and /runners', async () => {
    const endpoint = sim.truth.apps().find((a) => a.owned_by_caller && a.endpoints.length > 0)!.endpoints[0];
    const args = { from: '2026-11-19', to: '2026-11-21', timeframe: 'hour', endpoint_id: [endpoint] };
    const res = await callBoth('latency_errors', args);
    expect(res.isError, res.content[0].text).toBeFalsy();
    const q = `from=2026-11-19&to=2026-11-21&timeframe=hour&endpoint_id=${encodeURIComponent(endpoint)}&format=json`;
    const [latency, errors, runners] = await Promise.all([api(`/latency?${q}`), api(`/errors?${q}`), api(`/runners?${q}`)]);
    expect(nonEmpty(res.structuredContent.latency, 'latency rows')).toEqual(latency.body.rows);
    expect(nonEmpty(res.structuredContent.errors, 'error rows')).toEqual(errors.body.rows);
    const r = await callBoth('runner_history', args);
    expect(r.isError, r.content[0].text).toBeFalsy();
    expect(nonEmpty(r.structuredContent.rows, 'runner rows')).toEqual(runners.body.rows);
  });

  it('search_logs and session equal GET /logs and GET /sessions/{id}', async () => {
    const from = TRACE_AT.toISO()!;
    const to = TRACE_AT.plus({ minutes: 1 }).toISO()!;
    const res = await callBoth('search_logs', { request_id: TRACE_ID, from, to, limit: 2 });
    const viaApi = await api(`/logs?request_id=${TRACE_ID}&from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}&limit=2`);
    expect(res.structuredContent.lines).toEqual(viaApi.body.lines);
    expect(res.structuredContent.lines.map((l: { message: string }) => l.message)).toEqual(['bank timed out', 'calling bank']);
    expect(res.structuredContent.has_more).toBe(true);
    const session = await callBoth('session', { session_id: 'sess-trace' });
    expect(session.structuredContent).toEqual((await api('/sessions/sess-trace')).body);
  });

  it('pipeline_health: the last run of every job the test ran, and the rest never ran', async () => {
    // Not callBoth: lag_seconds is read at the moment of each call.
    for (const client of [clients.http, clients.stdio]) {
      const res = (await client.callTool({ name: 'pipeline_health', arguments: {} })) as Result;
      expect(res.isError, res.content[0].text).toBeFalsy();
      const byJob = new Map<string, any>(res.structuredContent.jobs.map((j: { job: string }) => [j.job, j]));
      for (const job of ['apps', 'usage', 'analytics', 'runners']) {
        const j = byJob.get(job);
        expect(j.last_run.status, job).toBe('ok');
        // The last success is the last run's end (the store's DateTime64 text, in UTC), and the lag counts from it.
        expect(j.last_success_at).toBe(`${j.last_run.finished_at.replace(' ', 'T')}Z`);
        expect(j.lag_seconds).toBeGreaterThanOrEqual(0);
      }
      expect([byJob.get('logs').last_run, byJob.get('logs').last_success_at]).toEqual([null, null]);
      expect(res.structuredContent.drain.state).toBe('not running in this process');
    }
  });
});

describe('issue 33.3: request_trace follows a request from the Faro session to the bill', () => {
  it('returns the session that mentions it, its status, cost (1,250 units at 0.002 USD) and its log lines', async () => {
    const res = await callBoth('request_trace', { request_id: TRACE_ID, from: TRACE_AT.toISO(), to: TRACE_AT.plus({ minutes: 1 }).toISO() });
    expect(res.isError, res.content[0].text).toBeFalsy();
    const s = res.structuredContent;
    expect(s.session_id).toBe('sess-trace');
    expect([s.request.status_code, s.request.outcome, s.request.duration, s.request.currency]).toEqual([503, 'error', 1.5, 'USD']);
    expect(nanos(s.request.billable_units)).toBe(1250n * 10n ** 9n);
    expect(nanos(s.request.cost)).toBe(2_500_000_000n);
    expect(s.log_lines.map((l: { message: string }) => l.message)).toEqual(['bank timed out', 'calling bank', 'accepted payment']);
    expect(res.content[0].text).toContain('session sess-trace');
  });

  it('a request no session mentions: no session, said so, and its status and cost from the same lookup', async () => {
    // An explicit range: the default ends now, which differs between the two transports' calls.
    const range = { from: TRACE_AT.minus({ hours: 1 }).toISO(), to: TRACE_AT.plus({ hours: 1 }).toISO() };
    const res = await callBoth('request_trace', { request_id: 'req-lonely', ...range });
    expect(res.isError, res.content[0].text).toBeFalsy();
    const s = res.structuredContent;
    expect(s.session_id).toBeNull();
    expect([s.request.found, s.request.status_code, s.request.outcome, s.request.duration]).toEqual([true, 200, 'success', 0.25]);
    expect([nanos(s.request.billable_units), nanos(s.request.cost), s.request.currency]).toEqual([400n * 10n ** 9n, 800_000_000n, 'USD']);
    expect(s.log_lines).toEqual([]);
    expect(res.content[0].text).toMatch(/no stored Faro session mentions it/);
    const nowhere = await callBoth('request_trace', { request_id: 'req-nowhere', ...range });
    expect([nowhere.structuredContent.session_id, nowhere.structuredContent.request.found]).toEqual([null, false]);
    expect(nowhere.content[0].text).toMatch(/not found among the requests collected/);
  });
});

describe('issue 33.2: bad arguments, limits, tokens, Host and Origin', () => {
  it('a bad argument is a tool error naming it (the tool schema, and the route behind it)', async () => {
    const bad = await callBoth('cost_breakdown', { from: '2026-11-01', to: 'yesterday' });
    expect(bad.isError).toBe(true);
    expect(bad.content[0].text).toMatch(/\bto\b/);
    expect(bad.content[0].text).toMatch(/expected a date YYYY-MM-DD/);
    const group = await callBoth('cost_breakdown', { from: '2026-11-01', to: '2026-11-22', group_by: ['password'] });
    expect(group.isError).toBe(true);
    expect(group.content[0].text).toMatch(/^invalid argument group_by: /);
    const tz = await callBoth('finance_report', { month: '2026-11', timezone: 'Mars/Olympus' });
    expect(tz.isError).toBe(true);
    expect(tz.content[0].text).toMatch(/^invalid argument timezone: /);
    const month = await callBoth('finance_report', { month: '2026-13' });
    expect([month.isError, /month/.test(month.content[0].text!)]).toEqual([true, true]);
  });

  it('over the row cap (MCP_MAX_ROWS=200) a tool error, never a partial figure', async () => {
    // Hourly buckets over two days: more rows than 200 (counted through the API first).
    const q = 'from=2026-11-19&to=2026-11-21&timeframe=hour&format=json';
    const rows = (await api(`/latency?${q}`)).body.rows.length + (await api(`/errors?${q}`)).body.rows.length;
    expect(rows).toBeGreaterThan(200);
    const res = await callBoth('latency_errors', { from: '2026-11-19', to: '2026-11-21', timeframe: 'hour' });
    expect(res.isError).toBe(true);
    expect(res.structuredContent).toBeUndefined();
    expect(res.content[0].text).toContain(`the answer has ${rows} rows, over the 200`);
    const logs = await callBoth('search_logs', { limit: 500 });
    expect([logs.isError, /MCP_MAX_ROWS/.test(logs.content[0].text!)]).toEqual([true, true]);
  });

  it('over the API range limit: an error naming the limit', async () => {
    const res = await callBoth('cost_breakdown', { from: '2001-01-01', to: '2026-11-22' });
    expect(res.isError).toBe(true);
    expect(res.content[0].text).toMatch(/API_MAX_RANGE_DAYS/);
  });

  const post = (headers: Record<string, string>) =>
    fetch(`${service.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });

  it('a missing or wrong token is 401; the right one lists the tools', async () => {
    expect((await post({})).status).toBe(401);
    expect((await post({ authorization: 'Bearer not-the-token-0123456789' })).status).toBe(401);
    const ok = await post({ authorization: `Bearer ${TOKEN}` });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as any).result.tools).toHaveLength(TOOLS.length);
  });

  it('a foreign Origin is 403, the service own Origin is served; a foreign Host is 421', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await post({ ...auth, origin: 'https://attacker.example' })).status).toBe(403);
    expect((await post({ ...auth, origin: 'http://localhost:1' })).status).toBe(403);
    expect((await post({ ...auth, origin: new URL(service.url).origin })).status).toBe(200);
    const { request } = await import('undici');
    const foreign = await request(`${service.url}/mcp`, {
      method: 'POST',
      headers: { ...auth, host: 'attacker.example', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(foreign.statusCode).toBe(421);
    await foreign.body.dump();
  });

  it('stdout of `tallyhouse mcp` carried JSON-RPC only (the client parsed every line); its log went to stderr', () => {
    expect(stdioStderr).toContain('answering through the service at');
  });
});
