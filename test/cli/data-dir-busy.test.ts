// Two commands on one embedded DATA_DIR (issue 44, item 4 of the brief): the second used to exit 1 saying the
// embedded store (chDB) "is not installed". It checks for a holder first; when the other took the engine's lock on
// `status` after that check and before writing its pid there, the engine refused the directory and the refusal was
// taken for a missing engine. Now a lock on `status` held by anyone is the directory in use: one line naming the
// holder, exit 75 (EX_TEMPFAIL), so a script knows to retry.
// The window is made to last: `flock` holds the lock on an empty `status`, as an engine that has just locked it.
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/process.js';
import { tempDataDir } from '../support/store.js';

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

/** `flock` holding the lock on DIR/status (no pid written in it yet); resolves once it holds it. */
async function lockStatus(dir: string): Promise<ChildProcess> {
  writeFileSync(join(dir, 'status'), '');
  const child = spawn('flock', [join(dir, 'status'), 'sh', '-c', 'echo locked; exec sleep 600'], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('locked') && resolve());
    child.on('exit', (code) => reject(new Error(`flock exited (${code})`)));
  });
  return child;
}

const IN_USE = /^tallyhouse: the data directory .* is in use by another process \((pid \d+|pid not known)[^)]*\): retry when it has finished/;

describe('a data directory another command has just taken', () => {
  it('`collect` says the directory is in use, names the holder, and exits 75', async () => {
    const dir = tempDataDir('th-busy-');
    const holder = await lockStatus(dir);
    const p = runCli(['collect', 'apps'], { DATA_DIR: dir, CLICKHOUSE_URL: undefined, SVC_API_KEY: undefined, SVC_ADMIN_KEY: undefined, LOG_LEVEL: 'warn' });
    const { code } = await p.exited;
    const lines = p.stderr().trim().split('\n').filter((l) => !/demo mode|simulator/i.test(l));
    expect(lines, p.stderr()).toEqual([expect.stringMatching(IN_USE)]);
    expect(lines[0]).toContain(`(pid ${holder.pid}`);
    expect(p.stderr()).not.toMatch(/not installed/);
    expect(code).toBe(75);
  });

  it('two `collect` runs started together on one directory: each ends stored (0) or in use (75), never "not installed"', async () => {
    const dir = tempDataDir('th-two-');
    const env = { DATA_DIR: dir, CLICKHOUSE_URL: undefined, SVC_API_KEY: undefined, SVC_ADMIN_KEY: undefined, LOG_LEVEL: 'warn' };
    const runs = [runCli(['collect', 'apps'], env), runCli(['collect', 'apps'], env)];
    const codes = await Promise.all(runs.map(async (r) => (await r.exited).code));
    for (const [i, r] of runs.entries()) {
      expect(r.stderr()).not.toMatch(/not installed/);
      expect([0, 75], r.stderr()).toContain(codes[i]);
      if (codes[i] === 75) expect(r.stderr()).toMatch(new RegExp(IN_USE.source, 'm'));
    }
    expect(codes).toContain(0);
  });
});
