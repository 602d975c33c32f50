// Acceptance 1: the simulator pushes 100,000 drain lines, 1% malformed; the store holds exactly the valid lines
// (every field of every line compared with the simulator's record of what it sent) and ingest_rejects exactly
// the malformed ones, each with a reason naming what is wrong.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim, type DrainBatch } from '../../src/sim/index.js';
import { formatDateTime64, LABEL_COLUMNS } from '../../src/ingest/drain-lines.js';
import { startDrainService, SECRET, type DrainService } from './helpers.js';
import { queryRows } from '../support/store.js';

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

const COLUMNS = ['app', 'app_id', 'request_id', 'job_id', 'endpoint', 'node', 'worker', 'source', 'isolate_source'] as const;

/** A line as the store should hold it, from the simulator's text: one canonical string per line. */
function expectedRow(text: string, line: number): string {
  const obj = JSON.parse(text) as Record<string, unknown>;
  const row: Record<string, unknown> = { timestamp: formatDateTime64(Date.parse(obj.timestamp as string)), level: obj.level, message: obj.message };
  const attributes: Record<string, string> = {};
  for (const c of COLUMNS) row[c] = '';
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'timestamp' || k === 'level' || k === 'message') continue;
    const column = (LABEL_COLUMNS as Record<string, string>)[k];
    if (column) row[column] = v;
    else attributes[k] = typeof v === 'string' ? v : JSON.stringify(v);
  }
  return canonical({ ...row, attributes, line });
}

function canonical(r: Record<string, unknown>): string {
  const attributes = Object.entries(r.attributes as Record<string, string>).sort(([a], [b]) => a.localeCompare(b));
  return JSON.stringify([r.timestamp, r.level, ...COLUMNS.map((c) => r[c]), r.message, attributes, Number(r.line)]);
}

function sentLines(batches: DrainBatch[]) {
  const valid: string[] = [];
  const malformed: Array<[string, string]> = [];
  for (const b of batches) {
    expect(b.acknowledged, `batch ${b.index}: ${b.status} ${b.error}`).toBe(true);
    const bad = new Map(b.malformed.map((m) => [m.line, m.reason]));
    b.body.split('\n').filter(Boolean).forEach((text, i) => {
      const reason = bad.get(i);
      if (reason) malformed.push([text, reason]);
      else valid.push(expectedRow(text, i + 1));
    });
  }
  return { valid: valid.sort(), malformed: malformed.map((m) => JSON.stringify(m)).sort() };
}

async function storedLines(since: string) {
  const rows = await queryRows<Record<string, unknown>>(
    d.service,
    `SELECT toString(timestamp) AS timestamp, level, app, app_id, request_id, job_id, endpoint, node, worker, source,
            isolate_source, message, attributes, line
     FROM logs WHERE received_at >= {since:DateTime64(3, 'UTC')}`,
    { since },
  );
  const rejects = await queryRows<{ raw: string; reason: string }>(
    d.service,
    "SELECT raw, reason FROM ingest_rejects WHERE source = 'log_drain' AND rejected_at >= {since:DateTime64(3, 'UTC')}",
    { since },
  );
  return {
    valid: rows.map(canonical).sort(),
    // The reason's first word is the kind of problem, named as the simulator names it.
    malformed: rejects.map((r) => JSON.stringify([r.raw, r.reason.split(':')[0]])).sort(),
    reasons: rejects.map((r) => r.reason),
  };
}

const nowText = () => formatDateTime64(Date.now() - 1);

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
    const got = await storedLines(since);
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
    const got = await storedLines(since);
    expect(got.valid).toEqual(sent.valid);
    expect(got.malformed).toEqual(sent.malformed);

    const { appLogs, requestLogs } = await import('../../src/store/tables/logs.js');
    const first = JSON.parse(result.batches[0].body.split('\n').find((l, i) => !result.batches[0].malformed.some((m) => m.line === i))!) as Record<string, string>;
    const ofApp = await appLogs(d.service.store, { app: first.svc_app_name, from: '2000-01-01 00:00:00', to: '2100-01-01 00:00:00', limit: 100_000 });
    expect(ofApp.length).toBeGreaterThanOrEqual(sent.valid.length);
    const ofRequest = await requestLogs(d.service.store, { request_id: first.svc_request_id });
    expect(ofRequest.length).toBeGreaterThan(0);
    expect(ofRequest.every((r) => r.request_id === first.svc_request_id)).toBe(true);
    expect(ofRequest.map((r) => r.message)).toContain(first.message);
  });
});
