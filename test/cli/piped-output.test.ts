// Issue 28.1: output piped into a slow reader goes out whole (it was cut at the pipe's 64 KiB, exit 0), directly and
// through the service beside the CLI; a reader that goes away ends the command quietly with a non-zero code.
// The oracle: the same report written by `--out` (or, for `sim truth`, which has no --out, its stdout into a file).
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, runCli } from '../support/process.js';

const dataDir = mkdtempSync(join(tmpdir(), 'th-piped-'));
const outDir = mkdtempSync(join(tmpdir(), 'th-piped-out-'));
const env = { DATA_DIR: dataDir, JOBS_ENABLED: 'false', LOG_LEVEL: 'warn' };

/**
 * Runs the CLI into a pipe whose reader starts reading only seconds later (it holds 64 KiB meanwhile), as
 * `tallyhouse ... | (sleep 3; cat > file)`. The wait only makes the reader slow: the bytes compared do not depend on it.
 */
function pipedSlowly(args: string[], reader = '{ sleep 3; cat > "$OUT"; }', extraEnv: Record<string, string> = {}) {
  const out = join(outDir, `piped-${Math.random().toString(36).slice(2)}`);
  const child = spawn('bash', ['-c', `set -o pipefail; "$NODE" "$BIN" "$@" | ${reader}`, 'piped', ...args], {
    env: { ...process.env, NODE_ENV: 'test', ...env, ...extraEnv, NODE: process.execPath, BIN, OUT: out },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise<{ code: number | null; bytes: Buffer; stderr: string }>((resolve) =>
    child.on('exit', (code) => {
      let bytes = Buffer.alloc(0);
      try {
        bytes = readFileSync(out);
      } catch {
        // the reader wrote nothing
      }
      resolve({ code, bytes, stderr });
    }),
  );
}

async function ok(args: string[]): Promise<string> {
  const p = runCli(args, env);
  const { code } = await p.exited;
  expect(code, p.stderr()).toBe(0);
  return p.stderr();
}

const REPORTS = [
  ['report', 'focus', '--month', '2026-11'],
  ['report', 'finance', '--month', '2026-11', '--format', 'json'],
];

beforeAll(async () => {
  await ok(['collect', 'usage', '--from', '2026-11-01', '--to', '2026-11-20']);
}, 120_000);

afterAll(() => undefined);

describe('output piped into a slow reader (issue 28.1)', () => {
  it('report focus, report finance and sim truth: the piped bytes equal the --out file, exit 0', async () => {
    for (const args of REPORTS) {
      const file = join(outDir, `${args[1]}.out`);
      await ok([...args, '--out', file]);
      const expected = readFileSync(file);
      expect(expected.length).toBeGreaterThan(65_536); // more than a pipe holds: the case that was cut
      const piped = await pipedSlowly(args);
      expect({ args, code: piped.code, bytes: piped.bytes.length }).toEqual({ args, code: 0, bytes: expected.length });
      expect(piped.bytes.equals(expected)).toBe(true);
    }

    const truthArgs = ['sim', 'truth', '--from', '2026-10-01', '--to', '2026-11-01', '--group-by', 'app,machine_type,surge,day'];
    const truthFile = join(outDir, 'truth.json');
    const fd = openSync(truthFile, 'w');
    const direct = spawn(process.execPath, [BIN, ...truthArgs], { stdio: ['ignore', fd, 'ignore'] });
    expect(await new Promise((r) => direct.on('exit', r))).toBe(0);
    closeSync(fd);
    const expected = readFileSync(truthFile);
    expect(expected.length).toBeGreaterThan(65_536);
    const piped = await pipedSlowly(truthArgs);
    expect({ code: piped.code, bytes: piped.bytes.length }).toEqual({ code: 0, bytes: expected.length });
    expect(piped.bytes.equals(expected)).toBe(true);
  }, 180_000);

  it('beside a running service: report focus and finance piped equal their --out files', async () => {
    const serve = runCli(['serve'], { ...env, PORT: '0', LOG_LEVEL: 'info' });
    try {
      await serve.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)"/);
      for (const args of REPORTS) {
        const file = join(outDir, `beside-${args[1]}.out`);
        await ok([...args, '--out', file]);
        const expected = readFileSync(file);
        expect(expected.length).toBeGreaterThan(65_536);
        const piped = await pipedSlowly(args);
        expect({ args, code: piped.code, bytes: piped.bytes.length }).toEqual({ args, code: 0, bytes: expected.length });
        expect(piped.bytes.equals(expected)).toBe(true);
      }
      // It ran in the service.
      expect(serve.stdout()).toMatch(/"command":"report"[^\n]*running a command for a CLI beside the service/);
      // A reader that goes away: quiet, exit 141 (128 + SIGPIPE), as `yes | head` reports.
      const closed = await pipedSlowly(REPORTS[0], 'head -c 100 > "$OUT"');
      expect({ code: closed.code, stderr: closed.stderr, bytes: closed.bytes.length }).toEqual({ code: 141, stderr: '', bytes: 100 });
    } finally {
      serve.child.kill('SIGTERM');
    }
    expect((await serve.exited).code).toBe(0);
  }, 240_000);

  it('a reader that goes away ends the command quietly with exit 141', async () => {
    for (const args of [REPORTS[0], ['sim', 'truth', '--from', '2026-10-01', '--to', '2026-11-01', '--group-by', 'app,machine_type,surge,day']]) {
      const closed = await pipedSlowly(args, 'head -c 100 > "$OUT"');
      expect({ args, code: closed.code, stderr: closed.stderr, bytes: closed.bytes.length }).toEqual({ args, code: 141, stderr: '', bytes: 100 });
    }
  }, 120_000);
});
