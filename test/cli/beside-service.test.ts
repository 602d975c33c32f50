// The README's commands typed while `npm start` runs: the service holding the data directory runs them and
// streams their output back; the output and exit codes equal those of the same commands on a stopped service.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/process.js';

async function cli(args: string[], env: Record<string, string>) {
  const p = runCli(args, env);
  const { code } = await p.exited;
  // Durations differ from run to run; everything else must not.
  const normalise = (text: string) => text.replace(/ in \d+(\.\d+)? s /g, ' in <t> s ');
  return { code, stdout: p.stdout(), stderr: normalise(p.stderr()) };
}

describe('the CLI beside the running service', () => {
  it('collect usage --from/--to and report finance give the same output and exit codes as on a stopped service', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'th-beside-'));
    const outDir = mkdtempSync(join(tmpdir(), 'th-beside-out-'));
    // Jobs off: only the commands below write, so both runs see the same store.
    const env = { DATA_DIR: dataDir, JOBS_ENABLED: 'false', LOG_LEVEL: 'warn' };
    const commands = [
      ['collect', 'usage', '--from', '2026-11-01', '--to', '2026-11-04'],
      ['report', 'finance', '--month', '2026-11', '--format', 'csv'],
      ['report', 'finance', '--month', '2026-13'], // a usage error: exit 2
      ['collect', 'usage', '--from', 'yesterday'], // a usage error: exit 2
    ];

    const serve = runCli(['serve'], { ...env, PORT: '0', LOG_LEVEL: 'info' });
    const beside: Array<Awaited<ReturnType<typeof cli>>> = [];
    try {
      await serve.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)"/);
      for (const args of commands) beside.push(await cli(args, env));
      // --out is written where the command was typed, not in the service's directory.
      const out = await cli(['report', 'finance', '--month', '2026-11', '--out', join(outDir, 'beside.csv')], env);
      expect(out.code).toBe(0);
      expect(out.stderr).toMatch(/^finance report 2026-11 \(UTC\): \d+ rows, \d+ flagged by the reconciliation -> .*beside\.csv\n$/);
      expect(readFileSync(join(outDir, 'beside.csv'), 'utf8')).toBe(beside[1].stdout);
      // It ran in the service: its log says so.
      expect(serve.stdout()).toMatch(/"command":"collect"[^\n]*running a command for a CLI beside the service/);
    } finally {
      serve.child.kill('SIGTERM');
    }
    expect((await serve.exited).code).toBe(0);

    const alone: Array<Awaited<ReturnType<typeof cli>>> = [];
    for (const args of commands) alone.push(await cli(args, env));
    expect(beside.map((r) => r.code)).toEqual([0, 0, 2, 2]);
    expect(beside[0].stderr).toMatch(/usage: [1-9]\d* rows in <t> s \(0 retried calls\)\n$/);
    expect(beside[1].stdout.split('\r\n').length).toBeGreaterThan(3);
    expect(beside).toEqual(alone);
  }, 300_000);
});
