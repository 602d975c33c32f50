// Issue 30.13: `npm start` on a terminal. The service's log is pretty there, and with a line per field the
// "listening ... try: curl" line came after about 75 lines; schedules were printed twice and the demo drain's
// signing key was printed. Run on a real pseudo-terminal (util-linux `script`), as a person starts it.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from '../support/process.js';

const plain = (text: string) => text.replace(/\u001b\[[0-9;]*m/g, '').replace(/\r/g, '');

describe('a terminal start', () => {
  it('shows the listening line and its curl within the first 15 lines, each schedule once, no signing key', async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'th-tty-')), 'data');
    const env = { ...process.env, PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'info', NODE_ENV: 'development', SVC_API_KEY: '', SVC_ADMIN_KEY: '' };
    // script -q (no banner) -f (flush) -c: the command on a new pseudo-terminal; its output to our pipe.
    const child = spawn('script', ['-qfc', `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} serve`, '/dev/null'], { env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    const exited = new Promise<void>((r) => child.on('exit', () => r()));
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          if (/try: curl .*\n[^]*jobs scheduled|jobs scheduled[^]*try: curl .*\n/.test(plain(out))) resolve();
        });
        void exited.then(() => reject(new Error(`the service exited:\n${plain(out)}`)));
      });
      const lines = plain(out).split('\n');
      // Issue 47: the web console's address first.
      const listening = lines.findIndex((l) => /INFO: console http:\/\/127\.0\.0\.1:\d+\/console\/ \| tallyhouse listening on http:\/\/127\.0\.0\.1:\d+; try: curl http:\/\/127\.0\.0\.1:\d+\/api\/v1/.test(l));
      expect(listening, plain(out)).toBeGreaterThanOrEqual(0);
      expect(listening + 1).toBeLessThanOrEqual(15);
      // Each schedule once (the message said them, and the `schedules` field again, one line per job).
      expect(plain(out).match(/"\*\/30 \* \* \* \*"/g)).toHaveLength(1);
      expect(plain(out)).not.toMatch(/demoDrainSigningKey":\s*"[0-9a-f]{64}"/);
      // A client's bad request is logged with its reason, at info (it was "WARN request failed" and no reason).
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(lines[listening])![1];
      expect((await fetch(`${url}/api/v1/logs?level=err`)).status).toBe(400);
      await new Promise<void>((resolve, reject) => {
        const check = () => {
          if (/INFO: request refused \(400\): .*level/.test(plain(out))) resolve();
        };
        child.stdout!.on('data', check);
        void exited.then(() => reject(new Error(`the service exited:\n${plain(out)}`)));
        check();
      });
      expect(plain(out)).not.toMatch(/WARN: request failed.*"statusCode":400/);
      const console = /INFO: console (\S+) \|/.exec(lines[listening])![1];
      expect(console).toBe(`${url}/console/`);
      const page = await fetch(console);
      expect([page.status, page.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
    } finally {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // already gone
      }
      await exited;
    }
  }, 180_000);
});
