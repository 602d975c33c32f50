/**
 * The admin endpoint a CLI beside the running service sends its command to (`collect`, `report`, `migrate`,
 * `scrape`): the embedded store allows one process per data directory, so while the service runs, the CLI asks it
 * to run the command and streams back what the command writes. Loopback only, and a bearer token the service
 * writes into DATA_DIR/admin.json (mode 0600) at start-up, so only a user who can read the data directory can
 * use it. The answer is NDJSON: `{"fd":1|2,"data":...}`, `{"file":path,"data":...}`, then `{"exit":code}`; the CLI
 * writes a `file` only when it is the `--out` its user gave (src/cli/remote.ts).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { inReadLane } from '../store/read-lanes.js';
import { runHosted, type CommandHost, type HostedJobRunner } from './command-host.js';
import { sendProblem } from './problem.js';
import type { Extension } from '../runtime.js';
import { preparePrivateDataDir, writePrivateFile } from '../store/private-files.js';

export const ADMIN_COMMANDS_PATH = '/admin/v1/commands';
export const ADMIN_FILE = 'admin.json';

/** What the CLI reads to find the service holding its data directory. */
export const AdminFile = z.object({
  pid: z.number().int(),
  url: z.url().optional(),
  token: z.string().min(32).optional(),
  /** When the process started (/proc/PID/stat): with a server store no lock names the service, and a pid is reused. */
  started: z.string().optional(),
});

/**
 * A process's start time in clock ticks since boot (field 22 of /proc/PID/stat), undefined where /proc cannot be
 * read or the process is gone: the same pid with the same start time is the same process.
 */
export function processStarted(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count from the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}
export type AdminFile = z.infer<typeof AdminFile>;

const CommandBody = z.strictObject({
  argv: z.array(z.string().max(4096)).min(1).max(64),
  tty: z.boolean().default(false),
});

export type HostedCommand = (argv: string[]) => Promise<number>;

export interface AdminOptions {
  /** The commands a CLI may send, by name (argv[0]). */
  commands: Record<string, HostedCommand>;
  /** The service's job runner, once the scheduler exists (collect runs there, on the service's platform source). */
  jobs?: () => HostedJobRunner | undefined;
  /** Turns a command's failure into its message and exit code, as the CLI process would. */
  reportFatal: (err: unknown, err2: (text: string) => void) => number;
}

const isLoopback = (address: string | undefined) => !!address && /^(127\.|::1$|::ffff:127\.)/.test(address);

/**
 * Written by `serve` before it opens the store: a CLI that then finds the directory held by this pid waits for the
 * address instead of failing (any other holder, such as a running CLI command, is reported at once).
 */
export function markServiceStarting(dataDir: string): void {
  preparePrivateDataDir(dataDir);
  const content: AdminFile = { pid: process.pid };
  // A new file every start: one left with a looser mode (or by another user) never receives the token.
  writePrivateFile(join(dataDir, ADMIN_FILE), JSON.stringify(content));
}

export function adminExtension(opts: AdminOptions): Extension {
  return async (rt) => {
    const token = randomBytes(32).toString('hex');
    const expected = createHash('sha256').update(token).digest();
    const file = join(rt.config.DATA_DIR, ADMIN_FILE);

    rt.app.post(ADMIN_COMMANDS_PATH, { bodyLimit: 512 * 1024 }, async (request, reply) => {
      if (!isLoopback(request.socket.remoteAddress)) {
        return sendProblem(reply, 403, 'the admin endpoint answers on loopback only', { code: 'forbidden' });
      }
      // Stryker disable next-line StringLiteral: any text that is not 'Bearer <token>' is refused alike; '' only stands in for a missing header
      const m = /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '');
      const given = m ? createHash('sha256').update(m[1].trim()).digest() : null;
      if (!given || !timingSafeEqual(given, expected)) {
        return sendProblem(reply, 401, `expected "Authorization: Bearer <token from ${ADMIN_FILE}>"`, { code: 'authorization_error' });
      }
      const body = CommandBody.safeParse(request.body);
      if (!body.success) return sendProblem(reply, 400, 'expected {"argv": [command, ...args]}', { code: 'bad_request' });
      const [name, ...args] = body.data.argv;
      const command = opts.commands[name];
      if (!command) return sendProblem(reply, 404, `no command ${JSON.stringify(name)} runs in the service`, { code: 'not_found' });

      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
      const send = (value: unknown) => {
        // Stryker disable next-line ConditionalExpression: a write to a destroyed response is a silent no-op (returns false, no error), so the guard only saves work
        if (!res.destroyed) res.write(`${JSON.stringify(value)}\n`);
      };
      const host: CommandHost = {
        runtime: rt,
        jobs: opts.jobs?.(),
        io: {
          out: (data) => send({ fd: 1, data }),
          err: (data) => send({ fd: 2, data }),
          writeFile: async (path, data) => send({ file: path, data }),
          isTTY: body.data.tty,
        },
      };
      request.log.info({ command: name }, 'running a command for a CLI beside the service');
      let code: number;
      try {
        // A command is bulk work (collect, report, migrate): its reads wait behind interactive ones (49.4).
        code = await inReadLane('heavy', () => runHosted(host, () => command(args)));
      } catch (err) {
        code = opts.reportFatal(err, host.io.err);
      }
      send({ exit: code });
      res.end();
    });

    rt.app.addHook('onListen', async () => {
      const address = rt.app.server.address();
      if (!address || typeof address === 'string') return;
      const host = ['0.0.0.0', '::', ''].includes(rt.config.HOST) ? '127.0.0.1' : rt.config.HOST;
      const url = `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
      const content: AdminFile = { pid: process.pid, url, token, started: processStarted(process.pid) };
      writePrivateFile(file, JSON.stringify(content));
    });
    return {
      name: 'admin',
      async stop() {
        rmSync(file, { force: true });
      },
    };
  };
}
