// GET /api/v1/budgets and the budget gauges over a collected simulator: each budget's spent equals the truth's
// cost for its scope (app, model endpoint, product) over the month's days up to `today`; BUDGETS, BUDGETS_FILE
// and APP_BUDGETS all count; a budget already passed is over, a far one ok; the gauges carry the same status.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { DateTime } from 'luxon';
import { startSim, type Sim } from '../../src/sim/index.js';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { budgetStatusGauge, registerBusinessMetrics } from '../../src/http/business-metrics.js';
import { decimalToScaled } from '../../src/values.js';
import { runJob } from '../support/jobs.js';
import { testConfig } from '../support/store.js';

let sim: Sim;
let service: Service;
let app = '';
const TOKEN = 'test-token-0123456789abcdef';
const api = (path: string) => fetch(`${service.url}/api/v1${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });

beforeAll(async () => {
  sim = await startSim({ seed: 8, now: '2026-11-21T12:00:00Z', days: 30, apps: 3, requestsPerHour: 2 });
  app = sim.truth.usage({ from: '2026-11-01', to: '2026-11-12', timezone: 'UTC', timeframe: 'day' }).find((r) => r.cost_total_nanos > 0)!.app;
  const file = join(mkdtempSync(join(tmpdir(), 'th-budgets-')), 'budgets.json');
  writeFileSync(file, JSON.stringify([{ scope: 'product', name: 'model_api', amount: '0.01' }]));
  service = await startService(
    testConfig({
      PORT: '0',
      API_TOKENS: TOKEN,
      TIMEZONES: 'UTC',
      BUDGETS: JSON.stringify([{ scope: 'endpoint', name: 'svc-ai/flux-pro', amount: 1_000_000, currency: 'USD' }]),
      BUDGETS_FILE: file,
      APP_BUDGETS: JSON.stringify({ [app]: 1_000_000 }),
    }),
    // The gauges read "this month" from the service's clock: fixed at the simulator's, so November stays this month.
    { logger: createLogger('silent'), registry: createRegistry({ defaultMetrics: false }), extensions: [apiExtension()], now: () => new Date('2026-11-21T12:00:00Z') },
  );
  for (const job of ['usage', 'models']) {
    const run = await runJob(service, sim, job, { from: '2026-11-01', to: '2026-11-22', timezone: 'UTC' });
    expect(run.status, run.error).toBe('ok');
  }
}, 120_000);

afterAll(async () => {
  await service?.close();
  await sim?.close();
});

const dayOf = (bucket: string) => DateTime.fromISO(bucket, { setZone: true }).toISODate()!;

describe('GET /api/v1/budgets', () => {
  it('spent equals the truth per scope up to today; statuses follow the amounts', async () => {
    const res = await api('/budgets?month=2026-11&today=2026-11-11');
    expect(res.status).toBe(200);
    const body = (await res.json()) as { budgets: Array<{ scope: string; name: string; spent: string; status: string; days_elapsed: number; interval: { high: string | null } }> };
    const upTo = (r: { bucket: string | null }) => dayOf(r.bucket!) <= '2026-11-11';
    const appTruth = sim.truth.usage({ from: '2026-11-01', to: '2026-11-12', timezone: 'UTC', timeframe: 'day' }).filter((r) => r.app === app && upTo(r)).reduce((a, r) => a + BigInt(r.cost_total_nanos), 0n);
    const models = sim.truth.modelUsage({ from: '2026-11-01', to: '2026-11-12', timezone: 'UTC', timeframe: 'day' }).filter(upTo);
    const fluxTruth = models.filter((r) => r.endpoint_id === 'svc-ai/flux-pro').reduce((a, r) => a + r.cost_total_nanos, 0n);
    const modelUsd = models.filter((r) => r.currency === 'USD').reduce((a, r) => a + r.cost_total_nanos, 0n);
    expect(appTruth).toBeGreaterThan(0n);
    expect(fluxTruth).toBeGreaterThan(0n);
    const by = new Map(body.budgets.map((b) => [`${b.scope}|${b.name}`, b]));
    expect([...by.keys()].sort()).toEqual([`app|${app}`, 'endpoint|svc-ai/flux-pro', 'product|model_api'].sort());
    expect(decimalToScaled(by.get(`app|${app}`)!.spent, 9)).toBe(appTruth);
    expect(decimalToScaled(by.get('endpoint|svc-ai/flux-pro')!.spent, 9)).toBe(fluxTruth);
    expect(decimalToScaled(by.get('product|model_api')!.spent, 9)).toBe(modelUsd);
    expect(by.get('product|model_api')!.status).toBe('over');
    expect(by.get(`app|${app}`)!).toMatchObject({ status: 'ok', days_elapsed: 10 });
    expect(Number(by.get(`app|${app}`)!.interval.high)).toBeLessThan(1_000_000);
  });

  it('the state gauge says the same (one series per state, 1 for the budget\'s: ok, ok, over)', async () => {
    const registry = new Registry();
    registerBusinessMetrics({ ...service, registry }, [budgetStatusGauge]);
    const lines = (await registry.metrics()).split('\n').filter((l) => l.startsWith('tallyhouse_budget_state{')).sort();
    const states = (scope: string, name: string, state: string) =>
      ['ok', 'at_risk', 'over'].map((s) => `tallyhouse_budget_state{scope="${scope}",name="${name}",currency="USD",state="${s}"} ${s === state ? 1 : 0}`);
    expect(lines).toEqual([...states('app', app, 'ok'), ...states('endpoint', 'svc-ai/flux-pro', 'ok'), ...states('product', 'model_api', 'over')].sort());
  });
});
