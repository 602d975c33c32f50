// Issue 19, the short soak: about three minutes of the end-to-end soak (test/soak/harness.ts) inside npm test.
// Two instances behind a load balancer, one store in its own process, 20% platform faults, five SIGKILLs and two
// store outages; every difference against the simulator's truth must be zero. The long one: npm run soak.
import { describe, expect, it } from 'vitest';
import { nonZeroDiffs, runSoak } from './harness.js';

describe('the short soak', () => {
  it('two instances through kills, store outages and 20% faults: every difference against the truth is zero', async () => {
    const lines: string[] = [];
    const result = await runSoak({
      seed: 3,
      durationMs: 150_000,
      faultRate: 0.2,
      kills: 5,
      outages: 2,
      outageMs: 20_000,
      log: (line) => lines.push(line),
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n${lines.slice(-60).join('\n')}`);
    });
    console.log(JSON.stringify(result));
    const soakLines = lines.filter((l) => l.startsWith('[soak'));
    expect(nonZeroDiffs(result), `${JSON.stringify(result)}\n${soakLines.join('\n')}`).toEqual([]);
    // The run was what it claims: the faults happened and there was something to compare.
    expect(result.restarts).toBeGreaterThanOrEqual(5);
    expect(result.store_outages).toBe(2);
    expect(result.faults_injected).toBeGreaterThan(0);
    for (const key of ['requests', 'log_records_sent', 'webhooks_delivered', 'telemetry_accepted']) expect(result[key], key).toBeGreaterThan(0);
  }, 15 * 60_000);
});
