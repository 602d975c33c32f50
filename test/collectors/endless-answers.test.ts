// Issue 49.2: a lying platform costs nothing but its own connection. Each collector's endpoint in turn answers 200
// with a body that never ends (the simulator's setEndless); the job's call fails as response_too_large, the job
// ends (failed, or ok having counted the call), and the process grows by far less than 64 MB while it runs. On the
// old client an endless answer was read whole until the call's time budget ran out (12.3 GB in 120 s, the review).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import { PlatformClient } from '../../src/platform/index.js';
import type { Runtime } from '../../src/runtime.js';
import { scrapeTargets, scrapeTarget } from '../../src/collectors/scrape.js';
import { followLogStream } from '../../src/cli/logs-tail.js';
import { openTestRuntime, closeRuntime, testConfig } from '../support/store.js';
import { runJob } from '../support/jobs.js';

let rt: Runtime;
let sim: Sim;
const GROWTH_LIMIT_BYTES = 64 * 1024 * 1024;
const growth: string[] = [];

beforeAll(async () => {
  rt = await openTestRuntime();
  sim = await startSim({ seed: 5, now: '2026-11-21T11:50:00Z', apps: 4, days: 2 });
  expect((await runJob(rt, sim, 'apps')).status).toBe('ok');
  expect((await runJob(rt, sim, 'events', { from: '2026-11-21T00:00:00Z', to: '2026-11-21T11:50:00Z' })).status).toBe('ok');
}, 120_000);
afterAll(async () => {
  if (process.env.TEST_PRINT_GROWTH) console.log(growth.join('\n'));
  await sim.close();
  await closeRuntime(rt);
});

/** A client as the service builds it (default byte limits), with a 30 s budget so the old client ends too. */
function client(): PlatformClient {
  return new PlatformClient({ baseUrl: sim.url, apiKey: sim.keys.api, adminKey: sim.keys.admin, backoffBaseMs: 5, maxBackoffMs: 50, maxElapsedMs: 30_000 });
}

/** Runs `work` while sampling the JS heap and buffers every 5 ms; returns the highest growth over the start. */
async function peakGrowth<T>(work: () => Promise<T>): Promise<{ result: T; growthBytes: number }> {
  globalThis.gc?.();
  const used = (): number => {
    const m = process.memoryUsage();
    return m.heapUsed + m.arrayBuffers;
  };
  const start = used();
  let peak = start;
  const timer = setInterval(() => (peak = Math.max(peak, used())), 5);
  try {
    const result = await work();
    peak = Math.max(peak, used());
    return { result, growthBytes: peak - start };
  } finally {
    clearInterval(timer);
  }
}

const JOB_ENDPOINTS: Array<[job: string, endpoint: RegExp, args?: Record<string, string>]> = [
  ['apps', /^\/v1\/serverless\/apps$/],
  ['usage', /^\/v1\/serverless\/usage$/],
  ['requests', /^\/v1\/serverless\/requests\/by-endpoint$/],
  ['analytics', /^\/v1\/serverless\/analytics$/],
  ['events', /\/events$/],
  ['revisions', /\/revisions$/],
  ['runners', /\/runners\/history$/],
  ['queue', /\/queue$/],
  ['runner-metrics', /^\/metrics\/runners\//],
  ['models', /^\/v1\/models\/usage$/],
  ['models', /^\/v1\/models\/pricing$/],
  ['models', /^\/v1\/models\/billing-events$/],
  ['models', /^\/v1\/models$/],
  ['logs', /^\/v1\/serverless\/logs\/history$/],
];

describe('an endless answer on every collector endpoint (issue 49.2)', () => {
  for (const [job, endpoint, args] of JOB_ENDPOINTS) {
    it(`${job}: ${endpoint.source}`, async () => {
      const platform = client();
      sim.setEndless(endpoint);
      try {
        const { result, growthBytes } = await peakGrowth(() => runJob(rt, sim, job, args ?? {}, { platform }));
        expect(growthBytes).toBeLessThan(GROWTH_LIMIT_BYTES);
        growth.push(`${job} ${endpoint.source}: ${(growthBytes / 1e6).toFixed(1)} MB`);
        // The call is counted as failed: the job fails naming it, or ends ok having noted it.
        expect(`${result.error} ${result.note ?? ''}`).toMatch(/over its limit of \d+ bytes/);
      } finally {
        sim.setEndless(null);
        await platform.close();
      }
    }, 60_000);
  }

  it('the platform /metrics scrape', async () => {
    const platform = client();
    sim.setEndless(/^\/metrics$/);
    try {
      const [target] = scrapeTargets(testConfig({ SVC_API_KEY: sim.keys.api, SVC_BASE_URL: sim.url }), { baseUrl: sim.url, apiKey: sim.keys.api, client: platform });
      const { result, growthBytes } = await peakGrowth(() => scrapeTarget(target).then(() => 'scraped', (err: Error) => err.message));
      expect(growthBytes).toBeLessThan(GROWTH_LIMIT_BYTES);
      expect(result).toMatch(/over its limit of \d+ bytes/);
    } finally {
      sim.setEndless(null);
      await platform.close();
    }
  }, 60_000);

  it('the live log stream: an event without end drops the stream, which is opened again', async () => {
    const platform = client();
    sim.setEndless(/^\/v1\/serverless\/logs\/stream$/);
    const stop = new AbortController();
    const drops: string[] = [];
    try {
      const { growthBytes } = await peakGrowth(() =>
        followLogStream(platform, {
          filters: {},
          signal: stop.signal,
          backoffBaseMs: 5,
          onRecord: () => undefined,
          onState: (s) => {
            if (s.kind === 'dropped') drops.push(s.reason);
            if (drops.length >= 2) stop.abort();
          },
        }),
      );
      expect(growthBytes).toBeLessThan(GROWTH_LIMIT_BYTES);
      expect(drops[0]).toMatch(/an event longer than \d+ bytes/);
    } finally {
      stop.abort();
      sim.setEndless(null);
      await platform.close();
    }
  }, 60_000);
});
