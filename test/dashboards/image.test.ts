// wall-clock-file: a deadline for a container to be ready, not an expectation
// The production image's layout without Docker: the service compiled by `npm run build` (scripts/build.mjs) into
// dist/, with the migrations in dist/sql/, bin/tallyhouse.js, and no embedded engine (the Dockerfile removes chdb's native
// library; here a module hook makes `chdb` unresolvable). It must migrate and serve against a ClickHouse server.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startClickHouseHttp, type ClickHouseHttp } from '../support/clickhouse-http.js';
import { freePort } from '../support/prometheus.js';
import { processDataDir } from '../support/store.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const NO_CHDB_HOOK = `import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(\`
export async function resolve(specifier, context, next) {
  if (specifier === 'chdb' || specifier.startsWith('chdb/') || specifier.startsWith('@chdb/')) {
    const err = new Error('Cannot find package ' + specifier + ' (not in the production image)');
    err.code = 'ERR_MODULE_NOT_FOUND';
    throw err;
  }
  return next(specifier, context);
}\`));
`;

/** The image's /app: dist/ (compiled), dist/sql/, the demo scenario, bin/, package.json, node_modules (linked). */
async function imageLayout(): Promise<string> {
  const app = mkdtempSync(join(tmpdir(), 'tallyhouse-image-'));
  await promisify(execFile)(process.execPath, [join(ROOT, 'scripts/build.mjs'), '--outDir', join(app, 'dist')], { cwd: ROOT });
  cpSync(join(ROOT, 'bin'), join(app, 'bin'), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(app, 'package.json'));
  symlinkSync(join(ROOT, 'node_modules'), join(app, 'node_modules'), 'dir');
  writeFileSync(join(app, 'no-chdb.mjs'), NO_CHDB_HOOK);
  return app;
}

/** Built once for the file, before its tests (compiling takes most of the time; a busy machine takes minutes). */
let layout: Promise<string> | undefined;
const imageApp = () => (layout ??= imageLayout());
beforeAll(imageApp);

let clickhouse: ClickHouseHttp | undefined;
let child: ChildProcess | undefined;

afterAll(async () => {
  child?.kill('SIGKILL');
  await clickhouse?.close();
});

describe('the production image layout', () => {
  // src/store/client.ts loads ./embedded.js (and with it chdb) only when CLICKHOUSE_URL is unset.
  it('migrates and serves against a ClickHouse server without the embedded engine, and stops cleanly', async () => {
    const app = await imageApp();
    clickhouse = await startClickHouseHttp({ dataDir: processDataDir() });
    const port = await freePort();
    const output: string[] = [];
    child = spawn(process.execPath, ['--import', './no-chdb.mjs', 'bin/tallyhouse.js', 'serve'], {
      cwd: app,
      env: {
        PATH: process.env.PATH,
        NODE_ENV: 'production',
        CLICKHOUSE_URL: clickhouse.url,
        HOST: '127.0.0.1',
        PORT: String(port),
        DATA_DIR: join(app, 'data'),
        JOBS_ENABLED: 'false',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (b) => output.push(String(b)));
    child.stderr!.on('data', (b) => output.push(String(b)));
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));

    const url = `http://127.0.0.1:${port}`;
    // A bound under the test's timeout (vitest.config.ts), so a service that never gets ready shows its output.
    const deadline = Date.now() + 150_000;
    let ready = false;
    while (!ready && Date.now() < deadline) {
      ready = await fetch(`${url}/readyz`).then((r) => r.ok, () => false);
      if (!ready) await new Promise((r) => setTimeout(r, 250));
      if (child.exitCode !== null) break;
    }
    expect(ready, output.join('')).toBe(true);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toContain('tallyhouse_job_interval_seconds');
    const tables = await (await fetch(`${clickhouse.url}/?query=${encodeURIComponent("SELECT count() FROM system.tables WHERE database = 'tallyhouse'")}`)).text();
    expect(Number(tables.trim())).toBeGreaterThanOrEqual(17);

    child.kill('SIGTERM');
    expect(await exited, output.join('')).toBe(0);
  });

  it('without CLICKHOUSE_URL says in one line that it needs one, and exits 1', async () => {
    const app = await imageApp();
    const p = spawn(process.execPath, ['--import', './no-chdb.mjs', 'bin/tallyhouse.js', 'migrate'], {
      cwd: app,
      env: { PATH: process.env.PATH, NODE_ENV: 'production', DATA_DIR: join(app, 'data') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    p.stderr!.on('data', (b) => (stderr += String(b)));
    const code = await new Promise<number | null>((resolve) => p.once('exit', (c) => resolve(c)));
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toEqual([expect.stringMatching(/^tallyhouse: the embedded store \(chDB\) is not installed here .*set CLICKHOUSE_URL/)]);
  });
});
