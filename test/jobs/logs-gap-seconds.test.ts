// Issue 31: the README's `--gap-seconds` claim had no test. "A spell of at least this many seconds without a drain
// line (any app) is filled from history". Seeded: drain lines every 10 s at .250 past the second from 11:00 to
// 11:55, with two silences: after 11:10:00.250 the next line is at 11:11:30.250 (the whole seconds 11:10:01 ..
// 11:11:29, 89 s, hold no line), and after 11:30:00.250 the next is at 11:33:00.250 (179 s without a line).
// Hand-derived, each window widened to the whole seconds of the lines around it:
//   default 60: both spells, [11:10:00, 11:11:31) and [11:30:00, 11:33:01);
//   89: both (a spell of exactly 89 s counts); 90: only the 179 s spell; 179: only it; 180: neither, no history call.
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

function drainLine(ms: number, line: number): LogRow {
  const at = new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
  return {
    timestamp: at,
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
    received_at: at,
    batch_id: '00000000-0000-4000-8000-000000000002',
    line,
    origin: 'drain',
  };
}

beforeAll(async () => {
  sim = await startSim({ seed: 7, now: NOW, apps: 1, days: 1 });
  rt = await openTestRuntime({ LOG_DRAIN_SECRET: 's'.repeat(64) });
  const silences = [
    [Date.parse('2026-11-21T11:10:00.250Z'), Date.parse('2026-11-21T11:11:30.250Z')],
    [Date.parse('2026-11-21T11:30:00.250Z'), Date.parse('2026-11-21T11:33:00.250Z')],
  ];
  const rows: LogRow[] = [];
  for (let t = Date.parse('2026-11-21T11:00:00.250Z'); t < Date.parse('2026-11-21T11:55:00Z'); t += 10_000) {
    if (silences.some(([a, b]) => t > a && t < b)) continue;
    rows.push(drainLine(t, rows.length + 1));
  }
  const written = rt.writer.insert(logs, rows);
  await rt.writer.flush(logs);
  await written;
});
afterAll(async () => {
  if (rt) await closeRuntime(rt);
  await sim?.close();
});

/** Runs the job from an 11:00 checkpoint with these options; returns the history windows it asked for. */
async function historyWindows(args: Record<string, string>): Promise<string[]> {
  await new Checkpoints(rt.store, rt.writer).save('logs', 'filled_until', '2026-11-21T11:00:00.000Z');
  const before = sim.requestLog().length;
  const run = await runJob(rt, sim, 'logs', args);
  expect(run.status, run.error).toBe('ok');
  const asked = sim
    .requestLog()
    .slice(before)
    .filter((c) => c.path === '/v1/serverless/logs/history')
    .map((c) => `${String(c.query.start)}..${String(c.query.end)}`);
  return [...new Set(asked)].sort();
}

const SHORT = '2026-11-21T11:10:00.000Z..2026-11-21T11:11:31.000Z';
const LONG = '2026-11-21T11:30:00.000Z..2026-11-21T11:33:01.000Z';

describe('logs job: --gap-seconds decides which silences of the drain are filled from history', () => {
  it('by default (60 s) both silences, each from the whole second of its last line to the end of the next', async () => {
    expect(await historyWindows({})).toEqual([SHORT, LONG]);
  });

  it('a silence exactly --gap-seconds long is filled; one second shorter than the option is not', async () => {
    expect(await historyWindows({ 'gap-seconds': '89' })).toEqual([SHORT, LONG]);
    expect(await historyWindows({ 'gap-seconds': '90' })).toEqual([LONG]);
  });

  it('--gap-seconds 179 keeps only the 179 s silence; 180 asks history for nothing', async () => {
    expect(await historyWindows({ 'gap-seconds': '179' })).toEqual([LONG]);
    expect(await historyWindows({ 'gap-seconds': '180' })).toEqual([]);
  });
});
