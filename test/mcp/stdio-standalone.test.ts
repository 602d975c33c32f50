// Issue 33: `tallyhouse mcp` with no service holding DATA_DIR opens the store itself and answers on stdio. The store
// is filled by `tallyhouse collect usage` from the simulator (this process never opens it: chDB binds one data
// directory per process); the oracle is the simulator's truth.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startSim, type Sim } from '../../src/sim/index.js';
import { decimalToScaled } from '../../src/values.js';
import { BIN, runCli } from '../support/process.js';
import { tempDataDir } from '../support/store.js';
import { nonEmpty } from '../support/truth.js';

let sim: Sim;
let env: Record<string, string>;
let client: Client;
let stderr = '';

beforeAll(async () => {
  sim = await startSim({ seed: 7, now: '2026-11-21T12:00:00Z', days: 12, apps: 3 });
  env = { DATA_DIR: tempDataDir('tallyhouse-mcp-'), SVC_BASE_URL: sim.url, SVC_API_KEY: sim.keys.api, SVC_ADMIN_KEY: sim.keys.admin, TIMEZONES: 'UTC', LOG_LEVEL: 'warn' };
  const collect = runCli(['collect', 'usage', '--from', '2026-11-10', '--to', '2026-11-21', '--timezone', 'UTC'], env);
  expect((await collect.exited).code, collect.stderr()).toBe(0);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp'],
    env: { ...(process.env as Record<string, string>), NODE_ENV: 'test', ...env },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  client = new Client({ name: 'tallyhouse-test', version: '1' });
  await client.connect(transport);
}, 180_000);

afterAll(async () => {
  await client?.close();
  await sim?.close();
});

describe('tallyhouse mcp without a running service', () => {
  it('opens the store and answers cost_breakdown per app equal to the truth to the nano-dollar', async () => {
    const res = (await client.callTool({ name: 'cost_breakdown', arguments: { from: '2026-11-10', to: '2026-11-21', group_by: ['app'] } })) as unknown as {
      isError?: boolean;
      structuredContent: { rows: Array<{ app: string; cost: string }> };
      content: Array<{ text: string }>;
    };
    expect(res.isError, res.content[0]?.text).toBeFalsy();
    const truth = new Map<string, bigint>();
    for (const r of nonEmpty(sim.truth.usage({ from: '2026-11-10', to: '2026-11-21', timezone: 'UTC', timeframe: 'day' }), 'usage')) {
      truth.set(r.app, (truth.get(r.app) ?? 0n) + BigInt(r.cost_total_nanos));
    }
    const got = res.structuredContent.rows.map((r) => [r.app, decimalToScaled(r.cost, 9)] as const).filter(([, v]) => v !== 0n).sort();
    expect(got.length).toBeGreaterThan(0);
    expect(got).toEqual([...truth].filter(([, v]) => v !== 0n).sort());
    expect(stderr).not.toContain('answering through the service');
  });

  it('pipeline_health reports the usage run the CLI made, and no drain in this process', async () => {
    const res = (await client.callTool({ name: 'pipeline_health', arguments: {} })) as unknown as { structuredContent: { jobs: Array<{ job: string; last_run: { status: string } | null }>; drain: { state: string } } };
    const usage = res.structuredContent.jobs.find((j) => j.job === 'usage');
    expect(usage?.last_run?.status).toBe('ok');
    expect(res.structuredContent.drain.state).toBe('not running in this process');
  });
});
