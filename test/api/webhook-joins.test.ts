import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startSim, type AppTruth, type Sim, type RequestTruth } from '../../src/sim/index.js';
import { parseScenario } from '../../src/sim/scenario.js';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { efficiencyRoutes } from '../../src/api/efficiency-routes.js';
import { sessionRoutes } from '../../src/api/session-routes.js';
import { logsRoutes } from '../../src/api/logs-routes.js';
import { webhookExtension, WEBHOOK_PATH } from '../../src/ingest/webhooks.js';
import { mcpExtension } from '../../src/mcp/extension.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { testConfig } from '../support/store.js';
import { runJob } from '../support/jobs.js';

// Issue 50.7 and 50.8 against the simulator, through the webhook receiver (Ed25519-verified deliveries) and the
// real store. 50.7: one app's error rate is raised (scenario) so that its requests often fail with
// runner_scheduling_failure; /recommendations, and MCP's `recommendations` tool, advise raising its max_concurrency
// with the evidence the simulator's truth gives (share, last seen, the app's setting). 50.8: a request's webhook
// outcome (status, deliveries received, last error) sits beside its cost in GET /sessions/{id} and request_trace.
// Clock: the simulator's, set here (the month asked for is explicit).

const NOW = '2026-11-21T12:00:00Z';
const FROM = '2026-11-20T12:00:00Z';
const TOKEN = 'webhook-joins-token-0123456789abcdef';
const SEED = 77;
const OPTS = { seed: SEED, now: NOW, days: 2, apps: 4 };

let sim: Sim;
let service: Service;
let client: Client;
let busy: AppTruth;
let calm: AppTruth;
let delivered: RequestTruth[];
let traced: RequestTruth;

async function api(path: string): Promise<{ status: number; body: any; text: string }> {
  const res = await fetch(`${service.url}/api/v1${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const text = await res.text();
  return { status: res.status, text, body: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : null };
}

function truthRequests(endpointId: string): RequestTruth[] {
  const all = sim.truth.requestList({ endpointId, from: FROM, to: NOW });
  return [...new Map(all.map((r) => [r.request_id, r])).values()];
}

beforeAll(async () => {
  // The same seed builds the same world: the probe names the apps the scenario is about.
  const probe = await startSim(OPTS);
  [busy, calm] = probe.truth.apps().filter((a) => a.owned_by_caller);
  await probe.close();
  sim = await startSim({
    ...OPTS,
    webhookRepeatRate: 0,
    scenario: parseScenario({ events: [{ kind: 'errors', target: busy.endpoint_id, from: '2026-11-19T00:00:00Z', error_rate: 0.5 }] }),
  });
  const config = testConfig({ PORT: '0', API_TOKENS: TOKEN, TIMEZONES: 'UTC', JOBS_ENABLED: 'false' });
  service = await startService(config, {
    logger: createLogger(config.LOG_LEVEL),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [
      apiExtension([efficiencyRoutes, sessionRoutes, logsRoutes]),
      webhookExtension({ jwksUrl: () => `${sim.url}/.well-known/jwks.json` }),
      mcpExtension('test'),
    ],
  });
  for (const job of ['apps', 'requests']) {
    const run = await runJob(service, sim, job);
    expect(run.status, `${job}: ${run.error}`).toBe('ok');
  }
  // Every request of the two apps in the last 24 hours gets its queue webhook, verified by the receiver.
  delivered = [...truthRequests(busy.endpoint_id), ...truthRequests(calm.endpoint_id)];
  const url = `${service.url}${WEBHOOK_PATH}`;
  for (let i = 0; i < delivered.length; i += 16) {
    const outcomes = await Promise.all(delivered.slice(i, i + 16).map((r) => sim.webhooks.deliver({ requestId: r.request_id, url })));
    expect(outcomes.filter((d) => d.outcome !== 'delivered')).toEqual([]);
  }
  // One failed request's webhook arrives twice (the platform repeats deliveries): two received, one outcome.
  traced = delivered.find((r) => r.error_type === 'runner_scheduling_failure')!;
  expect((await sim.webhooks.deliver({ requestId: traced.request_id, url })).outcome).toBe('delivered');
  await service.writer.flush();
  client = new Client({ name: 'webhook-joins-test', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${service.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }));
}, 240_000);

afterAll(async () => {
  await client?.close();
  await service?.close();
  await sim?.close();
});

/** The hint the truth calls for: at least 3 scheduling failures and at least 1 % (SCHEDULING_FAILURE_HINT_PERCENT) of the delivered requests. */
function expectedHint(app: typeof busy) {
  const mine = delivered.filter((r) => r.endpoint_id === app.endpoint_id || r.endpoint_id.startsWith(`${app.endpoint_id}/`));
  const failures = mine.filter((r) => r.error_type === 'runner_scheduling_failure');
  if (failures.length < 3 || failures.length * 100 < mine.length) return null;
  return {
    kind: 'raise_max_concurrency',
    app: app.name,
    endpoint_id: app.endpoint_id,
    share_of_requests: failures.length / mine.length,
    scheduling_failures: failures.length,
    requests: mine.length,
    last_seen: new Date(Math.max(...failures.map((r) => Date.parse(r.ended_at)))).toISOString(),
    max_concurrency: app.settings.max_concurrency,
  };
}

describe('issue 50.7: frequent runner_scheduling_failure -> raise max_concurrency', () => {
  it('/recommendations names the app with its share of requests, last seen and current max_concurrency, as the truth says', async () => {
    const expected = [expectedHint(busy), expectedHint(calm)].filter((h) => h !== null);
    // The scenario's app is in it (a comparison with nothing would prove nothing).
    expect(delivered.length).toBeGreaterThan(100);
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.map((h) => h.app)).toContain(busy.name);
    const res = await api('/recommendations?month=2026-11&format=json');
    expect(res.status).toBe(200);
    const hints = (res.body.hints as Array<Record<string, unknown>>).filter((h) => h.kind === 'raise_max_concurrency');
    const fields = (h: Record<string, unknown>) => Object.fromEntries(Object.keys(expected[0]).map((k) => [k, h[k]]));
    expect(hints.map(fields).sort((a, b) => String(a.app).localeCompare(String(b.app))))
      .toEqual([...expected].sort((a, b) => a.app.localeCompare(b.app)));
    const mine = hints.find((h) => h.app === busy.name)!;
    expect(mine.evidence).toContain(`max_concurrency is ${busy.settings.max_concurrency}: the platform advises raising it`);
    expect([mine.amount, mine.currency, mine.machine_type]).toEqual([null, null, null]);
    // The CSV carries the evidence columns.
    const csv = await api('/recommendations?month=2026-11&format=csv');
    expect(csv.text.split('\n')[0]).toContain('share_of_requests,scheduling_failures,requests,last_seen,max_concurrency');
  });

  it("MCP's recommendations tool answers the route's figures and names the app", async () => {
    const res = (await client.callTool({ name: 'recommendations', arguments: { month: '2026-11' } })) as { isError?: boolean; structuredContent?: any; content: Array<{ text?: string }> };
    expect(res.isError, res.content[0]?.text).toBeFalsy();
    expect(res.structuredContent).toEqual((await api('/recommendations?month=2026-11&format=json')).body);
    const hint = expectedHint(busy)!;
    expect(res.content[0].text).toContain(`${busy.name}: ${hint.scheduling_failures} of ${hint.requests} requests failed with runner_scheduling_failure, max_concurrency ${busy.settings.max_concurrency}`);
  });
});

describe('issue 50.8: a request\'s webhook outcome beside its cost', () => {
  const expectedWebhook = () => ({
    status: 'ERROR',
    attempts: 2,
    last_error: `Request failed with status code ${traced.status_code}`,
    error_types: ['runner_scheduling_failure'],
  });

  it('request_trace (MCP) shows the delivery: status, deliveries received, last error', async () => {
    const res = (await client.callTool({ name: 'request_trace', arguments: { request_id: traced.request_id, from: FROM, to: NOW } })) as { isError?: boolean; structuredContent?: any; content: Array<{ text?: string }> };
    expect(res.isError, res.content[0]?.text).toBeFalsy();
    const request = res.structuredContent.request;
    expect([request.found, request.status_code, request.endpoint_id]).toEqual([true, traced.status_code, traced.endpoint_id]);
    expect(request.webhook).toMatchObject(expectedWebhook());
    expect(Date.parse(request.webhook.last_received_at)).toBeGreaterThanOrEqual(Date.parse(request.webhook.first_received_at));
    expect(res.content[0].text).toContain(`webhook ERROR after 2 delivery(ies) (Request failed with status code ${traced.status_code})`);
    // A request delivered once, successfully: one delivery, no error.
    const ok = delivered.find((r) => r.status_code === 200)!;
    const once = (await client.callTool({ name: 'request_trace', arguments: { request_id: ok.request_id, from: FROM, to: NOW } })) as { structuredContent?: any };
    expect(once.structuredContent.request.webhook).toMatchObject({ status: 'OK', attempts: 1, last_error: null, error_types: [] });
  });

  it('GET /sessions/{id} shows it beside the cost of the request the session mentions', async () => {
    const at = traced.ended_at.replace('T', ' ').replace('Z', '');
    await service.store.client.insert({
      table: 'faro_items',
      format: 'JSONEachRow',
      values: [{
        received_at: at, timestamp: at, kind: 'event', app: 'shop-web', app_namespace: '', release: '', app_version: '', environment: 'production', session_id: 'sess-hook',
        user_id: '', page_url: '/generate', level: '', message: 'fetch', domain: '', values: {}, attributes: {}, trace_id: '', span_id: '', request_id: traced.request_id, raw: '{}',
      }],
    });
    const res = await api('/sessions/sess-hook');
    expect(res.status).toBe(200);
    const [request] = res.body.requests;
    expect([request.request_id, request.found, request.billable_units === null ? null : Number(request.billable_units)]).toEqual([traced.request_id, true, traced.billable_units]);
    expect(request.webhook).toMatchObject(expectedWebhook());
  });
});
