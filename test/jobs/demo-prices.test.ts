// Issue 30.10: the demo had no prices, so GET /cost/requests answered "cost": null for every endpoint and sessions
// "cost_by_currency": {}. In demo mode without PRICES_FILE the requests job now prices with the simulator's own
// rates: a billable unit of a simulated request is a billed second on its app's machine type.
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { openPlatformSource, runtimeFor } from '../../src/jobs/platform-source.js';
import { openDemoPlatform } from '../../src/cli/demo-platform.js';
import { Scheduler } from '../../src/jobs/scheduler.js';
import { requestCostByEndpoint } from '../../src/store/tables/requests.js';
import { toDateTime64 } from '../../src/values.js';
import { allJobs } from '../../jobs/index.js';
import { closeRuntime, openTestRuntime } from '../support/store.js';
import { jobArgs } from '../support/jobs.js';
import type { Runtime } from '../../src/runtime.js';

let rt: Runtime | undefined;
afterAll(async () => {
  if (rt) await closeRuntime(rt);
});

describe('demo mode prices', () => {
  it('every billed request of the demo has a cost, at the simulator\'s machine-second price', async () => {
    rt = await openTestRuntime({ SVC_API_KEY: undefined, SVC_ADMIN_KEY: undefined, PRICES_FILE: undefined, ENDPOINT_IDS: 'acme/depth-v3,acme/depth-api' });
    // A fixed start: the demo world has no depth-api traffic in some 5-hour windows (e.g. before 2026-12-02 02:00).
    const source = await openPlatformSource(rt.config, createLogger('silent'), { demoNoticeLevel: 'info', openDemo: openDemoPlatform, demoStart: new Date('2026-11-26T12:00:00Z') });
    try {
      expect(source.demo).toBe(true);
      const now = source.now().getTime();
      const from = new Date(now - 6 * 3_600_000);
      const to = new Date(now - 3_600_000);
      const scheduler = new Scheduler({ runtime: runtimeFor(rt, source), platform: source.platform, jobs: allJobs, now: source.now });
      const run = await scheduler.run('requests', 'manual', jobArgs('requests', { from: from.toISOString(), to: to.toISOString() }));
      expect(run.status).toBe('ok');
      const rows = await requestCostByEndpoint(rt.store, {
        from: toDateTime64(from),
        to: toDateTime64(to),
        endpoint_ids: ['acme/depth-v3', 'acme/depth-api'],
        timezone: 'UTC',
      });
      expect(rows.map((r) => r.endpoint_id).sort()).toEqual(['acme/depth-api', 'acme/depth-v3']);
      // Hand-worked from src/sim/world.ts: depth-v3 runs on GPU-A6000 (200,000 nano-USD a second, acme has no
      // negotiated A6000 rate), depth-api on GPU-H100 (575,000 nano-USD; acme's 12.5% is a discount on the
      // bill, not the list price).
      const perUnit: Record<string, string> = { 'acme/depth-v3': '0.0002', 'acme/depth-api': '0.000575' };
      for (const r of rows) {
        expect(Number(r.billed_requests)).toBeGreaterThan(0);
        expect(Number(r.unpriced_requests)).toBe(0);
        expect(r.currency).toBe('USD');
        // cost = billable units × unit price, exactly (decimal text; scaled to integers to compare).
        const units = BigInt(String(r.billable_units).replace('.', '')) * 10n ** BigInt(12 - (String(r.billable_units).split('.')[1]?.length ?? 0));
        const price = BigInt(perUnit[r.endpoint_id].replace('.', '')) * 10n ** BigInt(12 - perUnit[r.endpoint_id].split('.')[1].length);
        const cost = BigInt(String(r.cost).replace('.', '')) * 10n ** BigInt(24 - (String(r.cost).split('.')[1]?.length ?? 0));
        expect(cost).toBe(units * price);
      }
    } finally {
      await source.close();
    }
  }, 300_000);
});
