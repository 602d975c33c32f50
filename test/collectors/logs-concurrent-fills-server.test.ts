// Issue 28.2 in server mode (the test ClickHouse HTTP endpoint): history fills racing over one span store each
// record once.
import { afterAll, beforeAll, describe, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import type { Runtime } from '../../src/runtime.js';
import { openTestRuntime, closeRuntime, processDataDir, tempDataDir } from '../support/store.js';
import { startClickHouseHttp, type ClickHouseHttp } from '../support/clickhouse-http.js';
import { NOW, runRacingFills, expectOneRowPerRecord, expectCollapsedRows } from './concurrent-fills.js';

let ch: ClickHouseHttp;
let rt: Runtime;
let sim: Sim;
beforeAll(async () => {
  ch = await startClickHouseHttp({ dataDir: processDataDir() });
  rt = await openTestRuntime({ LOG_DRAIN_SECRET: undefined, CLICKHOUSE_URL: ch.url, DATA_DIR: tempDataDir() });
  sim = await startSim({ seed: 28, now: NOW, apps: 4, days: 3 });
});
afterAll(async () => {
  await sim?.close();
  if (rt) await closeRuntime(rt);
  await ch?.close();
});

describe('history fills racing over one span (server mode)', () => {
  it('two `collect logs --from 2026-11-19 --to 2026-11-20` at once: one row per record', async () => {
    await runRacingFills(rt, sim, { from: '2026-11-19', to: '2026-11-20' }, { from: '2026-11-19', to: '2026-11-20' });
    const n = await expectOneRowPerRecord(rt, sim, '2026-11-19T00:00:00.000Z', '2026-11-20T00:00:00.000Z');
    await expectCollapsedRows(rt, '2026-11-19T00:00:00.000Z', '2026-11-20T00:00:00.000Z', n);
  });

  it('the scheduled logs job beside `collect logs --from 2026-11-20 --to 2026-11-21`: one row per record', async () => {
    await runRacingFills(rt, sim, { 'settle-minutes': '0' }, { from: '2026-11-20', to: '2026-11-21' });
    const n = await expectOneRowPerRecord(rt, sim, '2026-11-20T00:00:00.000Z', NOW);
    await expectCollapsedRows(rt, '2026-11-20T00:00:00.000Z', NOW, n);
  });
});
