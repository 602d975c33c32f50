// The data-directory guard reads /proc/locks for the process holding DATA_DIR/status. On btrfs stat() gives a
// subvolume's own device number while /proc/locks names the filesystem's, so no lock line ever matches the device:
// the guard then took a held directory for free (the CLI beside a running service opened the store itself and
// failed; a second `serve` overwrote the running service's admin.json). Oracle: /proc/locks lines written by hand
// as btrfs shows them (the status file's inode, another device), with the pid the status file names.
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dataDirHolder } from '../../src/store/client.js';

describe('data-directory guard on btrfs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'th-btrfs-'));
  // A live process other than this one: the test runner that started this worker.
  const pid = process.ppid;
  writeFileSync(join(dir, 'status'), `PID: ${pid}\nStarted at: 2026-11-26 07:00:00\n`);
  const st = statSync(join(dir, 'status'));
  // A device no stat() of this file gives (btrfs: the filesystem's anonymous device, not the subvolume's).
  const major = (Math.floor(st.dev / 256) & 0xfff) + 1;
  const otherDev = `${major.toString(16).padStart(2, '0')}:2f`;

  it('a lock on the status file\'s inode held by the pid it names counts as held', () => {
    const locks = `1: FLOCK  ADVISORY  WRITE ${pid} ${otherDev}:${st.ino} 0 EOF\n`;
    expect(dataDirHolder(dir, locks)).toBe(pid);
  });

  it('a lock on that inode number by another pid, on another device, does not (a stale file, its pid reused)', () => {
    const locks = `1: FLOCK  ADVISORY  WRITE ${pid + 1} ${otherDev}:${st.ino} 0 EOF\n`;
    expect(dataDirHolder(dir, locks)).toBeUndefined();
    expect(dataDirHolder(dir, '')).toBeUndefined();
  });
});
