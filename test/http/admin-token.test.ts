// Issue 31: a bug an audit planted that only a test needing promtool noticed: the admin endpoint running commands
// without its token. Here, with no promtool: a command sent with no token or a wrong one is refused (401) and never
// runs; sent with the token the service wrote to DATA_DIR/admin.json, it runs (so the refusal is the token's).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/service.js';
import { ADMIN_COMMANDS_PATH, ADMIN_FILE, adminExtension } from '../../src/http/admin.js';
import { commandIO } from '../../src/http/command-host.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { testConfig } from '../support/store.js';

let service: Service;
const ran: string[][] = [];

beforeAll(async () => {
  service = await startService(testConfig({ PORT: '0' }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [
      adminExtension({
        commands: {
          probe: async (args) => {
            ran.push(args);
            commandIO().out('probe ran\n');
            return 0;
          },
        },
        reportFatal: () => 1,
      }),
    ],
  });
});
afterAll(async () => {
  await service?.close();
});

function send(authorization?: string) {
  return fetch(`${service.url}${ADMIN_COMMANDS_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    body: JSON.stringify({ argv: ['probe', 'x'] }),
  });
}

describe('the admin endpoint runs commands only with its token', () => {
  it.each([
    ['no Authorization header', undefined],
    ['a wrong token', `Bearer ${'0'.repeat(64)}`],
    ['an empty bearer', 'Bearer '],
    ['another scheme', 'Basic dXNlcjpwYXNz'],
  ])('%s: 401, the command does not run', async (_name, authorization) => {
    const res = await send(authorization);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe('authorization_error');
    expect(ran).toEqual([]);
  });

  it('the token from admin.json: the command runs and its output comes back', async () => {
    const { token } = JSON.parse(readFileSync(join(service.config.DATA_DIR, ADMIN_FILE), 'utf8')) as { token: string };
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    const res = await send(`Bearer ${token}`);
    expect(res.status).toBe(200);
    expect((await res.text()).trim().split('\n').map((l) => JSON.parse(l))).toEqual([{ fd: 1, data: 'probe ran\n' }, { exit: 0 }]);
    expect(ran).toEqual([['x']]);
  });
});
