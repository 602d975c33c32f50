// The loopback admin endpoint (src/http/admin.ts) on a bare fastify, without a store (issue 31: the mutants the
// service tests left alive). What the README and the module's header promise, checked with literals: DATA_DIR/admin.json
// is written mode 0600 with {pid, url, token} once the server listens and removed at stop; a command runs only for
// a loopback peer with `Authorization: Bearer <that token>`; the answer is NDJSON {fd,data} / {file,data} / {exit}.
import { mkdtempSync, readFileSync, rmSync, statSync, existsSync, chmodSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import Fastify, { type FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_COMMANDS_PATH, ADMIN_FILE, AdminFile, adminExtension, markServiceStarting, type AdminOptions } from '../../src/http/admin.js';
import { commandHost, commandIO, type HostedJobRunner } from '../../src/http/command-host.js';
import type { Config } from '../../src/config.js';
import type { Component, Runtime } from '../../src/runtime.js';

const root = mkdtempSync(join(tmpdir(), 'th-admin-mutation-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface Started {
  app: FastifyInstance;
  dataDir: string;
  component: Component;
  logs: Record<string, unknown>[];
  port: number;
}

let dirs = 0;
/** The admin extension on a bare fastify listening on 127.0.0.1 (the config's HOST only shapes the url it writes). */
async function start(opts: Partial<AdminOptions> = {}, host = '127.0.0.1', listen: { path?: string } = {}): Promise<Started> {
  const dataDir = join(root, `d${++dirs}`);
  markServiceStarting(dataDir);
  const logs: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) logs.push(JSON.parse(line));
      done();
    },
  });
  const app = Fastify({ loggerInstance: pino({ level: 'info' }, stream) }) as unknown as FastifyInstance;
  const rt = { config: { DATA_DIR: dataDir, HOST: host } as Config, app } as unknown as Runtime & { app: FastifyInstance };
  const component = (await adminExtension({ commands: {}, reportFatal: () => 99, ...opts })(rt)) as Component;
  if (listen.path) await app.listen({ path: listen.path });
  else await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  return { app, dataDir, component, logs, port: typeof address === 'object' && address ? address.port : 0 };
}

const adminJson = (dataDir: string) => JSON.parse(readFileSync(join(dataDir, 'admin.json'), 'utf8')) as { pid: number; url?: string; token?: string };
const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);

const ran: string[][] = [];
const jobs: HostedJobRunner = { run: async () => ({ status: 'ok', rows: 0, retries: 0, durationMs: 0 }) };
const commands: AdminOptions['commands'] = {
  probe: async (args) => {
    ran.push(args);
    const io = commandIO();
    io.out(`out ${args.join(' ')}\n`);
    io.err(`tty=${io.isTTY} jobs=${commandHost()?.jobs === jobs}\n`);
    await io.writeFile('/tmp/report.csv', 'a,b\n');
    return 7;
  },
  boom: async () => {
    throw new Error('boom');
  },
};

describe('the admin endpoint', () => {
  let s: Started;
  let token: string;
  beforeAll(async () => {
    s = await start({
      commands,
      jobs: () => jobs,
      reportFatal: (err, err2) => {
        err2(`fatal: ${(err as Error).message}\n`);
        return 3;
      },
    });
    token = adminJson(s.dataDir).token!;
  });
  afterAll(async () => {
    await s.app.close();
  });
  afterEach(() => {
    ran.length = 0;
  });

  const send = (body: unknown, headers: Record<string, string> = {}, remoteAddress = '127.0.0.1') =>
    s.app.inject({
      method: 'POST',
      url: '/admin/v1/commands',
      remoteAddress,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
      payload: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const lines = (text: string) => text.trim().split('\n').map((l) => JSON.parse(l));

  it('names: /admin/v1/commands and admin.json', () => {
    expect(ADMIN_COMMANDS_PATH).toBe('/admin/v1/commands');
    expect(ADMIN_FILE).toBe('admin.json');
  });

  it('admin.json: mode 0600, this pid, the loopback url it listens on, a 64-hex-digit token', () => {
    expect(modeOf(join(s.dataDir, 'admin.json'))).toBe('600');
    expect(adminJson(s.dataDir)).toEqual({ pid: process.pid, url: `http://127.0.0.1:${s.port}`, token: expect.stringMatching(/^[0-9a-f]{64}$/), started: expect.stringMatching(/^\d+$/) });
  });

  it('with the token: the command runs; its stdout, stderr, file and exit code come back as NDJSON', async () => {
    const res = await send({ argv: ['probe', 'a', 'b'] });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/x-ndjson');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(lines(res.body)).toEqual([
      { fd: 1, data: 'out a b\n' },
      { fd: 2, data: 'tty=false jobs=true\n' },
      { file: '/tmp/report.csv', data: 'a,b\n' },
      { exit: 7 },
    ]);
    expect(ran).toEqual([['a', 'b']]);
    expect(s.logs).toContainEqual(expect.objectContaining({ command: 'probe', msg: 'running a command for a CLI beside the service' }));
  });

  it('tty: true reaches the command', async () => {
    const res = await send({ argv: ['probe'], tty: true });
    expect(lines(res.body)[1]).toEqual({ fd: 2, data: 'tty=true jobs=true\n' });
  });

  it('the scheme in any case, blanks around the token', async () => {
    const res = await send({ argv: ['probe'] }, { authorization: `bearer   ${token}  ` });
    expect(res.statusCode).toBe(200);
    expect(ran).toEqual([[]]);
  });

  it('a command that throws: reportFatal writes its message to stderr and gives the exit code', async () => {
    const res = await send({ argv: ['boom'] });
    expect(res.statusCode).toBe(200);
    expect(lines(res.body)).toEqual([{ fd: 2, data: 'fatal: boom\n' }, { exit: 3 }]);
  });

  it.each([
    ['no Authorization header', {}],
    ['an empty one', { authorization: '' }],
    ['a wrong token', { authorization: `Bearer ${'0'.repeat(64)}` }],
    ['the token without the scheme', { authorization: 'TOKEN' }],
    ['the token after another word', { authorization: 'xBearer TOKEN' }],
    ['another scheme', { authorization: 'Basic TOKEN' }],
    ['the token with a character more', { authorization: 'Bearer TOKENx' }],
  ])('%s: 401 naming admin.json, nothing runs', async (_name, headers: Record<string, string>) => {
    const h = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, v.replace('TOKEN', token)]));
    const res = await s.app.inject({
      method: 'POST',
      url: '/admin/v1/commands',
      remoteAddress: '127.0.0.1',
      headers: { 'content-type': 'application/json', ...h },
      payload: JSON.stringify({ argv: ['probe'] }),
    });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error: { type: 'authorization_error', message: 'expected "Authorization: Bearer <token from admin.json>"' } });
    expect(ran).toEqual([]);
  });

  it.each(['127.0.0.1', '127.9.8.7', '::1', '::ffff:127.0.0.1'])('a loopback peer %s is served', async (address) => {
    expect((await send({ argv: ['probe'] }, {}, address)).statusCode).toBe(200);
  });

  it.each(['10.0.0.1', '192.168.1.127', '1127.0.0.1', '::12', '::1:5', 'fe80::1', '::ffff:10.0.0.1', '::ffff:1127.0.0.1'])(
    'another peer %s: 403 even with the token, nothing runs',
    async (address) => {
      const res = await send({ argv: ['probe'] }, {}, address);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({ error: { type: 'forbidden', message: 'the admin endpoint answers on loopback only' } });
      expect(ran).toEqual([]);
    },
  );

  const badRequest = { error: { type: 'bad_request', message: 'expected {"argv": [command, ...args]}' } };
  it.each([
    ['no argv', {}],
    ['an empty argv', { argv: [] }],
    ['65 arguments', { argv: ['probe', ...Array.from({ length: 64 }, () => 'x')] }],
    ['an argument of 4097 characters', { argv: ['probe', 'x'.repeat(4097)] }],
    ['a key more', { argv: ['probe'], cwd: '/' }],
    ['a tty that is not a boolean', { argv: ['probe'], tty: 'yes' }],
  ])('%s: 400, nothing runs', async (_name, body) => {
    const res = await send(body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject(badRequest);
    expect(ran).toEqual([]);
  });

  it('64 arguments of 4096 characters each are taken', async () => {
    const argv = ['probe', ...Array.from({ length: 63 }, () => 'y'.repeat(4096))];
    const res = await send({ argv });
    expect(res.statusCode).toBe(200);
    expect(ran).toEqual([argv.slice(1)]);
  });

  it('a body over 512 KiB: 413; one just under it is read (and refused for its shape)', async () => {
    const near = JSON.stringify({ argv: Array.from({ length: 127 }, () => 'z'.repeat(4096)) });
    expect(near.length).toBeLessThan(512 * 1024);
    expect((await send(near)).statusCode).toBe(400);
    const over = JSON.stringify({ argv: Array.from({ length: 129 }, () => 'z'.repeat(4096)) });
    expect(over.length).toBeGreaterThan(512 * 1024);
    expect((await send(over)).statusCode).toBe(413);
    expect(ran).toEqual([]);
  });

  it('an unknown command: 404 naming it', async () => {
    const res = await send({ argv: ['drop-everything', 'now'] });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ error: { type: 'not_found', message: 'no command "drop-everything" runs in the service' } });
  });
});

describe('admin.json', () => {
  it('markServiceStarting: a new 0600 file holding only the pid, in a 0700 DATA_DIR, replacing a looser one', () => {
    const dataDir = join(root, 'starting');
    markServiceStarting(dataDir);
    chmodSync(dataDir, 0o755);
    writeFileSync(join(dataDir, 'admin.json'), '{"pid":1,"token":"x"}', { mode: 0o644 });
    chmodSync(join(dataDir, 'admin.json'), 0o644);
    markServiceStarting(dataDir);
    expect(modeOf(dataDir)).toBe('700');
    expect(modeOf(join(dataDir, 'admin.json'))).toBe('600');
    expect(adminJson(dataDir)).toEqual({ pid: process.pid });
  });

  it.each([
    ['0.0.0.0', 'http://127.0.0.1'],
    ['::', 'http://127.0.0.1'],
    ['', 'http://127.0.0.1'],
    ['127.0.0.2', 'http://127.0.0.2'],
    ['::1', 'http://[::1]'],
    ['localhost', 'http://localhost'],
  ])('HOST %j: the url the CLI is told is %s:<port>', async (host, base) => {
    const s = await start({}, host);
    try {
      expect(adminJson(s.dataDir).url).toBe(`${base}:${s.port}`);
    } finally {
      await s.app.close();
    }
  });

  it('listening on a unix socket: no url to write, admin.json keeps the starting pid only', async () => {
    const s = await start({}, '127.0.0.1', { path: join(root, 'admin.sock') });
    try {
      expect(adminJson(s.dataDir)).toEqual({ pid: process.pid });
    } finally {
      await s.app.close();
    }
  });

  it('removed when the service stops (a component named admin); a second stop finds it gone and is fine', async () => {
    const s = await start();
    expect(s.component.name).toBe('admin');
    expect(existsSync(join(s.dataDir, 'admin.json'))).toBe(true);
    await s.component.stop();
    expect(existsSync(join(s.dataDir, 'admin.json'))).toBe(false);
    await expect(s.component.stop()).resolves.toBeUndefined();
    await s.app.close();
  });

  it('a service without a job runner: the command sees none', async () => {
    const s = await start({
      commands: {
        jobs: async () => {
          commandIO().out(`jobs=${commandHost()?.jobs === undefined ? 'none' : 'some'}\n`);
          return 0;
        },
      },
    });
    try {
      const { token } = adminJson(s.dataDir);
      const res = await s.app.inject({
        method: 'POST',
        url: '/admin/v1/commands',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        payload: JSON.stringify({ argv: ['jobs'] }),
      });
      expect(res.body.trim().split('\n').map((l) => JSON.parse(l))).toEqual([{ fd: 1, data: 'jobs=none\n' }, { exit: 0 }]);
    } finally {
      await s.app.close();
    }
  });

  it('AdminFile: a pid integer; an optional url; an optional token of at least 32 characters', () => {
    expect(AdminFile.safeParse({ pid: 12 }).success).toBe(true);
    expect(AdminFile.safeParse({ pid: 12, url: 'http://127.0.0.1:1', token: 't'.repeat(32) }).success).toBe(true);
    expect(AdminFile.safeParse({ pid: 12.5 }).success).toBe(false);
    expect(AdminFile.safeParse({}).success).toBe(false);
    expect(AdminFile.safeParse({ pid: 12, token: 't'.repeat(31) }).success).toBe(false);
    expect(AdminFile.safeParse({ pid: 12, url: 'not a url' }).success).toBe(false);
  });
});
