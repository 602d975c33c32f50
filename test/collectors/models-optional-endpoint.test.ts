// Issue 28.8: a platform that does not serve GET /v1/models/billing-events (404: no such route; 501: not
// implemented) must not fail the models job on every run. Usage, prices and the catalogue are stored exactly (the
// simulator's truth, in integer nanos), the run ends `ok`, and "not served" is recorded once: the job_runs note,
// tallyhouse_platform_endpoint_served 0, one log line. A 404 about the request (an endpoint id the route does not
// know) is still a failure. The platform here is the simulator behind a proxy that answers for that one route.
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DateTime } from 'luxon';
import { startSim, type Sim } from '../../src/sim/index.js';
import { PlatformClient } from '../../src/platform/index.js';
import type { Runtime } from '../../src/runtime.js';
import { decimalToScaled } from '../../src/values.js';
import { closeRuntime, openTestRuntime, queryRows } from '../support/store.js';
import { runJob } from '../support/jobs.js';

const NOW = '2026-11-21T12:00:00Z';
const FROM = '2026-11-02';
const TO = '2026-11-22';
const BILLING_EVENTS = '/v1/models/billing-events';

/** How the proxy answers the billing-events route: pass it through, or refuse it with a status. */
type Mode = { kind: 'pass' } | { kind: 'refuse'; status: 404 | 501 } | { kind: 'refuse-filtered' };

let sim: Sim;
let rt: Runtime;
let proxy: Server;
let proxyUrl: string;
let mode: Mode = { kind: 'pass' };
let billingCalls: string[] = [];

function refuse(res: ServerResponse, status: number): void {
  const type = status === 404 ? 'not_found' : 'not_implemented';
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { type, message: status === 404 ? 'no such route' : 'billing events are not available' } }));
}

function forward(req: IncomingMessage, res: ServerResponse): void {
  const target = new URL(req.url ?? '/', sim.url);
  const upstream = request(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
    answer.on('error', () => res.destroy());
  });
  // The simulator's faults (resets, truncated bodies) reach the client as they are.
  upstream.on('error', () => res.destroy());
  req.pipe(upstream);
}

beforeAll(async () => {
  sim = await startSim({ seed: 11, now: NOW, days: 20, faultRate: 0.1 });
  rt = await openTestRuntime({ TIMEZONES: 'UTC' });
  proxy = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://proxy');
    if (url.pathname === BILLING_EVENTS) {
      billingCalls.push(url.search);
      if (mode.kind === 'refuse') return refuse(res, mode.status);
      if (mode.kind === 'refuse-filtered' && url.searchParams.has('endpoint_id')) return refuse(res, 404);
    }
    forward(req, res);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => (proxy ? proxy.close(() => resolve()) : resolve()));
  if (rt) await closeRuntime(rt);
  await sim?.close();
});

function proxyClient(): PlatformClient {
  return new PlatformClient({
    baseUrl: proxyUrl,
    apiKey: sim.keys.api,
    adminKey: sim.keys.admin,
    backoffBaseMs: 5,
    maxBackoffMs: 50,
    headersTimeoutMs: 2_000,
    bodyTimeoutMs: 2_000,
    maxAttempts: 8,
  });
}

async function runModels(m: Mode) {
  mode = m;
  billingCalls = [];
  const platform = proxyClient();
  try {
    return await runJob(rt, sim, 'models', { from: FROM, to: TO, timezone: 'UTC' }, { platform });
  } finally {
    await platform.close();
  }
}

type Totals = Map<string, bigint>;

function truthDaily(): Totals {
  const out: Totals = new Map();
  for (const r of sim.truth.modelUsage({ from: FROM, to: TO, timezone: 'UTC' })) {
    const key = `${DateTime.fromISO(r.bucket!, { setZone: true }).toISODate()}|${r.endpoint_id}|${r.currency}`;
    out.set(key, (out.get(key) ?? 0n) + r.cost_total_nanos);
  }
  return out;
}

async function storedDaily(): Promise<Totals> {
  const rows = await queryRows<{ day: string; endpoint_id: string; currency: string; cost: string }>(
    rt,
    `SELECT toString(bucket_date) AS day, endpoint_id, currency, toString(sum(cost_total)) AS cost
     FROM model_usage_buckets FINAL
     WHERE timezone = 'UTC' AND timeframe = 'day' AND bucket_date >= {from:Date} AND bucket_date < {to:Date}
     GROUP BY day, endpoint_id, currency`,
    { from: FROM, to: TO },
  );
  return new Map(rows.map((r) => [`${r.day}|${r.endpoint_id}|${r.currency}`, decimalToScaled(r.cost, 9)]));
}

const sorted = (m: Totals) => [...m.entries()].filter(([, v]) => v !== 0n).sort(([a], [b]) => a.localeCompare(b));

async function servedGauge(): Promise<number | undefined> {
  const metric = rt.registry.getSingleMetric('tallyhouse_platform_endpoint_served');
  const values = metric ? (await metric.get()).values : [];
  return values.find((v) => v.labels.endpoint === BILLING_EVENTS)?.value;
}

async function jobRun(runId: string) {
  const rows = await queryRows<{ status: string; note: string; error: string }>(rt, 'SELECT status, note, error FROM job_runs WHERE run_id = {id:UUID}', { id: runId });
  return rows[0];
}

async function count(table: string, final = 'FINAL'): Promise<number> {
  const rows = await queryRows<{ n: string }>(rt, `SELECT count() AS n FROM ${table} ${final}`);
  return Number(rows[0].n);
}

describe('models job where the platform does not serve billing events', () => {
  it.each([404, 501] as const)('answered %i: the run is ok, usage equals the truth to the nano, prices and catalogue stored; "not served" noted once', async (status) => {
    const truth = truthDaily();
    expect(truth.size).toBeGreaterThan(19 * 11);
    await rt.store.client.command({ query: 'TRUNCATE TABLE model_usage_buckets' });
    await rt.store.client.command({ query: 'TRUNCATE TABLE model_prices' });
    await rt.store.client.command({ query: 'TRUNCATE TABLE models' });
    const eventsBefore = await count('model_billing_events');

    const run = await runModels({ kind: 'refuse', status });
    expect(run.status, run.error).toBe('ok');
    expect(sorted(await storedDaily())).toEqual(sorted(truth));
    expect(await count('model_prices', '')).toBeGreaterThan(0);
    expect(await count('models')).toBeGreaterThan(0);
    expect(await count('model_billing_events')).toBe(eventsBefore);

    const note = `${BILLING_EVENTS} not served (the platform answered ${status}): skipped`;
    expect(run.note).toBe(note);
    expect(await jobRun(run.runId)).toEqual({ status: 'ok', note, error: '' });
    expect(await servedGauge()).toBe(0);
    // A 501 is about the route: one call. A 404 is confirmed once without the endpoint filter: two.
    expect(billingCalls).toHaveLength(status === 404 ? 2 : 1);
  });

  it('served again: the gauge says 1, events are stored and the run notes nothing', async () => {
    const run = await runModels({ kind: 'pass' });
    expect(run.status, run.error).toBe('ok');
    expect(run.note ?? '').toBe('');
    expect((await jobRun(run.runId)).note).toBe('');
    expect(await servedGauge()).toBe(1);
    const calls = sim.truth.modelCalls({ from: FROM, to: TO });
    expect(calls.length).toBeGreaterThan(100);
    const stored = new Map(
      (await queryRows<{ request_id: string; cost: string }>(rt, 'SELECT request_id, toString(cost_total) AS cost FROM model_billing_events FINAL')).map((r) => [
        r.request_id,
        decimalToScaled(r.cost, 9),
      ]),
    );
    expect(calls.filter((c) => stored.get(c.request_id) !== c.cost_total_nanos).slice(0, 5)).toEqual([]);
  });

  it('a 404 about the request (the route answers without the endpoint filter) still fails the run', async () => {
    const run = await runModels({ kind: 'refuse-filtered' });
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/GET \/v1\/models\/billing-events answered 404 not_found/);
    expect((await jobRun(run.runId)).note).toBe('');
  });
});
