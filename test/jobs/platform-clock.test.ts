// PLATFORM_CLOCK=simulator: the jobs' clock follows a standalone simulator's virtual clock (the soak's instances run
// against a simulator whose clock runs fast), never goes back, and a platform that is no simulator fails start-up
// naming the variable.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import { openPlatformSource } from '../../src/jobs/platform-source.js';
import { createLogger } from '../../src/log.js';
import { testConfig } from '../support/store.js';

let sim: Sim;
beforeAll(async () => {
  sim = await startSim({ seed: 3, now: '2026-11-21T12:00:00Z', apps: 2, days: 1 });
});
afterAll(async () => {
  await sim?.close();
});

const config = (env: Record<string, string>) =>
  testConfig({ SVC_BASE_URL: sim.url, SVC_API_KEY: sim.keys.api, SVC_ADMIN_KEY: sim.keys.admin, ...env });

async function until(what: string, check: () => boolean): Promise<void> {
  while (!check()) {
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(check(), what).toBe(true);
}

describe('PLATFORM_CLOCK', () => {
  it('simulator: the jobs see the virtual time, and follow it when it moves, never back', async () => {
    const source = await openPlatformSource(config({ PLATFORM_CLOCK: 'simulator' }), createLogger('silent'));
    try {
      expect(source.now().toISOString()).toBe('2026-11-21T12:00:00.000Z');
      sim.clock.advance(3 * 3600_000);
      await until('the clock has moved', () => source.now().toISOString() === '2026-11-21T15:00:00.000Z');
      sim.clock.set('2026-11-21T14:00:00Z');
      // Wait for reads of the clock (counted by the simulator, the source's only caller here) rather than a fixed
      // time: after the fourth arrival since the set, the second, which answered 14:00, has long been taken.
      const served = sim.stats().requestsServed;
      await until('four reads of the clock since it was set back', () => sim.stats().requestsServed >= served + 4);
      expect(source.now().toISOString()).toBe('2026-11-21T15:00:00.000Z');
    } finally {
      await source.close();
    }
  });

  it('wall (the default): the machine clock', async () => {
    const source = await openPlatformSource(config({}), createLogger('silent'));
    try {
      // wall-clock: PLATFORM_CLOCK=wall is the machine's clock, which is what this test checks
      const before = Date.now();
      const seen = source.now().getTime();
      expect(seen).toBeGreaterThanOrEqual(before);
      // wall-clock: PLATFORM_CLOCK=wall is the machine's clock, which is what this test checks
      expect(seen).toBeLessThanOrEqual(Date.now());
    } finally {
      await source.close();
    }
  });

  it('simulator against a platform without a virtual clock (here: a wrong admin key) fails naming the variable', async () => {
    await expect(openPlatformSource(config({ PLATFORM_CLOCK: 'simulator', SVC_ADMIN_KEY: 'not-the-key' }), createLogger('silent'))).rejects.toThrow(
      /PLATFORM_CLOCK=simulator: cannot read the virtual clock at http:\/\/127\.0\.0\.1:\d+\/_sim\/clock/,
    );
  });
});
