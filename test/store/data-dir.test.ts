import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dataDirHolder, DataDirInUseError, openStore } from '../../src/store/client.js';
import { runCli } from '../support/process.js';

// A stand-in for another process holding the directory: the engine's status file names a live pid.
const holder = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
afterAll(() => {
  holder.kill('SIGKILL');
});

function dirHeldBy(pid: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'th-held-'));
  writeFileSync(join(dir, 'status'), `PID: ${pid}\nStarted at: 2026-11-23 22:47:45\nRevision: 54513\n`);
  return dir;
}

describe('a data directory another process holds', () => {
  it('is named with its pid; a status file left by a dead process is not a holder', async () => {
    expect(dataDirHolder(dirHeldBy(holder.pid!))).toBe(holder.pid);
    const dead = spawn(process.execPath, ['-e', '0']);
    await new Promise((r) => dead.on('exit', r));
    expect(dataDirHolder(dirHeldBy(dead.pid!))).toBeUndefined();
    expect(dataDirHolder(mkdtempSync(join(tmpdir(), 'th-fresh-')))).toBeUndefined();
  });

  it('openStore refuses it before opening the engine', async () => {
    const dir = dirHeldBy(holder.pid!);
    const err = await openStore({ dataDir: dir, database: 'tallyhouse' }).catch((e) => e);
    expect(err).toBeInstanceOf(DataDirInUseError);
    expect((err as Error).message).toContain(`pid ${holder.pid}`);
  });

  it('the CLI says so in one line, without a stack, and exits 1', async () => {
    const dir = dirHeldBy(holder.pid!);
    const p = runCli(['migrate'], { DATA_DIR: dir });
    expect((await p.exited).code).toBe(1);
    const lines = p.stderr().trim().split('\n');
    expect(lines).toEqual([expect.stringMatching(new RegExp(`^tallyhouse: the data directory .* is in use by another process \\(pid ${holder.pid}`))]);
  });
});
