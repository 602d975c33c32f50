// One record, one copy, when the drain and logs history both bring it (found by the soak, test/soak): a record the
// logs job filled from history while the drain's copy waited in a spool (an outage, a restart, another instance)
// is stored twice unless the later writer removes the history copy. Both orders are checked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../../src/runtime.js';
import { LogRowBatch } from '../../../src/collectors/logs.js';
import { collectorRejects } from '../../../src/collectors/common.js';
import { storedLogKeys } from '../../../src/store/tables/logs.js';
import { startDrainService, postSigned, line, type DrainService } from './helpers.js';
import { queryRows, refuseLogDeletes } from '../../support/store.js';

let d: DrainService;
beforeAll(async () => {
  d = await startDrainService();
});
afterAll(async () => {
  await d?.close();
});

/** Lines of one app two days ago (older than the replayer's freshness minute), one per second. */
const lines = (app: string, n: number) =>
  Array.from({ length: n }, (_, i) => JSON.parse(line({ svc_app_name: app, timestamp: `2026-11-19T08:00:${String(i).padStart(2, '0')}.250Z`, message: `record ${i}`, svc_worker_id: 'w-1' })) as Record<string, unknown>);

/** Stores lines as the logs job does (LogRowBatch: check what is stored, insert the rest, then drop copies). */
async function fillFromHistory(rt: Pick<Runtime, 'store'>, records: Array<Record<string, unknown>>, seed: string): Promise<number> {
  const batch = new LogRowBatch('history', seed, collectorRejects('logs'));
  for (const r of records) batch.add(r);
  return batch.commit({ runtime: rt as Runtime });
}

const copies = (app: string) =>
  queryRows<{ message: string; n: string; origins: string[] }>(
    d.service,
    'SELECT message, count() AS n, groupArray(origin) AS origins FROM logs WHERE app = {app:String} GROUP BY message ORDER BY message',
    { app },
  );

describe('a record that came by the drain and by history', () => {
  it('history first, then the drain spool replays the same old lines: the drain copy stays, the history copy goes', async () => {
    const records = lines('copies-a', 20);
    // The logs job filled the first ten while the drain's copies waited in a spool.
    expect(await fillFromHistory(d.service, records.slice(0, 10), 'a')).toBe(10);
    const res = await postSigned(d.drainUrl, records.map((r) => JSON.stringify(r)).join('\n'));
    expect(res.status).toBe(200);
    await d.replayer.whenReplayed();

    const got = await copies('copies-a');
    expect(got).toHaveLength(20);
    expect(got.filter((r) => Number(r.n) !== 1).map((r) => `${r.message}: ${r.origins.join(',')}`)).toEqual([]);
    expect(new Set(got.flatMap((r) => r.origins))).toEqual(new Set(['drain']));
  });

  it('the drain stores between the history fill\'s check and its insert: the fill drops its own copies', async () => {
    const records = lines('copies-b', 12);
    const res = await postSigned(d.drainUrl, records.slice(0, 6).map((r) => JSON.stringify(r)).join('\n'));
    expect(res.status).toBe(200);
    await d.replayer.whenReplayed();
    // The fill's check ran before the drain's insert: it saw nothing stored (its query is made to find nothing).
    const client = d.service.store.client;
    const blind = new Proxy(client, {
      get(target, prop, receiver) {
        if (prop !== 'query') return Reflect.get(target, prop, receiver);
        return (params: Parameters<typeof client.query>[0]) =>
          target.query(params.query === storedLogKeys.sql ? { ...params, query: `${storedLogKeys.sql} AND 0` } : params);
      },
    });
    const stored = await fillFromHistory({ store: { ...d.service.store, client: blind } }, records, 'b');
    expect(stored).toBe(6);

    const got = await copies('copies-b');
    expect(got).toHaveLength(12);
    expect(got.filter((r) => Number(r.n) !== 1).map((r) => `${r.message}: ${r.origins.join(',')}`)).toEqual([]);
    expect(got.filter((r) => r.origins[0] === 'drain')).toHaveLength(6);
  });

  it('a store that refuses the DELETE (no ALTER DELETE grant) does not stop the drain: the lines are stored, the copies kept and counted', async () => {
    const records = lines('copies-c', 8);
    // The copies stay two rows until a background merge collapses them (sql/023): merges wait, so the test sees them.
    await d.service.store.client.command({ query: 'SYSTEM STOP MERGES logs' });
    expect(await fillFromHistory(d.service, records.slice(0, 4), 'c')).toBe(4);
    const refusing = refuseLogDeletes(d.service.store.client);
    try {
      const res = await postSigned(d.drainUrl, records.map((r) => JSON.stringify(r)).join('\n'));
      expect(res.status).toBe(200);
      // Bounded by the test's timeout: a replayer that retried the batch forever would never get here.
      await d.replayer.whenReplayed();
    } finally {
      refusing.restore();
    }
    expect(refusing.refused()).toBe(1);
    expect(d.spool.bytes).toBe(0);
    const got = await copies('copies-c');
    expect(got.map((r) => `${r.message}: ${[...r.origins].sort().join(',')}`)).toEqual([
      ...Array.from({ length: 4 }, (_, i) => `record ${i}: drain,history`),
      ...Array.from({ length: 4 }, (_, i) => `record ${i + 4}: drain`),
    ]);
    const metrics = await (await fetch(`${d.url}/metrics`)).text();
    expect(/^tallyhouse_drain_history_copies_kept_total (\d+)$/m.exec(metrics)?.[1]).toBe('1');
    // Issue 28.2: the copies are rows, not records: reads (FINAL) see each record once, the drain's copy.
    const read = await queryRows<{ message: string; origin: string }>(
      d.service,
      'SELECT message, origin FROM logs FINAL WHERE app = {app:String} ORDER BY message',
      { app: 'copies-c' },
    );
    expect(read).toEqual(Array.from({ length: 8 }, (_, i) => ({ message: `record ${i}`, origin: 'drain' })));
    await d.service.store.client.command({ query: 'SYSTEM START MERGES logs' });
  });
});
