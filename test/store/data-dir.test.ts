import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataDirHolder, DataDirInUseError, openStore, statusFileLocker } from '../../src/store/client.js';
import { runCli } from '../support/process.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

// Another process holding a directory: the embedded engine itself, opened by a child (it writes `status` with its
// pid and keeps an flock on it while it runs).
const heldDir = mkdtempSync(join(tmpdir(), 'th-held-'));
let holder: ChildProcess;
// A live process that holds nothing: what a pid left in a stale status file may belong to after a SIGKILL.
const bystander = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });

beforeAll(async () => {
  holder = spawn(
    process.execPath,
    ['--input-type=module', '-e', `const { Session } = await import('chdb'); new Session(${JSON.stringify(heldDir)}).query('SELECT 1'); console.log('open'); setInterval(() => {}, 1000);`],
    { cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise<void>((resolve, reject) => {
    holder.stdout!.on('data', (d: Buffer) => d.toString().includes('open') && resolve());
    holder.on('exit', (code) => reject(new Error(`the holding engine exited (${code})`)));
  });
}, 60_000);

afterAll(() => {
  holder?.kill('SIGKILL');
  bystander.kill('SIGKILL');
});

function dirNamingPid(pid: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'th-stale-'));
  writeFileSync(join(dir, 'status'), `PID: ${pid}\nStarted at: 2026-11-23 22:47:45\nRevision: 54513\n`);
  return dir;
}

describe('a data directory another process holds', () => {
  it('is named with the pid of the engine holding it; a status file left by a dead process is not a holder', async () => {
    expect(dataDirHolder(heldDir)).toBe(holder.pid);
    const dead = spawn(process.execPath, ['-e', '0']);
    await new Promise((r) => dead.on('exit', r));
    expect(dataDirHolder(dirNamingPid(dead.pid!))).toBeUndefined();
    expect(dataDirHolder(mkdtempSync(join(tmpdir(), 'th-fresh-')))).toBeUndefined();
  });

  it('a reused pid (issue 28.4): a status file naming a live process that holds no lock is not a holder', () => {
    expect(dataDirHolder(dirNamingPid(bystander.pid!))).toBeUndefined();
  });

  it('reads the holder from /proc/locks by device and inode, skipping waiters', () => {
    const dir = dirNamingPid(bystander.pid!);
    const st = statSync(join(dir, 'status'));
    const dev = `${(Math.floor(st.dev / 256) & 0xfff).toString(16).padStart(2, '0')}:${(st.dev & 0xff).toString(16).padStart(2, '0')}`;
    const locks = [`1: FLOCK  ADVISORY  WRITE 4242 ${dev}:${st.ino + 1} 0 EOF`, `2: -> FLOCK  ADVISORY  WRITE 777 ${dev}:${st.ino} 0 EOF`, `3: FLOCK  ADVISORY  WRITE 31337 ${dev}:${st.ino} 0 EOF`, ''].join('\n');
    expect(statusFileLocker(join(dir, 'status'), locks)).toBe(31337);
    expect(statusFileLocker(join(dir, 'status'), locks.split('\n').slice(0, 2).join('\n'))).toBeUndefined();
  });

  it('openStore refuses it before opening the engine', async () => {
    const err = await openStore({ dataDir: heldDir, database: 'tallyhouse' }).catch((e) => e);
    expect(err).toBeInstanceOf(DataDirInUseError);
    expect((err as Error).message).toContain(`pid ${holder.pid}`);
  });

  it('the CLI says so in one line, without a stack, and exits 75 (EX_TEMPFAIL: retry)', async () => {
    const p = runCli(['migrate'], { DATA_DIR: heldDir });
    expect((await p.exited).code).toBe(75);
    const lines = p.stderr().trim().split('\n');
    expect(lines).toEqual([expect.stringMatching(new RegExp(`^tallyhouse: the data directory .* is in use by another process \\(pid ${holder.pid}`))]);
  });
});
