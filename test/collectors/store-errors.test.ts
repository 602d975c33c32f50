// A permanent store error (here: the requests table is gone, UNKNOWN_TABLE) fails the job that met it, with the
// reason in job_runs, and never the process: the drain beside it still answers. vitest fails the run on any
// unhandled rejection, which is how the old code crashed the service.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import { runJob } from '../support/jobs.js';
import { queryRows } from '../support/store.js';
import { line, postSigned, startDrainService, type DrainService } from '../ingest/drain/helpers.js';

let sim: Sim;
let drain: DrainService;

beforeAll(async () => {
  sim = await startSim({ seed: 31, apps: 10, now: '2026-11-21T12:00:00Z', days: 3, requestsPerHour: 200 });
  drain = await startDrainService({ WRITER_MAX_ROWS: '50' });
  const apps = await runJob(drain.service, sim, 'apps');
  expect(apps.status, apps.error).toBe('ok');
});

afterAll(async () => {
  await drain?.close();
  await sim?.close();
});

describe('a permanent store error in a collector', () => {
  it('fails the requests job with the reason; the process and the drain carry on', async () => {
    // Reads of requests still work; every insert into it fails with UNKNOWN_TABLE (a materialized view whose
    // target table is gone), as after a botched manual change on the server.
    for (const query of [
      'CREATE TABLE gone_sink (request_id String) ENGINE = MergeTree ORDER BY tuple()',
      'CREATE MATERIALIZED VIEW gone_mv TO gone_sink AS SELECT request_id FROM requests',
      'DROP TABLE gone_sink SYNC',
    ]) {
      await drain.service.store.client.command({ query, clickhouse_settings: { check_referential_table_dependencies: 0, check_table_dependencies: 0 } });
    }
    const run = await runJob(drain.service, sim, 'requests', { from: '2026-11-20T00:00:00Z', to: '2026-11-21T00:00:00Z' });
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/UNKNOWN_TABLE|requests/);
    await drain.service.writer.flush();
    const [row] = await queryRows<{ status: string; error: string }>(
      drain.service,
      "SELECT status, error FROM job_runs WHERE job = 'requests' ORDER BY finished_at DESC LIMIT 1",
    );
    expect(row.status).toBe('failed');
    expect(row.error).toMatch(/UNKNOWN_TABLE|requests/);
    // Several batches were in flight when the store refused them: wait a turn for any stray rejection to surface.
    await new Promise((r) => setImmediate(r));
    const answer = await postSigned(drain.drainUrl, `${line({ message: 'still here' })}\n`);
    expect(answer.status).toBe(200);
  });
});

describe('RequestSink', () => {
  it('a batch the store refuses while the next page is being fetched fails the chunk, not the process', async () => {
    const { RequestSink } = await import('../../src/collectors/requests.js');
    const refused = Object.assign(new Error('Table tallyhouse.requests does not exist'), { code: '60', type: 'UNKNOWN_TABLE' });
    const writer = {
      // The store answers a moment later (a macrotask), while the collector is waiting for the platform.
      insertLines: () => new Promise((_, reject) => setTimeout(() => reject(refused), 5)),
      insertEncodedLines: () => new Promise((_, reject) => setTimeout(() => reject(refused), 5)),
      reject: () => Promise.resolve({ written: 0, rejected: 0 }),
      flush: () => Promise.resolve(),
    };
    const sink = new RequestSink(writer as never, 2, 1_000_000);
    await sink.add(['{"a":1}', '{"a":2}'], []);
    await new Promise((r) => setTimeout(r, 30)); // "fetching the next page": the batch is refused meanwhile
    await expect(sink.add(['{"a":3}', '{"a":4}'], [])).rejects.toBe(refused);
  });
});
