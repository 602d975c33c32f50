// Issue 16, acceptance 2: `tallyhouse logs tail` prints the simulator's records as its stream emits them; when the
// stream drops, it says so, reconnects from the last record and misses nothing (compared with the truth), repeats
// nothing; --store writes the same records into `logs`. The time from emitting to printing is measured and
// reported, not asserted (tests never assert a timing).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import { runCli, type Spawned } from '../support/process.js';
import { openTestRuntime, closeRuntime, queryRows, tempDataDir } from '../support/store.js';

let sim: Sim;
beforeAll(async () => {
  sim = await startSim({ seed: 31, now: '2026-11-21T12:00:00Z', apps: 10, days: 2 });
});
afterAll(async () => {
  await sim?.close();
});

/** A printed NDJSON record back in the drain's (and the truth's) form. */
function drainForm(line: string): Record<string, unknown> {
  const item = JSON.parse(line) as { timestamp: string; level: string; message: string; labels: Record<string, unknown> };
  return { timestamp: item.timestamp, message: item.message, level: item.level, ...item.labels };
}

const records = (cli: Spawned) => cli.stdout().split('\n').filter(Boolean).map(drainForm);

async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 2400 && !ok(); i++) await new Promise((r) => setTimeout(r, 50));
  if (!ok()) throw new Error(`timed out waiting until ${what}`);
}

describe('logs tail', () => {
  it('prints each record once as the stream emits it, through a dropped stream, and --store keeps them', async () => {
    const dataDir = tempDataDir();
    const cli = runCli(['logs', 'tail', '--store'], { SVC_BASE_URL: sim.url, SVC_API_KEY: sim.keys.api, DATA_DIR: dataDir, CLICKHOUSE_URL: undefined });
    await until('the tail is connected', () => sim.logStream.open === 1);
    const t0 = sim.clock.now().toISOString();
    const latencies: number[] = [];

    const step = async (ms: number): Promise<void> => {
      const before = sim.truth.logRecords({ from: t0, to: sim.clock.now().toISOString() }).length;
      sim.clock.advance(ms);
      const emittedAt = performance.now();
      const expected = sim.truth.logRecords({ from: t0, to: sim.clock.now().toISOString() }).length;
      expect(expected).toBeGreaterThan(before);
      await until(`${expected} records are printed`, () => records(cli).length >= expected);
      latencies.push(performance.now() - emittedAt);
    };
    for (let i = 0; i < 3; i++) await step(5 * 60_000);

    // The stream drops; the platform goes on logging while the tail is away.
    expect(sim.logStream.drop()).toBe(1);
    sim.clock.advance(7 * 60_000);
    await until('the tail has reconnected', () => /reconnected; resuming after/.test(cli.stderr()));
    expect(cli.stderr()).toMatch(/stream dropped \(.+\); reconnecting in \d+\.\d s \(attempt 1\)/);
    for (let i = 0; i < 2; i++) await step(5 * 60_000);

    const truth = sim.truth.logRecords({ from: t0, to: sim.clock.now().toISOString() });
    expect(truth.length).toBeGreaterThan(50);
    expect(records(cli)).toEqual(truth);
    console.log(`logs tail: emitted-to-printed latency per step (ms): ${latencies.map((l) => Math.round(l)).join(', ')}`);

    cli.child.kill('SIGINT');
    const exit = await cli.exited;
    expect(exit.code, cli.stderr()).toBe(0);
    expect(cli.stderr()).toContain(`${truth.length} line(s), ${truth.length} stored`);

    const rt = await openTestRuntime({ DATA_DIR: dataDir });
    try {
      const stored = await queryRows<{ ts: string; message: string; origin: string }>(rt, 'SELECT toString(timestamp) AS ts, message, origin FROM logs ORDER BY timestamp');
      expect(stored.length).toBe(truth.length);
      expect(stored.every((r) => r.origin === 'tail')).toBe(true);
      expect(stored.map((r) => [r.ts, r.message]).sort()).toEqual(truth.map((r) => [String(r.timestamp).replace('T', ' ').replace('Z', ''), r.message]).sort());
    } finally {
      await closeRuntime(rt);
    }
  });

  it('refuses an unknown option or subcommand with exit 2 and the usage', async () => {
    const bad = runCli(['logs', 'tail', '--colour'], { SVC_BASE_URL: sim.url, SVC_API_KEY: sim.keys.api });
    expect((await bad.exited).code).toBe(2);
    expect(bad.stderr()).toMatch(/unknown option --colour[\s\S]*Usage: tallyhouse logs tail/);
    const sub = runCli(['logs', 'follow'], { SVC_BASE_URL: sim.url, SVC_API_KEY: sim.keys.api });
    expect((await sub.exited).code).toBe(2);
    expect(sub.stderr()).toContain('unknown subcommand "follow"');
  });
});
