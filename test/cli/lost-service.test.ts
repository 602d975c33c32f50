// Issue 28.9: the service killed while it runs a command for the CLI: the CLI says so in one line and exits 1 (it
// printed undici's SocketError with its stack). The service is a stand-in on 127.0.0.1 that answers the admin
// endpoint's first lines and then drops the connection, as a killed process does.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/process.js';

const servers: Server[] = [];
afterAll(() => {
  for (const s of servers) s.close();
});

async function dyingService(): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(`${JSON.stringify({ fd: 2, data: 'usage UTC 2026-11-01..2026-11-04: 0/3\n' })}\n`, () => res.socket?.destroy());
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('the service lost while it runs the CLI\'s command', () => {
  it('is one line naming it, exit 1, no stack', async () => {
    const url = await dyingService();
    const p = runCli(['collect', 'usage', '--from', '2026-11-01', '--to', '2026-11-04'], {
      DATA_DIR: mkdtempSync(join(tmpdir(), 'th-lost-')),
      TALLYHOUSE_URL: url,
      TALLYHOUSE_ADMIN_TOKEN: 'a'.repeat(64),
    });
    expect((await p.exited).code).toBe(1);
    expect(p.stderr()).toMatch(
      new RegExp(
        `^usage UTC 2026-11-01\\.\\.2026-11-04: 0/3\\ntallyhouse: the service at ${url.replace(/\./g, '\\.')} stopped answering while it ran the command \\(UND_ERR_SOCKET\\): the command may have finished in part; see the service's log, and run it again once the service is up\\n$`,
      ),
    );
  });
});
