// Issue 29.9: `tallyhouse scrape` printed a failing target's whole URL, its user, password and query token with it.
// Every message that prints a URL goes through one helper (src/redact.ts).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { redactUrl, redactUrls } from '../../src/redact.js';
import { runCli } from '../support/process.js';

const servers: Server[] = [];
afterAll(() => {
  for (const s of servers) s.close();
});

describe('redactUrl', () => {
  it('replaces the user, the password and the values of secret-looking query keys; keeps the rest as written', () => {
    expect(redactUrl('https://scraper:hunter2@metrics.example.com:9100/metrics?token=abc123&job=node&api_key=k&X-Amz-Signature=s&page=2')).toBe(
      'https://REDACTED@metrics.example.com:9100/metrics?token=REDACTED&job=node&api_key=REDACTED&X-Amz-Signature=REDACTED&page=2',
    );
    expect(redactUrl('http://user@host/p?access%5Ftoken=t#frag')).toBe('http://REDACTED@host/p?access%5Ftoken=REDACTED#REDACTED');
    expect(redactUrl('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080'); // nothing secret: as given
    expect(redactUrl('http://127.0.0.1:8080/metrics?match[]=up')).toBe('http://127.0.0.1:8080/metrics?match[]=up');
    expect(redactUrl('not a url with pass')).toBe('(a URL that could not be parsed)');
    expect(redactUrls('GET https://a:b@h/x?password=p failed; retried http://h2/y')).toBe('GET https://REDACTED@h/x?password=REDACTED failed; retried http://h2/y');
  });
});

describe('tallyhouse scrape on a failing target', () => {
  it('prints the target without its credentials, dry run and stored', async () => {
    const server = createServer((_req, res) => res.writeHead(500).end('no'));
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const target = `http://scraper:hunter2@127.0.0.1:${port}/metrics?token=s3cr3t-t0ken&job=x`;
    const printed = `http://REDACTED@127.0.0.1:${port}/metrics?token=REDACTED&job=x`;
    const env = { DATA_DIR: join(mkdtempSync(join(tmpdir(), 'th-redact-')), 'data'), LOG_LEVEL: 'warn', CLI_LOG_LEVEL: 'silent' };

    const dry = runCli(['scrape', '--target', target, '--dry-run'], env);
    expect((await dry.exited).code).toBe(1);
    expect(dry.stderr()).toBe(`tallyhouse scrape: ${printed}: server returned HTTP status 500\n`);

    const stored = runCli(['scrape', '--target', target], env);
    expect((await stored.exited).code).toBe(1);
    expect(stored.stderr()).toBe(`tallyhouse scrape: ${printed}: server returned HTTP status 500\n`);
    for (const secret of ['hunter2', 's3cr3t-t0ken', 'scraper:']) expect(dry.stderr() + stored.stderr() + stored.stdout()).not.toContain(secret);
  }, 120_000);
});
