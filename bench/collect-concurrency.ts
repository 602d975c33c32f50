// `npm run bench -- collect-concurrency [--weeks 6] [--fault-rate 0.2] [--slow-ms 30000] [--in-flight 4] [--seed 1]`:
// a usage backfill of `--weeks` weeks in three timezones (UTC, America/New_York, Asia/Kolkata) through the usage
// job, against a simulator answering 20% faults of every retryable kind (429, 5xx, slow answers, resets,
// truncated bodies), run twice in turns: serial (PLATFORM_MAX_IN_FLIGHT=1: one call and one month chunk at a time)
// and concurrent (--in-flight calls and chunks at once, one shared limit, a 429 pausing every caller). Reports the
// wall time of each, their ratio (goal: concurrent under half the serial time), the 429s each met (goal: no more
// than serial), and whether each run's stored cost equals the simulator's truth to the nano-dollar. Prints one
// JSON line.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DateTime } from 'luxon';
import { startSim } from '../src/sim/index.js';
import { parseConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { createRegistry } from '../src/metrics.js';
import { openRuntime, closeRuntime } from '../src/service.js';
import { PlatformClient } from '../src/platform/index.js';
import { Scheduler } from '../src/jobs/scheduler.js';
import { parseJobArgs } from '../src/jobs/options.js';
import { usageJob } from '../jobs/usage.js';
import { decimalToScaled } from '../src/values.js';

const { values } = parseArgs({
  options: {
    weeks: { type: 'string', default: '6' },
    'fault-rate': { type: 'string', default: '0.2' },
    'slow-ms': { type: 'string', default: '30000' },
    'in-flight': { type: 'string', default: '4' },
    seed: { type: 'string', default: '1' },
  },
});
const TIMEZONES = ['UTC', 'America/New_York', 'Asia/Kolkata'];
const slowMs = Number(values['slow-ms']);
const sim = await startSim({ seed: Number(values.seed), apps: 60, days: 7 * Number(values.weeks) + 14, slowMs, retryAfterSeconds: 1 });
const today = DateTime.fromJSDate(sim.clock.now(), { zone: 'utc' }).startOf('day');
const to = today.toISODate()!;
const from = today.minus({ weeks: Number(values.weeks) }).toISODate()!;

const dataDir = mkdtempSync(join(tmpdir(), 'th-bench-concurrency-'));
const baseConfig = { DATA_DIR: dataDir, TIMEZONES: TIMEZONES.join(','), LOG_LEVEL: 'silent', NODE_ENV: 'production', SVC_BASE_URL: sim.url, SVC_API_KEY: sim.keys.api, SVC_ADMIN_KEY: sim.keys.admin };
const rt0 = await openRuntime(parseConfig(baseConfig), { logger: createLogger('silent'), registry: createRegistry({ defaultMetrics: false }) });

/** Whether the stored cost per timezone, app and day equals the truth. */
async function matchesTruth(): Promise<boolean> {
  for (const timezone of TIMEZONES) {
    const rs = await rt0.store.client.query({
      query: `SELECT toString(bucket_date) AS day, app, toString(sum(cost_total)) AS cost FROM usage_buckets FINAL
              WHERE timezone = {tz:String} AND timeframe = 'day' AND bucket_date >= {from:Date} AND bucket_date < {to:Date} GROUP BY day, app`,
      query_params: { tz: timezone, from, to },
      format: 'JSONEachRow',
    });
    const stored = new Map(((await rs.json()) as Array<{ day: string; app: string; cost: string }>).map((r) => [`${r.day}|${r.app}`, decimalToScaled(r.cost, 9)]));
    const truth = new Map<string, bigint>();
    for (const r of sim.truth.usage({ from, to, timezone, timeframe: 'day' })) {
      const key = `${r.bucket!.slice(0, 10)}|${r.app}`;
      truth.set(key, (truth.get(key) ?? 0n) + BigInt(r.cost_total_nanos));
    }
    const nonZero = (m: Map<string, bigint>) => JSON.stringify([...m].filter(([, v]) => v !== 0n).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, String(v)]));
    if (truth.size === 0 || nonZero(stored) !== nonZero(truth)) return false;
  }
  return true;
}

async function backfill(inFlight: number): Promise<{ seconds: number; rate_limited: number; faults: number; status: string; exact: boolean }> {
  const config = parseConfig({ ...baseConfig, PLATFORM_MAX_IN_FLIGHT: String(inFlight) });
  const rt = { ...rt0, config };
  const platform = new PlatformClient({ baseUrl: sim.url, apiKey: sim.keys.api, adminKey: sim.keys.admin, maxInFlight: inFlight, maxElapsedMs: 600_000 });
  const scheduler = new Scheduler({ runtime: rt, platform, jobs: [usageJob], now: () => sim.clock.now() });
  await rt0.store.client.command({ query: 'TRUNCATE TABLE usage_buckets' });
  await rt0.store.client.command({ query: 'TRUNCATE TABLE checkpoints' });
  const before = sim.stats().faultsInjected;
  sim.setFaults(Number(values['fault-rate']));
  const t0 = performance.now();
  const run = await scheduler.run('usage', 'manual', parseJobArgs(usageJob, { from, to, timezone: undefined }));
  const seconds = (performance.now() - t0) / 1000;
  sim.setFaults(0);
  await platform.close();
  const after = sim.stats().faultsInjected;
  const count = (m: Record<string, number>) => Object.values(m).reduce((a, b) => a + b, 0);
  return {
    seconds: Math.round(seconds * 10) / 10,
    rate_limited: (after.rate_limit ?? 0) - (before.rate_limit ?? 0),
    faults: count(after) - count(before),
    status: run.status,
    exact: run.status === 'ok' && (await matchesTruth()),
  };
}

const serial = await backfill(1);
const concurrent = await backfill(Number(values['in-flight']));
await closeRuntime(rt0);
await sim.close();
const ratio = concurrent.seconds / serial.seconds;
console.log(
  JSON.stringify({
    bench: 'collect-concurrency',
    weeks: Number(values.weeks),
    timezones: TIMEZONES,
    fault_rate: Number(values['fault-rate']),
    slow_ms: slowMs,
    in_flight: Number(values['in-flight']),
    serial,
    concurrent,
    wall_ratio: Math.round(ratio * 1000) / 1000,
    goal_under_half: ratio < 0.5,
    goal_no_more_429s: concurrent.rate_limited <= serial.rate_limited,
  }),
);
