// README claims (issue 20): the finance report carries subtotal and discount beside the total, each equal to the
// platform's (the simulator's truth, to the nano-dollar); and the month-to-date cost gauge exports at most
// METRICS_MAX_APPS apps per currency, the rest summed as app="__other__" (oracle: the truth, ranked here).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Settings } from 'luxon';
import { Registry } from 'prom-client';
import { startSim, type Sim } from '../../src/sim/index.js';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { decimalToScaled } from '../../src/values.js';
import { monthToDateCost, registerBusinessMetrics, OTHER_APPS } from '../../src/http/business-metrics.js';
import { runJob } from '../support/jobs.js';
import { testConfig } from '../support/store.js';

const NOW = '2026-11-21T12:00:00Z';
const realNow = Settings.now;
let sim: Sim;
let service: Service;

beforeAll(async () => {
  // The gauge's month is read from luxon's clock: fixed at the simulator's "now".
  Settings.now = () => Date.parse(NOW);
  sim = await startSim({ seed: 37, now: NOW, days: 60, apps: 24 });
  service = await startService(testConfig({ PORT: '0', METRICS_MAX_APPS: '3' }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension()],
    now: () => new Date(NOW),
  });
  const run = await runJob(service, sim, 'usage', { from: '2026-10-01', to: '2026-11-22', timezone: 'UTC' });
  expect(run.status, run.error).toBe('ok');
});
afterAll(async () => {
  Settings.now = realNow;
  await service?.close();
  await sim?.close();
});

const nanos = (v: string) => decimalToScaled(v, 9);

describe('finance amounts and the cost gauge', () => {
  it('each finance row\'s subtotal, discount and total equal the truth for October, per app and machine type', async () => {
    const report = (await (await fetch(`${service.url}/api/v1/reports/finance?month=2026-10&timezone=UTC`)).json()) as {
      rows: Array<{ row_type: string; product: string; app: string; machine_type: string; subtotal: string; discount: string; total: string }>;
    };
    const truth = new Map<string, [bigint, bigint, bigint]>();
    for (const r of sim.truth.usage({ from: '2026-10-01', to: '2026-11-01', timezone: 'UTC', timeframe: 'day' })) {
      const k = `${r.app}|${r.machine_type}`;
      const [s, d, t] = truth.get(k) ?? [0n, 0n, 0n];
      truth.set(k, [s + BigInt(r.cost_subtotal_nanos), d + BigInt(r.cost_discount_nanos), t + BigInt(r.cost_total_nanos)]);
    }
    const expected = [...truth].filter(([, [, , t]]) => t !== 0n).sort(([a], [b]) => (a < b ? -1 : 1));
    expect(expected.length).toBeGreaterThan(10);
    expect(expected.some(([, [, d]]) => d !== 0n)).toBe(true); // discounts occur, so the column is exercised
    const got = report.rows
      .filter((r) => r.row_type === 'item' && r.product === 'serverless' && nanos(r.total) !== 0n)
      .map((r): [string, [bigint, bigint, bigint]] => [`${r.app}|${r.machine_type}`, [nanos(r.subtotal), nanos(r.discount), nanos(r.total)]])
      .sort(([a], [b]) => (a < b ? -1 : 1));
    expect(got).toEqual(expected);
  });

  it('the month-to-date cost gauge: the 3 costliest apps, the rest as __other__, equal to the truth for November', async () => {
    const registry = new Registry();
    registerBusinessMetrics({ ...service, registry }, [monthToDateCost]);
    const metric = await registry.getSingleMetric('tallyhouse_usage_month_to_date_cost')!.get();
    const perApp = new Map<string, bigint>();
    for (const r of sim.truth.usage({ from: '2026-11-01', to: '2026-11-22', timezone: 'UTC', timeframe: 'day' })) {
      perApp.set(r.app, (perApp.get(r.app) ?? 0n) + BigInt(r.cost_total_nanos));
    }
    const ranked = [...perApp].filter(([, v]) => v !== 0n).sort(([a, x], [b, y]) => (x === y ? (a < b ? -1 : 1) : y > x ? 1 : -1));
    expect(ranked.length).toBeGreaterThan(5);
    const expected = [...ranked.slice(0, 3), [OTHER_APPS, ranked.slice(3).reduce((n, [, v]) => n + v, 0n)] as const];
    // Gauge values are floats: compared to the nano-dollar after rounding.
    const got = metric.values.map((v) => [v.labels.app, BigInt(Math.round(v.value * 1e9))]);
    expect(got.map(([app]) => app)).toEqual(expected.map(([app]) => app));
    for (const [i, [, v]] of expected.entries()) expect(Math.abs(Number((got[i][1] as bigint) - v))).toBeLessThanOrEqual(Math.max(1, Number(v) * 1e-12));
  });
});
