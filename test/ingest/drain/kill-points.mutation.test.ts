// The crash test's kill points (src/ingest/drain/spool/kill-points.ts), in this test's own process: crash.test.ts
// sets TALLYHOUSE_TEST_KILL_AT=<point>:<n> in a child and counts on the child dying at exactly the n-th pass of that
// point (and on nothing at all happening without it, in every other process). process.kill is replaced here, so the
// SIGKILL is seen rather than suffered; the module is loaded afresh for each setting (it reads the variable once).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { KillPoint } from '../../../src/ingest/drain/spool/kill-points.js';

const saved = process.env.TALLYHOUSE_TEST_KILL_AT;
afterEach(() => {
  vi.restoreAllMocks();
  if (saved === undefined) delete process.env.TALLYHOUSE_TEST_KILL_AT;
  else process.env.TALLYHOUSE_TEST_KILL_AT = saved;
});

/** Loads the module with the variable set to `setting` (unset: undefined), passes the points, returns the pass numbers (1-based) that killed. */
async function killsAt(setting: string | undefined, points: KillPoint[]): Promise<number[]> {
  if (setting === undefined) delete process.env.TALLYHOUSE_TEST_KILL_AT;
  else process.env.TALLYHOUSE_TEST_KILL_AT = setting;
  vi.resetModules();
  const { passKillPoint } = await import('../../../src/ingest/drain/spool/kill-points.js');
  const kill = vi.spyOn(process, 'kill').mockImplementation(() => true);
  const killed: number[] = [];
  for (const [i, point] of points.entries()) {
    const before = kill.mock.calls.length;
    passKillPoint(point);
    if (kill.mock.calls.length > before) killed.push(i + 1);
  }
  for (const call of kill.mock.calls) expect(call).toEqual([process.pid, 'SIGKILL']);
  return killed;
}

const ten = (p: KillPoint): KillPoint[] => Array.from({ length: 10 }, () => p);

describe('kill points', () => {
  it('unset (every process but the crash test\'s children): no pass kills', async () => {
    expect(await killsAt(undefined, [...ten('append'), ...ten('spill'), 'group-commit', 'after-commit', 'replay-insert', 'cleanup'])).toEqual([]);
    expect(await killsAt('', ten('append'))).toEqual([]);
  });

  it('<point>:<n>: the n-th pass of that point kills, once; passes of other points do not count', async () => {
    expect(await killsAt('append:3', ten('append'))).toEqual([3]);
    expect(await killsAt('append:1', ten('append'))).toEqual([1]);
    // group-commit, append, group-commit, append, append: the second append is the 4th pass.
    expect(await killsAt('append:2', ['group-commit', 'append', 'group-commit', 'append', 'append'])).toEqual([4]);
    expect(await killsAt('group-commit:2', ['append', 'group-commit', 'append', 'group-commit', 'group-commit'])).toEqual([4]);
    expect(await killsAt('replay-insert:12', [...ten('replay-insert'), ...ten('replay-insert')])).toEqual([12]);
  });

  it('a setting that is not exactly <point>:<n> does nothing', async () => {
    for (const setting of ['append', 'append:', ':3', 'Append:1', 'append:1 ', ' append:1', 'x/append:1', 'append:1:2', 'append:-1', 'append:x']) {
      expect(await killsAt(setting, ten('append')), setting).toEqual([]);
    }
  });

  it('a point that never passes n times never kills', async () => {
    expect(await killsAt('cleanup:11', ten('cleanup'))).toEqual([]);
    expect(await killsAt('cleanup:0', ten('cleanup'))).toEqual([]);
  });
});

describe('the spool passes its kill points', () => {
  // Each point set alone (fresh modules: kill-points reads the variable at load); process.kill replaced, so the spool
  // goes on after the pass. The names are the crash test's (crash-scenario.ts); the phases are where a kill must land.
  async function phaseOf(point: KillPoint): Promise<string[]> {
    process.env.TALLYHOUSE_TEST_KILL_AT = `${point}:1`;
    vi.resetModules();
    const { SqliteSpool } = await import('../../../src/ingest/drain/spool/sqlite-spool.js');
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => true);
    const phases: string[] = [];
    const spool = await SqliteSpool.open({ dir: mkdtempSync(join(tmpdir(), 'kill-points-')), maxBytes: 1 << 20, commitThread: false });
    try {
      const staged = { count: 1, bytes: 3, crc: 0, file: undefined, memory: [Buffer.from('{}\n')] };
      const rejects = { count: 0, bytes: 0, crc: 0, file: undefined, memory: [] };
      await spool.append({ id: 'k', receivedAtMs: 1, rowFormat: { format: 'JSONEachRow' }, rows: staged, rejects });
      if (kill.mock.calls.length > 0) phases.push('append');
      const batch = (await spool.nextBatch({ maxRows: 10, maxBytes: 1 << 20 }))!;
      await spool.commit(batch);
      if (kill.mock.calls.length > phases.length) phases.push('commit');
    } finally {
      await spool.close();
    }
    expect(kill.mock.calls).toEqual(phases.map(() => [process.pid, 'SIGKILL']));
    return phases;
  }

  it.each([
    ['append', ['append']],
    ['group-commit', ['append']],
    ['after-commit', ['append']],
    ['cleanup', ['commit']],
  ] as const)('%s: passed while %s', async (point, phases) => {
    expect(await phaseOf(point)).toEqual(phases);
  });
});

describe('the commit thread passes group-commit', () => {
  it('inside its transaction, as the spool does on its own connection', async () => {
    process.env.TALLYHOUSE_TEST_KILL_AT = 'group-commit:1';
    vi.resetModules();
    const { serveCommits } = await import('../../../src/ingest/drain/spool/commit-worker.js');
    const { SqliteSpool } = await import('../../../src/ingest/drain/spool/sqlite-spool.js');
    const dir = mkdtempSync(join(tmpdir(), 'kill-points-'));
    await (await SqliteSpool.open({ dir, maxBytes: 1 << 20, commitThread: false })).close();
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => true);
    const { port1, port2 } = new MessageChannel();
    try {
      serveCommits(port1, new SharedArrayBuffer(8), () => undefined);
      const ask = (m: unknown) => new Promise<{ t: string }>((resolve) => (port2.once('message', resolve), port2.postMessage(m)));
      expect((await ask({ t: 'open', path: join(dir, 'spool.sqlite'), generation: 0 })).t).toBe('opened');
      expect(kill).not.toHaveBeenCalled();
      const rows = new Uint8Array(Buffer.from('{}\n'));
      expect((await ask({ t: 'commit', seq: 1, generation: 0, now: 1, records: [{ id: 'k', receivedAtMs: 1, rowFormat: '{"format":"JSONEachRow"}', rows: 1, rejects: 0, rowData: rows, rejectData: new Uint8Array(0) }] })).t).toBe('done');
      expect(kill.mock.calls).toEqual([[process.pid, 'SIGKILL']]);
    } finally {
      port1.close();
      port2.close();
    }
  });
});
