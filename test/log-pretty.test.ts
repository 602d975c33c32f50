// Issue 43.2: pino-pretty is a devDependency, so a production install (`npm ci --omit=dev`) has none; pino threw
// "unable to determine transport target for "pino-pretty"" on a terminal and `serve`, `sim`, `report` exited 1.
// Without it a terminal gets JSON lines. The missing package is simulated with a preload that makes it
// unresolvable (as an --omit=dev install leaves it), and the terminal with `script`, which gives the CLI a pty.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { prettyTarget } from '../src/log.js';
import { BIN } from './support/process.js';

const NO_PRETTY = `const Module = require('node:module');
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === 'pino-pretty' || request.startsWith('pino-pretty/')) {
    const err = new Error("Cannot find module '" + request + "' (npm ci --omit=dev)");
    err.code = 'MODULE_NOT_FOUND';
    throw err;
  }
  return resolve.call(this, request, ...rest);
};
`;

const shellQuote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

describe('the log on a terminal', () => {
  it('uses pino-pretty where it resolves, else none', () => {
    expect(prettyTarget()).toMatch(/node_modules\/pino-pretty\//);
    expect(
      prettyTarget(() => {
        throw Object.assign(new Error("Cannot find module 'pino-pretty'"), { code: 'MODULE_NOT_FOUND' });
      }),
    ).toBeNull();
  });

  it('serve on a pty without pino-pretty installed logs JSON lines and serves', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'th-no-pretty-'));
    writeFileSync(join(dir, 'no-pretty.cjs'), NO_PRETTY);
    const command = [process.execPath, '--require', join(dir, 'no-pretty.cjs'), BIN, 'serve'].map(shellQuote).join(' ');
    const child = spawn('script', ['-qefc', command, '/dev/null'], {
      env: { ...process.env, NODE_ENV: 'development', LOG_LEVEL: 'info', TALLYHOUSE_PORT: '0', TALLYHOUSE_HOST: '127.0.0.1', PORT: undefined, HOST: undefined, DATA_DIR: join(dir, 'data'), JOBS_ENABLED: 'false' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const listening = await Promise.race([
      new Promise<string>((resolve) => {
        const check = () => {
          const m = /^.*"url":"(http:\/\/127\.0\.0\.1:\d+)".*$/m.exec(out);
          if (m) resolve(m[1]);
          else setTimeout(check, 100);
        };
        check();
      }),
      exited.then((code) => `exited ${code}`),
    ]);
    expect(listening, out).toMatch(/^http:/);
    expect((await fetch(`${listening}/healthz`)).status).toBe(200);
    // Every log line on the terminal is a JSON record.
    const lines = out.split(/\r?\n/).filter((l) => l.trim() !== '');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    child.kill('SIGTERM');
    await exited;
  });
});
