// `tallyhouse report efficiency --month`: bad input exits 2 before anything opens; a month with nothing collected
// exits 1 naming what fills it; a collected month prints the per-day rows, whose busy + idle + draining add up to
// the simulator's usage cost of each app and day (oracle: the simulator's truth).
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { startSim } from '../../src/sim/index.js';
import { parseScenario } from '../../src/sim/scenario.js';
import { decimalToScaled } from '../../src/values.js';
import { runCli } from '../support/process.js';
import { closeRuntime, openTestRuntime, testConfig } from '../support/store.js';
import { runJob } from '../support/jobs.js';

describe('tallyhouse report efficiency', () => {
  it('exits 2 on a bad month, 1 on a month with nothing collected', async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'th-eff-')), 'data');
    const bad = runCli(['report', 'efficiency', '--month', '2026-13'], { DATA_DIR: dataDir });
    expect((await bad.exited).code).toBe(2);
    expect(bad.stderr()).toMatch(/^tallyhouse report efficiency: --month: expected YYYY-MM/);
    expect(existsSync(dataDir)).toBe(false);
    const empty = runCli(['report', 'efficiency', '--month', '2025-04'], { DATA_DIR: dataDir });
    expect((await empty.exited).code).toBe(1);
    expect(empty.stderr()).toMatch(/^tallyhouse report efficiency: no usage stored for 2025-04 in UTC; run `tallyhouse collect usage/);
  });

  it('prints busy, idle and draining cost per day, app and machine type that add up to the usage cost', async () => {
    const sim = await startSim({ seed: 5, now: '2026-11-21T12:00:00Z', days: 3, apps: 6 });
    const rt = await openTestRuntime();
    try {
      for (const job of ['apps', 'usage', 'runners']) expect((await runJob(rt, sim, job, { from: '2026-11-18', to: '2026-11-22', timezone: 'UTC' })).status).toBe('ok');
    } finally {
      await closeRuntime(rt);
    }
    const run = runCli(['report', 'efficiency', '--month', '2026-11'], { DATA_DIR: testConfig().DATA_DIR });
    expect((await run.exited).code, run.stderr()).toBe(0);
    const rows = parseCsv(run.stdout(), { columns: true }) as Array<Record<string, string>>;
    const usage = sim.truth.usage({ from: '2026-11-18', to: '2026-11-22', timeframe: 'day' });
    expect(usage.length).toBeGreaterThan(5);
    for (const u of usage.filter((x) => !x.is_surge)) {
      const date = u.bucket!.slice(0, 10);
      const expected = usage.filter((x) => x.app === u.app && x.machine_type === u.machine_type && x.bucket === u.bucket).reduce((a, x) => a + BigInt(x.cost_total_nanos) * 1000n, 0n);
      const r = rows.find((x) => x.app === u.app && x.machine_type === u.machine_type && x.date === date)!;
      expect(r, `${u.app} ${date}`).toBeDefined();
      const sum = ['busy_cost', 'idle_cost', 'draining_cost'].reduce((a, c) => a + decimalToScaled(r[c], 12), 0n);
      expect(sum, `${u.app} ${u.machine_type} ${date}`).toBe(expected);
    }
    await sim.close();
  });

  it('--hints includes raise_max_concurrency where scheduling failures are frequent, with its evidence (issue 50.7)', async () => {
    const NOW = '2026-11-21T12:00:00Z';
    const probe = await startSim({ seed: 5, now: NOW, days: 3, apps: 6 });
    const app = probe.truth.apps().find((a) => a.owned_by_caller)!;
    await probe.close();
    const sim = await startSim({ seed: 5, now: NOW, days: 3, apps: 6, scenario: parseScenario({ events: [{ kind: 'errors', target: app.endpoint_id, from: '2026-11-19T00:00:00Z', error_rate: 0.6 }] }) });
    const rt = await openTestRuntime();
    const requests = [...new Map(sim.truth.requestList({ endpointId: app.endpoint_id, from: '2026-11-20T12:00:00Z', to: NOW }).map((r) => [r.request_id, r])).values()];
    try {
      for (const job of ['apps', 'requests']) expect((await runJob(rt, sim, job)).status).toBe('ok');
      expect((await runJob(rt, sim, 'usage', { from: '2026-11-18', to: '2026-11-22', timezone: 'UTC' })).status).toBe('ok');
      // The queue webhooks of the app's requests, as the receiver stores them (its own tests cover the receiving).
      await rt.store.client.insert({
        table: 'webhook_deliveries',
        format: 'JSONEachRow',
        values: requests.map((r) => ({
          request_id: r.request_id, gateway_request_id: r.gateway_request_id, user_id: 'usr_1', status: r.status_code < 300 ? 'OK' : 'ERROR',
          error: r.status_code < 300 ? '' : `Request failed with status code ${r.status_code}`, error_types: r.status_code < 300 ? [] : [r.error_type ?? 'internal_server_error'],
          payload_error: '', signed_at: '2026-11-21 12:00:00', received_at: '2026-11-21 12:00:00.000', raw: '{}',
        })),
      });
    } finally {
      await closeRuntime(rt);
    }
    const failures = requests.filter((r) => r.error_type === 'runner_scheduling_failure');
    expect(failures.length).toBeGreaterThanOrEqual(3);
    const run = runCli(['report', 'efficiency', '--month', '2026-11', '--hints'], { DATA_DIR: testConfig().DATA_DIR });
    expect((await run.exited).code, run.stderr()).toBe(0);
    const hint = (parseCsv(run.stdout(), { columns: true }) as Array<Record<string, string>>).find((h) => h.kind === 'raise_max_concurrency' && h.app === app.name)!;
    expect(hint).toBeDefined();
    expect([hint.scheduling_failures, hint.requests, hint.max_concurrency, hint.last_seen].map(String)).toEqual([
      String(failures.length), String(requests.length), String(app.settings.max_concurrency),
      new Date(Math.max(...failures.map((r) => Date.parse(r.ended_at)))).toISOString(),
    ]);
    expect(Number(hint.share_of_requests)).toBeCloseTo(failures.length / requests.length, 12);
    await sim.close();
  });
});
