// Issue 16, acceptance 1 without a drain: with no drain configured at all, the logs job stores every record of
// the period from history alone (checked field by field against the truth), and a later run adds only the new ones.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import type { Runtime } from '../../src/runtime.js';
import { openTestRuntime, closeRuntime, queryRows } from '../support/store.js';
import { runJob } from '../support/jobs.js';

const NOW = '2026-11-21T12:00:00Z';
let rt: Runtime;
let sim: Sim;

beforeAll(async () => {
  rt = await openTestRuntime({ LOG_DRAIN_SECRET: undefined });
  sim = await startSim({ seed: 22, now: NOW, apps: 10, days: 3, slowMs: 2500 });
});
afterAll(async () => {
  await sim?.close();
  await closeRuntime(rt);
});

// Written apart from the drain's mapping: a record's (time, app, request, level, message, extra keys).
function expected(r: Record<string, unknown>): string {
  const ts = String(r.timestamp);
  const named = ['timestamp', 'level', 'message', 'svc_app_name', 'svc_app_id', 'svc_request_id', 'svc_job_id', 'svc_endpoint', 'svc_node_id', 'svc_worker_id', 'svc_source', 'svc_isolate_source'];
  const extra = Object.entries(r).filter(([k]) => !named.includes(k)).sort();
  return JSON.stringify([`${ts.slice(0, 10)} ${ts.slice(11, 23)}`, r.svc_app_name, r.svc_request_id ?? '', r.svc_worker_id ?? '', r.level, r.message, extra]);
}

async function stored(from: string, to: string): Promise<string[]> {
  const rows = await queryRows<{ ts: string; app: string; request_id: string; worker: string; level: string; message: string; attributes: Record<string, string>; origin: string }>(
    rt,
    `SELECT toString(timestamp) AS ts, app, request_id, worker, level, message, attributes, origin FROM logs
     WHERE timestamp >= parseDateTime64BestEffort({from:String}, 3, 'UTC') AND timestamp < parseDateTime64BestEffort({to:String}, 3, 'UTC')`,
    { from, to },
  );
  for (const r of rows) expect(r.origin).toBe('history');
  return rows.map((r) => JSON.stringify([r.ts, r.app, r.request_id, r.worker, r.level, r.message, Object.entries(r.attributes).sort()])).sort();
}

describe('logs from history alone (no drain configured)', () => {
  it('stores every record of the last day, then only the new ones', async () => {
    const first = await runJob(rt, sim, 'logs', { 'settle-minutes': '0' });
    expect(first.status, first.error).toBe('ok');
    const from = new Date(sim.clock.now().getTime() - 24 * 3_600_000).toISOString();
    let to = sim.clock.now().toISOString();
    let truth = sim.truth.logRecords({ from, to }).map(expected).sort();
    expect(truth.length).toBeGreaterThan(1000);
    expect(await stored(from, to)).toEqual(truth);

    sim.clock.advance(90 * 60_000);
    const second = await runJob(rt, sim, 'logs', { 'settle-minutes': '0' });
    expect(second.status, second.error).toBe('ok');
    to = sim.clock.now().toISOString();
    truth = sim.truth.logRecords({ from, to }).map(expected).sort();
    expect(await stored(from, to)).toEqual(truth);
  });
});
