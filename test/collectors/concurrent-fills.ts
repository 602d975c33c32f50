// Issue 28.2: two history fills of one span (two `collect logs --from --to`, the scheduled logs job beside a CLI
// fill, two instances given one COLLECTOR_SHARD) each check what is stored, then insert. The race is made certain,
// not left to timing: a fill's check of an app's span waits until the other fill has checked that app as often
// (or has finished), so both checks run before either insert. Then the store must hold every record of the range
// once, as the query API reads it, against the simulator's truth (keys written apart from the mapping).
import { AsyncLocalStorage } from 'node:async_hooks';
import { expect } from 'vitest';
import type { Runtime } from '../../src/runtime.js';
import type { Sim } from '../../src/sim/index.js';
import { searchLogs, storedLogKeys } from '../../src/store/tables/logs.js';
import { runJob } from '../support/jobs.js';
import { queryRows } from '../support/store.js';
import type { RawJobArgs } from '../../src/collectors/job.js';

export const NOW = '2026-11-21T12:00:00Z';

/** Runs two logs job runs at once, each check paired with the other run's check of the same app. */
export async function runRacingFills(rt: Runtime, sim: Sim, a: RawJobArgs, b: RawJobArgs): Promise<void> {
  const fill = new AsyncLocalStorage<'a' | 'b'>();
  const checks = { a: new Map<string, number>(), b: new Map<string, number>() };
  const done = { a: false, b: false };
  const waiters: Array<() => void> = [];
  const wake = () => waiters.splice(0).forEach((w) => w());
  const client = rt.store.client;
  const query = client.query.bind(client);
  client.query = (async (params: Parameters<typeof client.query>[0]) => {
    const me = fill.getStore();
    if (me && params.query === storedLogKeys.sql) {
      const other = me === 'a' ? 'b' : 'a';
      const app = JSON.stringify((params.query_params as { apps: string[] }).apps);
      const n = (checks[me].get(app) ?? 0) + 1;
      checks[me].set(app, n);
      wake();
      while (!done[other] && (checks[other].get(app) ?? 0) < n) await new Promise<void>((r) => waiters.push(r));
    }
    return query(params);
  }) as typeof client.query;
  const run = (who: 'a' | 'b', args: RawJobArgs) =>
    fill.run(who, async () => {
      try {
        return await runJob(rt, sim, 'logs', args);
      } finally {
        done[who] = true;
        wake();
      }
    });
  try {
    const [ra, rb] = await Promise.all([run('a', a), run('b', b)]);
    expect(ra.status, ra.error).toBe('ok');
    expect(rb.status, rb.error).toBe('ok');
    // Both runs checked some app's span while the other had checked it too: the race happened.
    const paired = [...checks.a.keys()].filter((app) => checks.b.has(app));
    expect(paired.length).toBeGreaterThan(0);
  } finally {
    client.query = query as typeof client.query;
  }
}

/** A truth record's identity (time to the ms, app, request, worker, message), from the record's own fields. */
function truthKey(r: Record<string, unknown>): string {
  const ts = String(r.timestamp);
  return JSON.stringify([`${ts.slice(0, 10)} ${ts.slice(11, 23)}`, r.svc_app_name ?? '', r.svc_request_id ?? '', r.svc_worker_id ?? '', r.message]);
}

/** The lines in [fromIso, toIso) as GET /api/v1/logs reads them (searchLogs), and as a count. */
export async function expectOneRowPerRecord(rt: Runtime, sim: Sim, fromIso: string, toIso: string): Promise<number> {
  const truth = sim.truth.logRecords({ from: fromIso, to: toIso }).map(truthKey).sort();
  expect(truth.length).toBeGreaterThan(500);
  const text = (iso: string) => iso.replace('T', ' ').replace('Z', '');
  const found = await searchLogs(rt.store, {
    from: text(fromIso), to: text(toIso), apps: [], min_severity: 0, request_id: '', contains: '',
    has_cursor: 0, after_t: '1970-01-01 00:00:00.000', after_b: '00000000-0000-0000-0000-000000000000', after_l: 0, limit: 10_000_000,
  });
  const stored = found.map((r) => JSON.stringify([r.timestamp, r.app, r.request_id, r.worker, r.message])).sort();
  expect({ rows: stored.length, distinct: new Set(stored).size }).toEqual({ rows: truth.length, distinct: truth.length });
  expect(stored).toEqual(truth);
  return truth.length;
}

/** After the background merges have run (forced): one physical row per record too. */
export async function expectCollapsedRows(rt: Runtime, fromIso: string, toIso: string, records: number): Promise<void> {
  await rt.store.client.command({ query: 'OPTIMIZE TABLE logs FINAL' });
  const [row] = await queryRows<{ n: string }>(
    rt,
    "SELECT count() AS n FROM logs WHERE timestamp >= parseDateTime64BestEffort({from:String}, 3, 'UTC') AND timestamp < parseDateTime64BestEffort({to:String}, 3, 'UTC')",
    { from: fromIso, to: toIso },
  );
  expect(Number(row.n)).toBe(records);
}
