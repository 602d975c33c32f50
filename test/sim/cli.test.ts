// `tallyhouse sim` and `tallyhouse sim truth`: exit codes, the truth JSON, and the served sandbox.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { simCommand } from '../../src/sim/cli.js';
import { buildWorld } from '../../src/sim/world.js';
import { startSim } from '../../src/sim/index.js';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => (out.push(String(s)), true));
  vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => (err.push(String(s)), true));
  return { out, err };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('sim CLI', () => {
  it('an unknown option prints the usage on stderr and exits 2', async () => {
    const { err } = capture();
    expect(await simCommand(['--nope'])).toBe(2);
    expect(err.join('')).toMatch(/usage: tallyhouse sim/);
    expect(await simCommand(['truth', '--from', '2026-11-01'])).toBe(2);
    expect(await simCommand(['truth', '--from', '2026-11-01', '--to', '2026-11-02', '--group-by', 'color'])).toBe(2);
  });

  it('sim truth prints usage grouped by app and day in the zone, with exact nanos', async () => {
    const { out } = capture();
    const code = await simCommand(['truth', '--seed', '3', '--apps', '8', '--from', '2026-11-18', '--to', '2026-11-21', '--timezone', 'America/New_York', '--group-by', 'app,day']);
    expect(code).toBe(0);
    vi.restoreAllMocks();
    const result = JSON.parse(out.join(''));
    expect(result).toMatchObject({ kind: 'usage', timezone: 'America/New_York', group_by: ['app', 'day'], seed: 3 });
    expect(new Set(result.rows.map((r: any) => r.day))).toEqual(new Set(['2026-11-18T00:00:00-05:00', '2026-11-19T00:00:00-05:00', '2026-11-20T00:00:00-05:00']));
    const sim = await startSim({ seed: 3, apps: 8 });
    try {
      const truth = sim.truth.usage({ from: '2026-11-18', to: '2026-11-21', timezone: 'America/New_York', timeframe: 'day' });
      for (const row of result.rows) {
        const parts = truth.filter((t) => t.app === row.app && t.bucket === row.day);
        expect(row.quantity).toBe(parts.reduce((a, t) => a + t.quantity, 0));
        expect(row.cost_total_nanos).toBe(parts.reduce((a, t) => a + t.cost_total_nanos, 0));
        expect(Math.round(row.cost_total * 1e9)).toBe(row.cost_total_nanos);
      }
    } finally {
      await sim.close();
    }
    expect(buildWorld({ seed: 3, nowMs: Date.parse('2026-11-21T12:00:00Z'), days: 35, apps: 8, requestsPerHour: 20 }).apps.filter((a) => a.ownedByCaller)).toHaveLength(8);
  });

  it('sim truth --kind requests counts requests per endpoint and day', async () => {
    const { out } = capture();
    expect(await simCommand(['truth', '--kind', 'requests', '--apps', '4', '--from', '2026-11-20', '--to', '2026-11-21'])).toBe(0);
    vi.restoreAllMocks();
    const result = JSON.parse(out.join(''));
    expect(result.rows.length).toBeGreaterThan(0);
    for (const r of result.rows) {
      expect(r.day).toBe('2026-11-20');
      expect(r.request_count).toBe(r.billed_count + r.unbilled_count);
    }
  });

  it('sim serves until SIGINT, printing the URL and keys', async () => {
    const { out } = capture();
    const running = simCommand(['--port', '0', '--apps', '5', '--api-key', 'k-api', '--admin-key', 'k-admin']);
    // A state to wait for (the keys printed), bounded by the test's own timeout rather than a short poll.
    while (!out.join('').includes('SVC_ADMIN_KEY')) await new Promise((r) => setTimeout(r, 20));
    const text = out.join('');
    const url = /SVC_BASE_URL=(\S+)/.exec(text)![1];
    expect(text).toContain('SVC_API_KEY=k-api');
    const res = await fetch(`${url}/v1/serverless/apps`, { headers: { authorization: 'Key k-api' } });
    expect(((await res.json()) as { apps: unknown[] }).apps).toHaveLength(5);
    process.emit('SIGINT');
    expect(await running).toBe(0);
  });
});
