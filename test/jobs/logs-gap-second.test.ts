// Issue 31: a bug an audit planted that no test caught: the logs job's gap fill not widened to the whole second
// before a gap. The drain delivers on whole seconds' worth of lines only by chance: the second of its last line
// before an outage may hold lines it never delivered, so history is read from the start of that second (what is
// already stored is skipped). Seeded: drain lines every 10 s, the last at 11:20:05.300 before a silence, the next
// at 11:25:00.700. Hand-derived: history is asked for [11:20:05.000, 11:25:01.000) for each app, nothing else.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import type { Runtime } from '../../src/runtime.js';
import { logs, type LogRow } from '../../src/store/tables/logs.js';
import { Checkpoints } from '../../src/store/tables/checkpoints.js';
import { closeRuntime, openTestRuntime } from '../support/store.js';
import { runJob } from '../support/jobs.js';

const NOW = '2026-11-21T12:00:00Z';
let sim: Sim;
let rt: Runtime;

function drainLine(iso: string, line: number): LogRow {
  return {
    timestamp: iso.replace('T', ' ').replace('Z', ''),
    level: 'INFO',
    app: 'a',
    app_id: '',
    request_id: '',
    job_id: '',
    endpoint: '',
    node: '',
    worker: '',
    source: 'gateway',
    isolate_source: '',
    message: `line ${line}`,
    attributes: {},
    received_at: iso.replace('T', ' ').replace('Z', ''),
    batch_id: '00000000-0000-4000-8000-000000000001',
    line,
    origin: 'drain',
  };
}

beforeAll(async () => {
  sim = await startSim({ seed: 5, now: NOW, apps: 2, days: 1 });
  rt = await openTestRuntime({ LOG_DRAIN_SECRET: 's'.repeat(64) });
  const rows: LogRow[] = [];
  const at = (ms: number) => new Date(ms).toISOString();
  // 11:00:00.250 .. 11:20:05.300 every 10 s (the last one at 11:20:05.300), then 11:25:00.700 .. 11:55 every 10 s.
  for (let t = Date.parse('2026-11-21T11:00:00.250Z'); t <= Date.parse('2026-11-21T11:20:00.250Z'); t += 10_000) rows.push(drainLine(at(t), rows.length + 1));
  rows.push(drainLine('2026-11-21T11:20:05.300Z', rows.length + 1));
  for (let t = Date.parse('2026-11-21T11:25:00.700Z'); t < Date.parse('2026-11-21T11:55:00Z'); t += 10_000) rows.push(drainLine(at(t), rows.length + 1));
  const written = rt.writer.insert(logs, rows);
  await rt.writer.flush(logs);
  await written;
  await new Checkpoints(rt.store, rt.writer).save('logs', 'filled_until', '2026-11-21T11:00:00.000Z');
});
afterAll(async () => {
  if (rt) await closeRuntime(rt);
  await sim?.close();
});

describe('logs job: the gap fill starts at the whole second of the last drain line before a gap', () => {
  it('history is asked for [11:20:05.000, 11:25:01.000) of every app, and nothing else', async () => {
    const run = await runJob(rt, sim, 'logs');
    expect(run.status, run.error).toBe('ok');
    const windows = sim
      .requestLog()
      .filter((c) => c.path === '/v1/serverless/logs/history')
      .map((c) => `${String(c.query.app_id)} ${String(c.query.start)}..${String(c.query.end)}`);
    const apps = [...new Set(windows.map((w) => w.split(' ')[0]))].sort();
    expect(apps).toHaveLength(2);
    expect([...new Set(windows)].sort()).toEqual(apps.map((a) => `${a} 2026-11-21T11:20:05.000Z..2026-11-21T11:25:01.000Z`));
  });
});
