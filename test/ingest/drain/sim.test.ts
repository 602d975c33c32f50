// Acceptance 1: the simulator pushes 100,000 drain lines, 1% malformed; the store holds exactly the valid lines
// (every field of every line compared with the simulator's record of what it sent) and ingest_rejects exactly
// the malformed ones, each with a reason naming what is wrong.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../../src/sim/index.js';
import { toDateTime64 } from '../../../src/values.js';
import { startDrainService, sentLines, storedLines, SECRET, type DrainService } from './helpers.js';
import { queryRows } from '../../support/store.js';

let d: DrainService;
let sim: Sim;

beforeAll(async () => {
  d = await startDrainService();
  sim = await startSim({ seed: 7, drainUrl: d.drainUrl, drainSecret: SECRET });
});
afterAll(async () => {
  await sim?.close();
  await d?.close();
});

// wall-clock: the drain stamps received rows with the machine's clock; the test reads what arrived after it
const nowText = () => toDateTime64(Date.now() - 1);

describe('the simulator pushes 100,000 lines, 1% malformed', () => {
  it('stores exactly the valid lines, field by field, and exactly the malformed ones as rejects with a reason', async () => {
    const since = nowText();
    const result = await sim.drain.push({ lines: 100_000, batchSize: 1000, malformedRate: 0.01, concurrency: 4 });
    expect(result.linesSent).toBe(100_000);
    expect(result.linesAcknowledged).toBe(100_000);
    const sent = sentLines(result.batches);
    expect(sent.malformed.length).toBeGreaterThan(700);
    expect(sent.malformed.length).toBeLessThan(1300);
    expect(sent.valid.length + sent.malformed.length).toBe(100_000);

    await d.replayer.whenReplayed();
    const got = await storedLines(d.service, since);
    expect(got.valid.length).toBe(sent.valid.length);
    expect(got.valid).toEqual(sent.valid);
    expect(got.malformed).toEqual(sent.malformed);
    for (const reason of got.reasons) expect(reason).toMatch(/^(not_json|not_object|missing_timestamp|missing_message|missing_level|bad_timestamp): \S/);
    const kinds = new Set(got.reasons.map((r) => r.split(':')[0]));
    expect(kinds.size).toBe(6);

    // Once each: every (batch, line) is one row.
    const [dup] = await queryRows<{ rows: string; distinct: string }>(
      d.service,
      'SELECT count() AS rows, uniqExact(batch_id, line) AS distinct FROM logs WHERE received_at >= {since:DateTime64(3, \'UTC\')}',
      { since },
    );
    expect(Number(dup.rows)).toBe(sent.valid.length);
    expect(Number(dup.distinct)).toBe(sent.valid.length);
  });

  it('gzip batches (signed over the compressed bytes) and the named queries read them back', async () => {
    const since = nowText();
    const result = await sim.drain.push({ lines: 5_000, batchSize: 2500, malformedRate: 0.02, gzip: true, apps: [sim.world.apps.find((a) => a.ownedByCaller)!.name] });
    expect(result.linesAcknowledged).toBe(result.linesSent);
    const sent = sentLines(result.batches);
    await d.replayer.whenReplayed();
    const got = await storedLines(d.service, since);
    expect(got.valid).toEqual(sent.valid);
    expect(got.malformed).toEqual(sent.malformed);

    const { appLogs, requestLogs } = await import('../../../src/store/tables/logs.js');
    const first = JSON.parse(result.batches[0].body.split('\n').find((l, i) => !result.batches[0].malformed.some((m) => m.line === i))!) as Record<string, string>;
    const ofApp = await appLogs(d.service.store, { app: first.svc_app_name, from: '2000-01-01 00:00:00', to: '2100-01-01 00:00:00', limit: 100_000 });
    expect(ofApp.length).toBeGreaterThanOrEqual(sent.valid.length);
    const ofRequest = await requestLogs(d.service.store, { request_id: first.svc_request_id });
    expect(ofRequest.length).toBeGreaterThan(0);
    expect(ofRequest.every((r) => r.request_id === first.svc_request_id)).toBe(true);
    expect(ofRequest.map((r) => r.message)).toContain(first.message);
  });
});
