// A first start with real keys (the simulator standing in for the platform): the start-up pass discovers apps and
// runs every collector once, so cost, requests, analytics and runners answer right away, not at each schedule's
// next tick. And JOBS_ENABLED=false runs no job at all, the start-up pass included.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import { runCli } from '../support/process.js';

let sim: Sim;
beforeAll(async () => {
  // The service runs on the wall clock in real mode: the simulated platform's "now" is the same.
  // wall-clock: the service child in real mode runs its jobs on the machine's clock; the simulator and the truth read the same instant
  sim = await startSim({ seed: 21, apps: 12, now: new Date(), days: 40 });
});
afterAll(async () => {
  await sim?.close();
});

const realKeys = () => ({ SVC_BASE_URL: sim.url, SVC_API_KEY: sim.keys.api, SVC_ADMIN_KEY: sim.keys.admin, SCRAPE_SELF: 'false' });

describe('first start with real keys', () => {
  it('the start-up pass fills cost, requests, analytics and runners before any schedule ticks', async () => {
    const serve = runCli(['serve'], { PORT: '0', DATA_DIR: mkdtempSync(join(tmpdir(), 'th-first-')), ...realKeys() });
    try {
      const [, url] = await serve.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)"/);
      await serve.waitFor(/"msg":"start-up pass: apps, /);
      await serve.waitFor(/"msg":"start-up pass done"/, 120_000);
      // wall-clock: the service child in real mode runs its jobs on the machine's clock; the simulator and the truth read the same instant
      const now = new Date();
      const day = (offset: number) => new Date(now.getTime() + offset * 86_400_000).toISOString().slice(0, 10);
      const get = async (path: string) => {
        const res = await fetch(`${url}/api/v1${path}`);
        expect(res.status, path).toBe(200);
        return (await res.json()) as { rows: Array<Record<string, unknown>> };
      };
      const cost = await get(`/cost?from=${day(-40)}&to=${day(1)}&group_by=app`);
      // Every owned app of the simulated account that used machines this month has a cost row.
      const truthApps = new Set(sim.truth.usage({ from: `${day(0).slice(0, 7)}-01`, to: day(1), timezone: 'UTC', timeframe: 'day' }).map((r) => r.app));
      expect(truthApps.size).toBeGreaterThan(0);
      expect(new Set(cost.rows.map((r) => r.app))).toEqual(truthApps);
      // Requests: exactly the truth's requests in the windows the start-up pass asked the platform for (its calls to
      // requests/by-endpoint, as the simulator logged them), all of them inside [yesterday, tomorrow).
      const asked = sim.requestLog().filter((c) => c.path === '/v1/serverless/requests/by-endpoint');
      expect(asked.length).toBeGreaterThan(0);
      const expectedIds = new Set<string>();
      for (const c of asked) {
        for (const endpointId of [c.query.endpoint_id].flat()) {
          for (const r of sim.truth.requestList({ endpointId, from: String(c.query.start), to: String(c.query.end) })) expectedIds.add(r.request_id);
        }
      }
      expect(expectedIds.size).toBeGreaterThan(100);
      const requests = await get(`/cost/requests?from=${day(-1)}&to=${day(1)}`);
      expect(requests.rows.reduce((n, r) => n + Number(r.request_count), 0)).toBe(expectedIds.size);
      const latency = await get(`/latency?from=${new Date(now.getTime() - 86_400_000).toISOString()}&to=${now.toISOString()}`);
      expect(latency.rows.length).toBeGreaterThan(0);
      const runners = await get(`/runners?from=${new Date(now.getTime() - 86_400_000).toISOString()}&to=${now.toISOString()}`);
      expect(runners.rows.length).toBeGreaterThan(0);
    } finally {
      serve.child.kill('SIGTERM');
    }
    expect((await serve.exited).code).toBe(0);
  });

  it('JOBS_ENABLED=false runs no job, not even the start-up pass', async () => {
    const callsBefore = sim.requestLog().length;
    const serve = runCli(['serve'], { PORT: '0', DATA_DIR: mkdtempSync(join(tmpdir(), 'th-nojobs-')), JOBS_ENABLED: 'false', LOG_LEVEL: 'debug', ...realKeys() });
    try {
      const [, url] = await serve.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)"/);
      // The pipeline's own view: no job ever ran.
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(metrics).not.toMatch(/^tallyhouse_job_runs_total\{/m);
      expect(serve.stdout()).not.toMatch(/start-up pass|job started|jobs scheduled/);
      // Nothing asked the platform for anything.
      // No job asks the platform anything; the webhook receiver's source check reads GET /v1/meta (webhook_ip_ranges)
      // whatever JOBS_ENABLED says: it decides who may post, not what is collected.
      expect(sim.requestLog().slice(callsBefore).filter((r) => r.path !== '/v1/meta')).toEqual([]);
    } finally {
      serve.child.kill('SIGTERM');
    }
    expect((await serve.exited).code).toBe(0);
    expect(serve.stdout()).not.toMatch(/"msg":"job started"/);
  });
});
