// Issue 30.2, 30.3 and 30.7: the commands a newcomer types from the README, run as a user runs them (a child
// process, demo mode: no platform key, the built-in simulator). Each wrong input is one line naming it and the way
// on, with a documented exit code, before any work where the input alone is wrong.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/process.js';

const servers: Server[] = [];
afterAll(() => {
  for (const s of servers) s.close();
});

const freshDir = (name: string) => join(mkdtempSync(join(tmpdir(), `th-${name}-`)), 'data');
const demo = (dataDir: string) => ({ DATA_DIR: dataDir, SVC_API_KEY: undefined, SVC_ADMIN_KEY: undefined, SCRAPE_TARGETS: undefined, TALLYHOUSE_URL: undefined, TALLYHOUSE_ADMIN_TOKEN: undefined });

async function cli(args: string[], env: Record<string, string | undefined>) {
  const p = runCli(args, env);
  const { code } = await p.exited;
  return { code, out: p.stdout(), err: p.stderr() };
}

describe('logs tail (30.2, 30.3)', () => {
  it('an app the platform does not know ends the tail: one line with the 404, exit 1, no reconnecting', async () => {
    const r = await cli(['logs', 'tail', '--app', 'acme/flux-dev', '--level', 'ERROR'], demo(freshDir('tail404')));
    expect(r.code).toBe(1);
    expect(r.err).not.toContain('reconnecting');
    const refused = r.err.split('\n').filter((l) => l.includes('refused'));
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatch(/^tallyhouse logs tail: the platform refused the stream \(404 not_found\): .*no app 'acme\/flux-dev'/);
  }, 120_000);

  it('an app named without its owner is the same, with the app it likely meant (the simulator has acme/depth-v3)', async () => {
    const r = await cli(['logs', 'tail', '--app', 'depth-v3'], demo(freshDir('tailowner')));
    expect(r.code).toBe(1);
    expect(r.err).not.toContain('reconnecting');
    expect(r.err).toMatch(/\(404 not_found\): .*no app 'depth-v3'.*; did you mean --app acme\/depth-v3\?\n/);
  }, 120_000);

  it('--level err is refused before anything starts, naming the levels', async () => {
    const dir = freshDir('taillevel');
    const r = await cli(['logs', 'tail', '--level', 'err'], demo(dir));
    expect(r.code).toBe(2);
    expect(r.err).toBe(
      'tallyhouse logs tail: --level: unknown level "err"; did you mean "ERROR"?; expected one of TRACE, DEBUG, INFO, NOTICE, WARN, WARNING, ERROR, CRITICAL, FATAL (any case; comma-separated for several)\n',
    );
    expect(existsSync(dir)).toBe(false);
  }, 120_000);
});

describe('scrape (30.7)', () => {
  it('a target without its scheme is one line with the URL it likely meant (it printed a zod issue array)', async () => {
    const r = await cli(['scrape', '--target', '127.0.0.1:25080/metrics'], demo(freshDir('scrapeurl')));
    expect(r.code).toBe(2);
    expect(r.err.split('\n')[0]).toBe(
      'tallyhouse scrape: --target: expected an http(s) URL such as http://127.0.0.1:9100/metrics; did you mean --target http://127.0.0.1:25080/metrics?',
    );
    expect(r.err).not.toContain('"code"');
  }, 120_000);

  it('in demo mode scrapes the built-in simulator, as the service does (it said to set SVC_API_KEY)', async () => {
    const r = await cli(['scrape', '--dry-run'], demo(freshDir('scrapedemo')));
    expect(r.err).not.toContain('SVC_API_KEY or');
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/^tallyhouse scrape: demo mode \(no SVC_API_KEY\): scraping the built-in platform simulator, as the service does\nplatform 127\.0\.0\.1:\d+: \d+ samples \(not stored: dry run\)\n$/);
    const names = new Set(r.out.trim().split('\n').map((l) => (JSON.parse(l) as { name: string }).name));
    // The simulator's exposition (src/sim/metrics.ts): runners per app and state.
    expect(names.has('svc_app_runners')).toBe(true);
  }, 120_000);
});

describe('the CLI beside a service (30.7)', () => {
  it('a wrong TALLYHOUSE_ADMIN_TOKEN is a configuration error naming it (it asked "is it still starting, or stopping?")', async () => {
    // A stand-in for the admin endpoint answering as src/http/admin.ts does to a token that is not its own.
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { type: 'authorization_error', message: 'expected "Authorization: Bearer <token from admin.json>"' } }));
      });
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const r = await cli(['collect', 'apps'], { ...demo(freshDir('admintoken')), TALLYHOUSE_URL: url, TALLYHOUSE_ADMIN_TOKEN: 'b'.repeat(64) });
    expect(r.code).toBe(2);
    expect(r.err).toBe(
      `tallyhouse: invalid configuration: TALLYHOUSE_ADMIN_TOKEN: the admin token of the service at ${url}, which refused this one (HTTP 401): copy "token" from that service's DATA_DIR/admin.json\n`,
    );
  }, 120_000);
});

describe('collect (30.7)', () => {
  it('a range wholly in the future is refused before anything is opened (it said "0 rows", exit 0)', async () => {
    const dir = freshDir('future');
    // wall-clock: the CLI refuses a range in the future before the store opens, by the machine's clock
    const year = new Date().getUTCFullYear() + 1;
    const r = await cli(['collect', 'usage', '--from', `${year}-01-01`, '--to', `${year}-02-01`], demo(dir));
    expect(r.code).toBe(2);
    expect(r.err).toMatch(new RegExp(`^tallyhouse collect usage: --from: ${year}-01-01T00:00:00\\.000Z is in the future \\(now \\S+Z\\): nothing to collect; give a range that has started\\n$`));
    expect(existsSync(dir)).toBe(false);
  }, 120_000);
});

describe('report focus on a month not collected in UTC (30.5)', () => {
  it('names the commands with the month\'s dates, as the finance report does (it said `--timezone UTC ...`)', async () => {
    const r = await cli(['report', 'focus', '--month', '2026-10'], demo(freshDir('focushint')));
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      'tallyhouse report focus: no usage is collected in UTC for 2026-10 (a FOCUS file is in UTC days); collect it with: ' +
        'tallyhouse collect usage --timezone UTC --from 2026-10-01 --to 2026-11-01 and tallyhouse collect models --timezone UTC --from 2026-10-01 --to 2026-11-01, or add UTC to TIMEZONES\n',
    );
  }, 120_000);
});

describe('an unexpected error', () => {
  it('is one line without a stack, which --debug prints', async () => {
    // DATA_DIR naming a regular file: nothing classifies that error, so it is the "unexpected" path.
    const file = join(mkdtempSync(join(tmpdir(), 'th-unexpected-')), 'not-a-dir');
    writeFileSync(file, '');
    const r = await cli(['migrate'], { ...demo(file), LOG_LEVEL: 'info', CLI_LOG_LEVEL: 'warn' });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^tallyhouse: Error: EEXIST: file already exists, mkdir '[^']+' \(unexpected: run it again with --debug or LOG_LEVEL=debug for the stack, and report it\)\n$/);
    const d = await cli(['migrate', '--debug'], { ...demo(file), LOG_LEVEL: 'info', CLI_LOG_LEVEL: 'warn' });
    expect(d.code).toBe(1);
    expect(d.err).toMatch(/^tallyhouse: Error: EEXIST[^\n]*\n {4}at /);
  }, 120_000);
});
