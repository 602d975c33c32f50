// Issue 29.8: DATA_DIR was created 0755 and the store's files 0644, and an admin.json that existed with mode 0644
// kept it and received the new token (another local user then ran `report finance` through it). Now: DATA_DIR 0700,
// admin.json a new 0600 file on every start, nothing under DATA_DIR readable by others; a --out file the user asked
// for keeps the user's umask. The CLI runs under umask 022, as a login shell's.
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/process.js';

let previousUmask: number;
beforeAll(() => {
  previousUmask = process.umask(0o022); // the children inherit it
});
afterAll(() => {
  process.umask(previousUmask);
});

/** Paths under `dir` whose mode lets group or others in (0o077 bits), with their modes in octal. */
function openToOthers(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath, entry.name);
    if (entry.isSymbolicLink()) continue;
    const mode = statSync(path).mode & 0o777;
    if (mode & 0o077) found.push(`${path.slice(dir.length)} ${mode.toString(8)}`);
  }
  return found;
}

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

describe('the data directory is its user\'s alone', () => {
  it('a CLI command creates DATA_DIR 0700 and the store files private; its --out file keeps the user\'s umask', async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'th-private-')), 'data');
    const collect = runCli(['collect', 'usage', '--from', '2026-11-01', '--to', '2026-11-02'], { DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
    expect((await collect.exited).code, collect.stderr()).toBe(0);
    expect(mode(dataDir)).toBe('700');
    expect(readdirSync(dataDir).length).toBeGreaterThan(3); // the engine's files are there to check
    expect(openToOthers(dataDir)).toEqual([]);

    const out = join(dataDir, '..', 'finance.csv');
    const report = runCli(['report', 'finance', '--month', '2026-11', '--out', out], { DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
    expect((await report.exited).code, report.stderr()).toBe(0);
    expect(mode(out)).toBe('644');
  }, 120_000);

  it('serve: an existing 0755 DATA_DIR becomes 0700; an existing 0644 admin.json is replaced by a new 0600 file', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'th-private-serve-'));
    chmodSync(dataDir, 0o755);
    const adminFile = join(dataDir, 'admin.json');
    writeFileSync(adminFile, JSON.stringify({ pid: 1 }), { mode: 0o644 });
    chmodSync(adminFile, 0o644);
    const oldInode = statSync(adminFile).ino;
    mkdirSync(join(dataDir, 'reports'), { mode: 0o755 });

    const serve = runCli(['serve'], { DATA_DIR: dataDir, PORT: '0', JOBS_ENABLED: 'false', LOG_LEVEL: 'info' });
    try {
      await serve.waitFor(/tallyhouse listening/);
      expect(mode(dataDir)).toBe('700');
      expect(mode(adminFile)).toBe('600');
      expect(statSync(adminFile).ino).not.toBe(oldInode);
      // Everything the service created is private; the one directory made before it (by the test) is left alone.
      expect(openToOthers(dataDir)).toEqual(['/reports 755']);
    } finally {
      serve.child.kill('SIGTERM');
    }
    expect((await serve.exited).code).toBe(0);
  }, 120_000);
});
