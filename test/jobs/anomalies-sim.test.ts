// The anomalies job on a store the collectors filled from the simulator, with one injected anomaly from a scenario
// (issue 32.5): svc-ai/flux-pro's unit price doubles from 2026-11-16 (60 requests an hour: at the default 2,
// flux-pro costs under 2 USD a day, a quiet series the detector's 1 USD floor rightly leaves alone). The truth is the scenario itself and the
// simulator's own usage truth (the day's quantity, and the price before and after), not our queries.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import { parseScenario } from '../../src/sim/scenario.js';
import { startService, type Service } from '../../src/service.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { runJob } from '../support/jobs.js';
import { queryRows, testConfig } from '../support/store.js';

let sim: Sim;
let service: Service;
const NOW = '2026-11-21T12:00:00Z';

beforeAll(async () => {
  const scenario = parseScenario({ name: 'price', events: [{ kind: 'price', endpoint: 'svc-ai/flux-pro', from: '2026-11-16T00:00:00Z', unit_price: '0.1' }] });
  sim = await startSim({ seed: 11, now: NOW, days: 45, apps: 4, requestsPerHour: 60, scenario });
  service = await startService(testConfig({ PORT: '0', TIMEZONES: 'UTC' }), { logger: createLogger('silent'), registry: createRegistry({ defaultMetrics: false }), extensions: [] });
  const collected = await runJob(service, sim, 'models', { from: '2026-10-12', to: '2026-11-21', timezone: 'UTC' });
  expect(collected.status, collected.error).toBe('ok');
  const judged = await runJob(service, sim, 'anomalies', { from: '2026-11-14', to: '2026-11-21' });
  expect(judged.status, judged.error).toBe('ok');
}, 300_000);

afterAll(async () => {
  await service?.close();
  await sim?.close();
});

describe('the anomalies job on a simulated store with a scenario', () => {
  it('finds the price change on the day it starts, and explains it as a price effect of (p1 - p0) x q1', async () => {
    const truth = sim.truth.modelUsage({ from: '2026-11-16', to: '2026-11-17', timezone: 'UTC', timeframe: 'day' }).filter((r) => r.endpoint_id === 'svc-ai/flux-pro');
    const quantity = truth.reduce((n, r) => n + r.quantity, 0);
    expect(quantity).toBeGreaterThan(0);
    const findings = await queryRows<{ series_kind: string; series_id: string; bucket: string; direction: string; explanation: string }>(
      service,
      `SELECT series_kind, series_id, toString(bucket) AS bucket, direction, explanation FROM anomalies FINAL
       WHERE is_deleted = 0 AND measure = 'cost' AND series_id = 'svc-ai/flux-pro' ORDER BY bucket`,
    );
    expect(findings[0]).toMatchObject({ series_kind: 'model_endpoint', bucket: '2026-11-16 00:00:00.000', direction: 'up' });
    // price effect = (0.1 - p0) x q1, p0 the old price of every flux-pro call of the week before.
    const before = sim.truth.modelUsage({ from: '2026-11-09', to: '2026-11-10', timezone: 'UTC', timeframe: 'day' }).filter((r) => r.endpoint_id === 'svc-ai/flux-pro');
    const oldPrices = [...new Set(before.map((r) => r.unit_price_nanos / 1e9))];
    expect(oldPrices).toHaveLength(1);
    const m = /^price effect \+([\d.]+) USD on svc-ai\/flux-pro: unit price (\S+) ([\d.]+) -> ([\d.]+) \(against 2026-11-09\)$/.exec(findings[0].explanation);
    expect(m, findings[0].explanation).not.toBeNull();
    expect(Number(m![3])).toBe(Number(oldPrices[0]));
    expect(Number(m![4])).toBe(0.1);
    expect(Number(m![1])).toBeCloseTo((0.1 - Number(oldPrices[0])) * quantity, 9);
    // No other model endpoint changed: no finding on any.
    const endpoints = await queryRows<{ series_id: string }>(service, `SELECT DISTINCT series_id FROM anomalies FINAL WHERE is_deleted = 0 AND series_kind = 'model_endpoint'`);
    expect(endpoints).toEqual([{ series_id: 'svc-ai/flux-pro' }]);
  });
});
