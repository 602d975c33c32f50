// Acceptance 3: the store (a ClickHouse HTTP endpoint) stops while the simulator keeps pushing. Every request
// is answered with a 2xx (none fails, none is skipped), and once the store is back it holds every accepted line
// exactly once. How fast the answers come during an outage is a duration: `npm run bench -- drain` measures it
// (answer latency percentiles); a test on a shared machine asserts only the behaviour (CONTRIBUTING.md, Tests).
// The outage lasts the 60 s (answers never wait for the store; the spool absorbs until
// LOG_DRAIN_SPOOL_MAX_BYTES, tested below with a small limit).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim, type DrainBatch } from '../../../src/sim/index.js';
import { toDateTime64 } from '../../../src/values.js';
import { startClickHouseHttp, type ClickHouseHttp } from '../../support/clickhouse-http.js';
import { processDataDir, queryRows, tempDataDir } from '../../support/store.js';
import { startDrainService, sentLines, storedLines, postSigned, line, SECRET, type DrainService } from './helpers.js';

const OUTAGE_MS = 60_000;
let ch: ClickHouseHttp;
let sim: Sim;

beforeAll(async () => {
  ch = await startClickHouseHttp({ dataDir: processDataDir() });
});
afterAll(async () => {
  await sim?.close();
  await ch?.close();
});

describe('the store is down for a while', () => {
  it('every request is answered (2xx), the spool holds what the store has not, and afterwards the store holds every accepted line exactly once', async () => {
    const d = await startDrainService({ CLICKHOUSE_URL: ch.url, CLICKHOUSE_CONNECT_TIMEOUT_MS: '5000', DATA_DIR: tempDataDir(), WRITER_FLUSH_INTERVAL_MS: '200' });
    sim = await startSim({ seed: 11, drainUrl: d.drainUrl, drainSecret: SECRET, drainTimeoutMs: 60_000 });
    try {
      // wall-clock: the drain stamps received rows with the machine's clock; the outage is timed, not asserted
      const since = toDateTime64(Date.now() - 1);
      const batches: DrainBatch[] = [];
      const now = sim.clock.now().getTime();
      let window = 0;
      // Disjoint 5-minute windows going back from "now": every batch body is new.
      const pushWindow = async () => {
        const to = now - window * 300_000;
        window++;
        const r = await sim.drain.push({ from: to - 300_000, to, batchSize: 500, malformedRate: 0.01, concurrency: 2 });
        batches.push(...r.batches);
      };
      await pushWindow();
      await d.replayer.whenReplayed();

      await ch.stop();
      const beforeOutage = batches.length;
      // wall-clock: the drain stamps received rows with the machine's clock; the outage is timed, not asserted
      const outageEnds = Date.now() + OUTAGE_MS;
      let duringOutage = 0;
      // wall-clock: the drain stamps received rows with the machine's clock; the outage is timed, not asserted
      while (Date.now() < outageEnds) {
        await pushWindow();
        duringOutage++;
        await new Promise((r) => setTimeout(r, 50)); // a steady stream rather than a flood: keeps the test short
      }
      // The spool gauges show what the store has not got: every valid line the simulator sent during the outage.
      const during = await (await fetch(`${d.url}/metrics`)).text();
      const outageLines = sentLines(batches.slice(beforeOutage)).valid.length;
      expect(outageLines).toBeGreaterThan(0);
      expect(Number(/^tallyhouse_drain_spool_lines (\d+)$/m.exec(during)?.[1])).toBe(outageLines);
      expect(Number(/^tallyhouse_drain_spool_bytes (\d+)$/m.exec(during)?.[1])).toBeGreaterThan(0);
      await ch.start();
      await pushWindow();

      expect(duringOutage).toBeGreaterThan(3);
      // Acknowledged = answered 2xx; none failed, none skipped.
      expect(batches.filter((b) => !b.acknowledged).map((b) => `${b.status} ${b.error}`)).toEqual([]);
      expect(sim.drain.disabled).toBe(false);

      await d.replayer.whenReplayed();
      const sent = sentLines(batches);
      const got = await storedLines(d.service, since);
      expect(got.valid.length).toBe(sent.valid.length);
      expect(got.valid).toEqual(sent.valid);
      expect(got.malformed).toEqual(sent.malformed);
      const [once] = await queryRows<{ rows: string; distinct: string }>(
        d.service,
        "SELECT count() AS rows, uniqExact(batch_id, line) AS distinct FROM logs WHERE received_at >= {since:DateTime64(3, 'UTC')}",
        { since },
      );
      expect([Number(once.rows), Number(once.distinct)]).toEqual([sent.valid.length, sent.valid.length]);
      // The outage was seen (the replayer's inserts failed), and the spool is empty again.
      const metrics = await (await fetch(`${d.url}/metrics`)).text();
      expect(Number(/^tallyhouse_drain_spool_lines (\d+)$/m.exec(metrics)?.[1])).toBe(0);
      expect(Number(/^tallyhouse_drain_replay_failures_total\{kind="transient"\} (\d+)$/m.exec(metrics)![1])).toBeGreaterThan(0);
    } finally {
      await d.close();
      await sim.close();
    }
  }, OUTAGE_MS + 120_000);

  it('at LOG_DRAIN_SPOOL_MAX_BYTES it answers 503 with Retry-After, and accepts again once the store caught up', async () => {
    const d = await startDrainService({
      CLICKHOUSE_URL: ch.url,
      CLICKHOUSE_CONNECT_TIMEOUT_MS: '5000',
      DATA_DIR: tempDataDir(),
      LOG_DRAIN_SPOOL_MAX_BYTES: String(200 * 1024),
      WRITER_FLUSH_INTERVAL_MS: '100',
    });
    try {
      // wall-clock: the drain stamps received rows with the machine's clock; the outage is timed, not asserted
      const since = toDateTime64(Date.now() - 1);
      await ch.stop();
      const batch = (k: number) => Array.from({ length: 100 }, (_, i) => line({ message: `full ${k} ${i} ${'x'.repeat(200)}` })).join('\n');
      let k = 0;
      let full: Awaited<ReturnType<typeof postSigned>> | undefined;
      let accepted = 0;
      for (; k < 100 && !full; k++) {
        const res = await postSigned(d.drainUrl, batch(k));
        if (res.status === 503) full = res;
        else {
          expect(res.status).toBe(200);
          accepted += res.body.accepted as number;
        }
      }
      expect(full).toBeDefined();
      expect(full!.headers['retry-after']).toBe('30');
      expect(full!.body.detail).toMatch(/spool is full \(LOG_DRAIN_SPOOL_MAX_BYTES 204800 bytes\)/);
      expect(d.spool.bytes).toBeLessThanOrEqual(200 * 1024);
      await ch.start();
      await d.replayer.whenReplayed();
      const again = await postSigned(d.drainUrl, batch(k));
      expect(again.status).toBe(200);
      accepted += again.body.accepted as number;
      await d.replayer.whenReplayed();
      const [r] = await queryRows<{ n: string }>(d.service, "SELECT count() AS n FROM logs WHERE received_at >= {since:DateTime64(3, 'UTC')}", { since });
      expect(Number(r.n)).toBe(accepted);
    } finally {
      await ch.start();
      await d.close();
    }
  });
});
