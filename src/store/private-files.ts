/**
 * DATA_DIR holds the store, the spools and the admin token, so nobody but its user may read it: the directory is
 * 0700 (an existing one is set so), and every file the process creates once it has prepared DATA_DIR is private
 * (umask 077: the embedded engine creates files as it merges parts, which a one-off chmod would miss). A file the
 * user asks for (`--out`) gets the user's own umask back (writeUserFile).
 */
import { chmodSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { chmod, writeFile } from 'node:fs/promises';

/** The umask the process started with, once DATA_DIR has been prepared (the process's umask is 077 from then on). */
let userUmask: number | undefined;

export function preparePrivateDataDir(dir: string): void {
  const previous = process.umask(0o077);
  userUmask ??= previous;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // A shared directory (sticky bit, as /tmp) is never narrowed: it is not ours alone, whoever may chmod it.
  if (statSync(dir).mode & 0o1000) return;
  try {
    chmodSync(dir, 0o700);
  } catch (err) {
    // A directory the process may use but not chmod (another owner's): its owner decides who reads it.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
  }
}

/**
 * Writes a fresh private file (0600) in place of `path`: a new file renamed over the old one, so an existing file of
 * looser mode (or one another process holds open) never receives the new contents.
 */
export function writePrivateFile(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  rmSync(tmp, { force: true });
  writeFileSync(tmp, text, { mode: 0o600, flag: 'wx' });
  try {
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/** Writes a file the user asked for (`--out`): a new one gets the mode the user's umask gives, not DATA_DIR's 0600. */
export async function writeUserFile(path: string, text: string): Promise<void> {
  try {
    await writeFile(path, text, { flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    await writeFile(path, text); // an existing file keeps its mode
    return;
  }
  if (userUmask !== undefined) await chmod(path, 0o666 & ~userUmask);
}
