// Issue 45 acceptance: a fresh service on the simulator, asked before any backfill (what a first start collects: the
// apps, usage's scheduled window, the last 24 h of runner history), at a clock the test sets (2026-12-02 10:00 UTC).
// Oracle: the simulator's usage truth (the cost is known) and the store's own absence of history: no efficiency row
// counts a day without runner history as idle, and the change report over an uncollected baseline and over a 2-day-old
// month says so and calls nothing new or gone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { efficiencyRoutes } from '../../src/api/efficiency-routes.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { decimalToScaled } from '../../src/values.js';
import { runJob } from '../support/jobs.js';
import { testConfig } from '../support/store.js';

const NOW = '2026-12-02T10:00:00Z';
let sim: Sim;
let service: Service;

async function api<T>(path: string): Promise<{ status: number; body: T; headers: Headers; text: string }> {
  const res = await fetch(`${service.url}/api/v1${path}`);
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: (res.headers.get('content-type') ?? '').includes('json') ? (JSON.parse(text) as T) : (undefined as T) };
}

beforeAll(async () => {
  sim = await startSim({ seed: 7, now: NOW, days: 40, apps: 8 });
  service = await startService(testConfig({ PORT: '0', TIMEZONES: 'UTC' }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension([efficiencyRoutes])],
    now: () => new Date(NOW),
  });
  // A first start's scheduled runs: no --from/--to anywhere.
  for (const job of ['apps', 'usage', 'models', 'runners']) {
    const run = await runJob(service, sim, job);
    expect(run.status, `${job}: ${run.error}`).toBe('ok');
  }
}, 300_000);

afterAll(async () => {
  await service?.close();
  await sim?.close();
});

type Row = Record<string, string | number | null>;
interface Coverage { status: string; warning?: string; missing?: Array<{ source: string; from: string; to: string }> }

describe('a fresh service before any backfill', () => {
  it('efficiency: a day without runner history is unattributed, never idle, and the coverage says history is missing', async () => {
    const res = await api<{ rows: Row[]; coverage: Coverage }>('/efficiency?from=2026-11-25&to=2026-12-03');
    expect(res.status).toBe(200);
    const early = res.body.rows.filter((r) => String(r.date) < '2026-12-01');
    // Usage of those days was collected (its cost is known) but their runner history was not.
    expect(early.length).toBeGreaterThan(3);
    for (const r of early) {
      expect(r.history_hours, `${r.date} ${r.app}`).toBe(0);
      expect(r.idle_cost, `${r.date} ${r.app}`).toBe('0');
      expect(decimalToScaled(String(r.unattributed_cost), 12), `${r.date} ${r.app}`).toBe(decimalToScaled(String(r.cost), 12));
      expect(r.idle_share).toBeNull();
    }
    expect(res.body.coverage.status).toBe('partial');
    expect(res.body.coverage.warning).toMatch(/runner history \(UTC\) was not collected for 2026-11-25 to 2026-12-01T\d\d:00:00Z/);
    expect(res.body.coverage.warning).toMatch(/unattributed \(known, not split\), not idle/);
    const csv = await api<never>('/efficiency?from=2026-11-25&to=2026-12-03&format=csv');
    expect(csv.headers.get('x-tallyhouse-coverage')).toBe(`partial; ${res.body.coverage.warning}`);
  });

  it('changes over an uncollected baseline: no group is new, the coverage names the baseline', async () => {
    const res = await api<{ groups: Row[]; totals: Row[]; coverage: Coverage; baseline_from: string }>('/cost/changes?from=2026-11-01&to=2026-12-01');
    expect(res.status).toBe(200);
    expect(res.body.baseline_from).toBe('2026-10-01');
    expect(res.body.groups.length).toBeGreaterThan(3);
    const statuses = new Set(res.body.groups.map((g) => g.status));
    expect(statuses.has('new')).toBe(false);
    expect(statuses.has('gone')).toBe(false);
    expect(statuses.has('baseline_not_collected')).toBe(true);
    for (const t of res.body.totals) expect([t.new, t.gone]).toEqual(['0', '0']);
    expect(res.body.coverage.warning).toMatch(/^Baseline 2026-10-01 to 2026-11-01: serverless usage \(UTC\) was not collected/);
  });

  it('changes over a 2-day-old month: Dec 1-2 against Nov 1-2, with per-day figures, the warning, and no new or gone', async () => {
    const res = await api<{ groups: Row[]; totals: Row[]; coverage: Coverage; from: string; to: string; baseline_from: string; baseline_to: string; current_days: number }>(
      '/cost/changes?from=2026-12-01&to=2027-01-01',
    );
    expect(res.status).toBe(200);
    expect([res.body.from, res.body.to, res.body.baseline_from, res.body.baseline_to, res.body.current_days]).toEqual(['2026-12-01', '2026-12-03', '2026-11-01', '2026-11-03', 2]);
    expect(res.body.groups.length).toBeGreaterThan(3);
    // Nothing is gone: Dec 2 is not over. A group is new only where the baseline days were collected whole and the
    // simulator's truth has no usage of it on Nov 1-2 (a real newcomer, not an artefact of comparing 2 days with 30).
    expect(res.body.groups.filter((g) => g.status === 'gone')).toEqual([]);
    const before = new Set(sim.truth.usage({ from: '2026-11-01', to: '2026-11-03', timezone: 'UTC', timeframe: 'day' }).filter((u) => Number(u.cost_total_nanos) > 0).map((u) => u.app));
    expect(before.size).toBeGreaterThan(3);
    for (const g of res.body.groups.filter((x) => x.status === 'new')) expect(before.has((g.group as unknown as { app: string }).app)).toBe(false);
    expect(res.body.coverage.status).not.toBe('complete');
    expect(res.body.coverage.warning).toMatch(/Current period 2026-12-01 to 2026-12-03: serverless usage \(UTC\) was not collected for 2026-12-02T/);
    for (const t of res.body.totals) {
      const per = decimalToScaled(String(t.current_per_day), 12);
      const whole = decimalToScaled(String(t.current), 12);
      expect(per * 2n - whole <= 1n && whole - per * 2n <= 1n).toBe(true);
    }
  });
});
