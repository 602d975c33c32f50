import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './support/process.js';

describe('start-up conflicts', () => {
  it('a busy port is one line naming it, exit 1, before the store or anything else starts', async () => {
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const port = (busy.address() as AddressInfo).port;
    const dataDir = join(mkdtempSync(join(tmpdir(), 'th-port-')), 'data');
    try {
      const p = runCli(['serve'], { TALLYHOUSE_PORT: String(port), DATA_DIR: dataDir });
      expect((await p.exited).code).toBe(1);
      expect(p.stderr().trim().split('\n')).toEqual([`tallyhouse: port ${port} on 127.0.0.1 is already in use (another Tallyhouse?): stop that process or set TALLYHOUSE_PORT to a free port`]);
      // Nothing was opened: no data directory, no migration, no job.
      expect(existsSync(dataDir)).toBe(false);
      expect(p.stdout()).not.toMatch(/store ready|job started/);
    } finally {
      busy.close();
    }
  });
});

describe('the CLI answers --version and --help without opening anything', () => {
  it('--version prints the package version and the Node version', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    const p = runCli(['--version']);
    expect((await p.exited).code).toBe(0);
    expect(p.stdout().trim()).toBe(`tallyhouse ${version} (node ${process.version})`);
  });

  it.each(['migrate', 'report', 'scrape', 'serve'])('%s --help prints its usage and exits 0', async (command) => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'th-help-')), 'data');
    const p = runCli([command, '--help'], { DATA_DIR: dataDir });
    expect((await p.exited).code).toBe(0);
    expect(p.stdout()).toMatch(new RegExp(`^Usage: tallyhouse ${command}`));
    expect(existsSync(dataDir)).toBe(false);
  });
});

describe('settings that would fail later are refused or flagged at start-up', () => {
  it('PRICES_FILE that cannot be read: exit 2 naming the variable, nothing opened', async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'th-prices-')), 'data');
    const p = runCli(['serve'], { TALLYHOUSE_PORT: '0', DATA_DIR: dataDir, PRICES_FILE: '/nonexistent/prices.json' });
    expect((await p.exited).code).toBe(2);
    expect(p.stderr().trim()).toBe('tallyhouse: invalid configuration: PRICES_FILE: a readable prices file; /nonexistent/prices.json: cannot be read (ENOENT)');
    expect(existsSync(dataDir)).toBe(false);
  });

  it('an API key without the admin key is warned about at start-up', async () => {
    const p = runCli(['serve'], {
      TALLYHOUSE_PORT: '0',
      DATA_DIR: mkdtempSync(join(tmpdir(), 'th-keys-')),
      SVC_API_KEY: 'api-key-0123456789abcdef',
      SVC_ADMIN_KEY: '',
      SVC_BASE_URL: 'http://127.0.0.1:9',
      JOBS_ENABLED: 'false',
    });
    try {
      const [line] = await p.waitFor(/.*SVC_API_KEY is set without SVC_ADMIN_KEY.*/);
      expect(JSON.parse(line)).toMatchObject({ level: 40 });
      await p.waitFor(/tallyhouse listening/); // SIGTERM is handled from then on
    } finally {
      p.child.kill('SIGTERM');
    }
    expect((await p.exited).code).toBe(0);
  });
});

describe('report --out into a directory that does not exist', () => {
  it('is a usage error (exit 2) naming the directory, before anything opens', async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'th-out-')), 'data');
    const p = runCli(['report', 'finance', '--month', '2026-10', '--out', '/nonexistent/dir/x.csv'], { DATA_DIR: dataDir });
    expect((await p.exited).code).toBe(2);
    expect(p.stderr()).toMatch(/^tallyhouse report finance: --out: the directory \/nonexistent\/dir does not exist/);
    expect(p.stderr()).not.toMatch(/\n\s+at /); // no stack
    expect(existsSync(dataDir)).toBe(false);
  });
});
