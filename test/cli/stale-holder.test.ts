// Issue 28.4: after a SIGKILL the data directory keeps the engine's `status` file and the service's `admin.json`,
// both naming the dead pid. When another process gets that pid, the directory is still free: `serve` and the CLI
// start normally (they said "in use by pid N" and failed with ECONNREFUSED on the stale admin.json).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/process.js';

// A live process that is not Tallyhouse: stands in for whatever got the killed service's pid.
const bystander = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
afterAll(() => {
  bystander.kill('SIGKILL');
});

describe('a SIGKILLed service whose pid another process now has', () => {
  it('serve and the CLI start normally; the stale admin.json is replaced', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'th-stale-pid-'));
    const env = { DATA_DIR: dataDir, JOBS_ENABLED: 'false', LOG_LEVEL: 'info' };
    const first = runCli(['serve'], { ...env, PORT: '0' });
    await first.waitFor(/tallyhouse listening/);
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');

    // The pid is reused: the engine's status file and admin.json name a live process that is no service.
    const statusFile = join(dataDir, 'status');
    const adminFile = join(dataDir, 'admin.json');
    const stale = JSON.parse(readFileSync(adminFile, 'utf8')) as { pid: number; url: string; token: string };
    expect(stale.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    writeFileSync(statusFile, readFileSync(statusFile, 'utf8').replace(/^PID:\s*\d+/m, `PID: ${bystander.pid}`));
    writeFileSync(adminFile, JSON.stringify({ ...stale, pid: bystander.pid }));

    const migrate = runCli(['migrate'], env);
    expect({ code: (await migrate.exited).code, stderr: migrate.stderr() }).toEqual({
      code: 0,
      stderr: expect.stringMatching(/^schema up to date: \d+ migrations applied\n$/),
    });

    const second = runCli(['serve'], { ...env, PORT: '0' });
    try {
      await second.waitFor(/tallyhouse listening/);
      const fresh = JSON.parse(readFileSync(adminFile, 'utf8')) as { pid: number; url: string; token: string };
      expect(fresh.pid).toBe(second.child.pid);
      expect(fresh.token).not.toBe(stale.token);
      const beside = runCli(['migrate'], env);
      expect({ code: (await beside.exited).code, stderr: beside.stderr() }).toEqual({
        code: 0,
        stderr: expect.stringMatching(/^schema up to date: \d+ migrations applied\n$/),
      });
      expect(second.stdout()).toMatch(/"command":"migrate"[^\n]*running a command for a CLI beside the service/);
    } finally {
      second.child.kill('SIGTERM');
    }
    expect((await second.exited).code).toBe(0);
  }, 180_000);
});
