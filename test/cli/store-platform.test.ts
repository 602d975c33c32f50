// Issue 44.1: a shell without the platform keys ran `collect` in demo mode and wrote the simulator's invented usage
// into the real store (exit 0, no warning), and beside a running service on a server store it was not handed over.
// Now the store records the platform that filled it, a keyless command refuses with one line naming both, and a
// command beside a running service is handed to it whatever the store kind.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import { ADMIN_FILE } from '../../src/http/admin.js';
import { startClickHouseHttp, type ClickHouseHttp } from '../support/clickhouse-http.js';
import { runCli } from '../support/process.js';
import { tempDataDir } from '../support/store.js';

let sim: Sim;
let ch: ClickHouseHttp;
beforeAll(async () => {
  sim = await startSim({ seed: 44, now: '2026-11-21T12:00:00Z', apps: 6, days: 10 });
  ch = await startClickHouseHttp({ dataDir: tempDataDir() });
});
afterAll(async () => {
  await sim?.close();
  await ch?.close();
});

const RANGE = ['--from', '2026-11-18', '--to', '2026-11-20'];
const keyless = { SVC_API_KEY: '', SVC_ADMIN_KEY: '', SVC_BASE_URL: undefined, CLI_LOG_LEVEL: 'silent' };
const keyed = () => ({ SVC_BASE_URL: sim.url, SVC_API_KEY: sim.keys.api, SVC_ADMIN_KEY: sim.keys.admin, CLI_LOG_LEVEL: 'silent' });

async function cli(args: string[], env: Record<string, string | undefined>) {
  const p = runCli(args, env);
  const { code } = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

async function serverCount(database: string, sql: string): Promise<number> {
  const res = await fetch(`${ch.url}/?database=${database}`, { method: 'POST', body: `${sql} FORMAT JSONEachRow` });
  return Number((JSON.parse((await res.text()).trim()) as { n: string }).n);
}

const refusal = (url: string) =>
  new RegExp(
    `^tallyhouse collect usage: demo mode: [^\\n]*\\ntallyhouse: this store was filled from the platform at ${url.replace(/[.:/]/g, '\\$&')} \\(key [0-9a-f]{8}…\\); collect usage would write from the built-in platform simulator \\(demo mode: no SVC_API_KEY / SVC_ADMIN_KEY set\\): refused \\(set SVC_API_KEY and SVC_ADMIN_KEY as the service has them, or ALLOW_PLATFORM_CHANGE=true writes anyway \\(a deliberate move to another platform\\)\\)\\n$`,
  );

/** Starts `serve` and waits until its admin file names its address (a CLI beside it is handed its commands then). */
async function serve(env: Record<string, string | undefined>) {
  const p = runCli(['serve'], { ...env, PORT: '0', JOBS_ENABLED: 'false', LOG_LEVEL: 'info' });
  await p.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)"/);
  const file = join(env.DATA_DIR!, ADMIN_FILE);
  for (let i = 0; i < 200 && !(existsSync(file) && readFileSync(file, 'utf8').includes('"token"')); i++) await new Promise((r) => setTimeout(r, 50));
  return p;
}

describe('a keyless collect against a store filled from a platform', () => {
  it('embedded store, no service: refused with one line naming both platforms; nothing written', async () => {
    const dataDir = tempDataDir('th-platform-');
    const first = await cli(['collect', 'usage', ...RANGE], { ...keyed(), DATA_DIR: dataDir, CLICKHOUSE_URL: undefined });
    expect(first.code, first.stderr).toBe(0);
    const rows = Number(/usage: (\d+) rows/.exec(first.stderr)?.[1]);
    expect(rows).toBeGreaterThan(0);

    const demo = await cli(['collect', 'usage', ...RANGE], { ...keyless, DATA_DIR: dataDir, CLICKHOUSE_URL: undefined });
    expect(demo.code).toBe(1);
    expect(demo.stderr).toMatch(refusal(sim.url));
    expect(existsSync(join(dataDir, 'demo-prices.json'))).toBe(false);

    // The same platform again (the store's own) is let through, and finds the same rows.
    const again = await cli(['collect', 'usage', ...RANGE], { ...keyed(), DATA_DIR: dataDir, CLICKHOUSE_URL: undefined });
    expect(again.code, again.stderr).toBe(0);
    expect(Number(/usage: (\d+) rows/.exec(again.stderr)?.[1])).toBe(rows);
  }, 180_000);

  it('embedded store beside a running service: handed to the service, which collects from its own platform', async () => {
    const dataDir = tempDataDir('th-platform-svc-');
    const alone = await cli(['collect', 'usage', ...RANGE], { ...keyed(), DATA_DIR: dataDir, CLICKHOUSE_URL: undefined });
    expect(alone.code, alone.stderr).toBe(0);
    const service = await serve({ ...keyed(), DATA_DIR: dataDir, CLICKHOUSE_URL: undefined });
    try {
      const beside = await cli(['collect', 'usage', ...RANGE], { ...keyless, DATA_DIR: dataDir, CLICKHOUSE_URL: undefined });
      expect(beside.code, beside.stderr).toBe(0);
      expect(beside.stderr).not.toMatch(/demo mode/);
      expect(/usage: (\d+) rows/.exec(beside.stderr)?.[1]).toBe(/usage: (\d+) rows/.exec(alone.stderr)?.[1]);
      expect(service.stdout()).toMatch(/"command":"collect"[^\n]*running a command for a CLI beside the service/);
    } finally {
      service.child.kill('SIGTERM');
    }
    expect((await service.exited).code).toBe(0);
  }, 180_000);

  it('server store, no service: refused, and no simulated row reaches the server', async () => {
    const env = { DATA_DIR: tempDataDir('th-platform-ch-'), CLICKHOUSE_URL: ch.url, CLICKHOUSE_DATABASE: 'platform_alone' };
    const first = await cli(['collect', 'usage', ...RANGE], { ...keyed(), ...env });
    expect(first.code, first.stderr).toBe(0);
    const before = await serverCount('platform_alone', 'SELECT count() AS n FROM usage_buckets');
    expect(before).toBeGreaterThan(0);

    const demo = await cli(['collect', 'usage', ...RANGE], { ...keyless, ...env });
    expect(demo.code).toBe(1);
    expect(demo.stderr).toMatch(refusal(sim.url));
    expect(await serverCount('platform_alone', 'SELECT count() AS n FROM usage_buckets')).toBe(before);
    expect(await serverCount('platform_alone', "SELECT count() AS n FROM store_platform WHERE kind = 'simulator'")).toBe(0);
  }, 180_000);

  it('server store beside a running service: handed to the service (no lock names it; its admin file does)', async () => {
    const env = { DATA_DIR: tempDataDir('th-platform-ch-svc-'), CLICKHOUSE_URL: ch.url, CLICKHOUSE_DATABASE: 'platform_svc' };
    const service = await serve({ ...keyed(), ...env });
    try {
      const beside = await cli(['collect', 'usage', ...RANGE], { ...keyless, ...env });
      expect(beside.code, beside.stderr).toBe(0);
      expect(beside.stderr).not.toMatch(/demo mode/);
      expect(service.stdout()).toMatch(/"command":"collect"[^\n]*running a command for a CLI beside the service/);
    } finally {
      service.child.kill('SIGTERM');
    }
    expect((await service.exited).code).toBe(0);
    expect(await serverCount('platform_svc', "SELECT count() AS n FROM store_platform WHERE kind = 'simulator'")).toBe(0);
    expect(await serverCount('platform_svc', 'SELECT count() AS n FROM usage_buckets')).toBeGreaterThan(0);
  }, 180_000);

  it('demo mode never starts implicitly on a server store that records no platform; the CLI says demo mode first', async () => {
    const env = { DATA_DIR: tempDataDir('th-platform-ch-empty-'), CLICKHOUSE_URL: ch.url, CLICKHOUSE_DATABASE: 'platform_empty' };
    const demo = await cli(['collect', 'usage', ...RANGE], { ...keyless, ...env });
    expect(demo.code).toBe(1);
    const lines = demo.stderr.split('\n');
    expect(lines[0]).toBe('tallyhouse collect usage: demo mode: no SVC_API_KEY / SVC_ADMIN_KEY set, so this runs on the built-in platform simulator (invented data, not a platform\'s)');
    expect(lines[1]).toBe(
      `tallyhouse: collect usage would write from the built-in platform simulator (demo mode: no SVC_API_KEY / SVC_ADMIN_KEY set) into the ClickHouse server at ${ch.url}, a shared store that records no platform yet: refused (set SVC_API_KEY and SVC_ADMIN_KEY, or ALLOW_PLATFORM_CHANGE=true writes anyway (a deliberate move to another platform))`,
    );
    expect(await serverCount('platform_empty', 'SELECT count() AS n FROM usage_buckets')).toBe(0);
  }, 180_000);
});
