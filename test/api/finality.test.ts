// Final or provisional (issue 32, acceptance 5): a day inside the late-billing window is provisional, and turns
// final once the window has passed and a re-collection after it read the day as the collection before it had.
// Unit cases are hand-worked; the integration case runs the usage and models jobs against the simulator, moves
// its clock past the window, collects again, and reads the flags from /cost, the finance report and FOCUS.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseCsv } from 'csv-parse/sync';
import { daysFinality } from '../../src/insights/finality.js';
import { startSim, type Sim } from '../../src/sim/index.js';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { runJob } from '../support/jobs.js';
import { testConfig } from '../support/store.js';

describe('daysFinality (hand-worked)', () => {
  // Day 2026-11-20 in UTC ends 2026-11-21T00:00Z; with a 24 h window the window ends 2026-11-22T00:00Z.
  const q = { from: '2026-11-20', to: '2026-11-21', timezone: 'UTC', windowHours: 24 };
  const c = (at: string, fingerprint: string) => ({ day: '2026-11-20', collected_at: at, fingerprint });

  it('is provisional inside the window, whatever was collected', () => {
    const [d] = daysFinality({ ...q, now: new Date('2026-11-21T12:00:00Z'), collections: [c('2026-11-21 06:00:00.000', 'a'), c('2026-11-21 12:00:00.000', 'a')] });
    expect(d).toEqual({ day: '2026-11-20', final: false, reason: 'late_billing_window', window_ends_at: '2026-11-22T00:00:00.000Z' });
  });

  it('waits after the window for a re-collection that agrees with the one before it', () => {
    const now = new Date('2026-11-23T00:00:00Z');
    expect(daysFinality({ ...q, now, collections: [c('2026-11-21 12:00:00.000', 'a')] })[0].reason).toBe('awaiting_recollection');
    // The first collection after the window found late billing (b != a): not final yet.
    expect(daysFinality({ ...q, now, collections: [c('2026-11-21 12:00:00.000', 'a'), c('2026-11-22 01:00:00.000', 'b')] })[0].final).toBe(false);
    // A second one agrees with it: final.
    expect(daysFinality({ ...q, now, collections: [c('2026-11-22 02:00:00.000', 'b'), c('2026-11-21 12:00:00.000', 'a'), c('2026-11-22 01:00:00.000', 'b')] })[0]).toMatchObject({ final: true, reason: 'agreed' });
    // Agreement before the window ends does not count.
    expect(daysFinality({ ...q, now, collections: [c('2026-11-21 12:00:00.000', 'a'), c('2026-11-21 23:59:59.999', 'a')] })[0].final).toBe(false);
  });

  it('takes the day end in its own timezone (New York: 05:00Z the next day)', () => {
    const [d] = daysFinality({ ...q, timezone: 'America/New_York', now: new Date('2026-11-23T00:00:00Z'), collections: [] });
    expect(d.window_ends_at).toBe('2026-11-22T05:00:00.000Z');
  });
});

let sim: Sim;
let service: Service;
const TOKEN = 'test-token-0123456789abcdef';
const api = (path: string) => fetch(`${service.url}/api/v1${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });

beforeAll(async () => {
  sim = await startSim({ seed: 4, now: '2026-11-21T12:00:00Z', days: 10, apps: 2, requestsPerHour: 2 });
  service = await startService(testConfig({ PORT: '0', API_TOKENS: TOKEN, TIMEZONES: 'UTC', LATE_BILLING_WINDOW_HOURS: '24' }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension()],
  });
}, 120_000);

afterAll(async () => {
  await service?.close();
  await sim?.close();
});

async function collect() {
  for (const job of ['usage', 'models']) {
    const run = await runJob(service, sim, job, { from: '2026-11-19', to: '2026-11-22', timezone: 'UTC' });
    expect(run.status, run.error).toBe('ok');
  }
}

async function flags() {
  const cost = (await (await api('/cost?from=2026-11-19&to=2026-11-22&group_by=day')).json()) as { final: boolean; provisional_days: string[]; rows: Array<{ day: string; final: boolean }> };
  const focusRes = await api('/reports/focus?month=2026-11&format=csv');
  const focusText = await focusRes.text();
  expect(focusRes.status, focusText).toBe(200);
  const focus = parseCsv(focusText, { columns: true }) as Array<Record<string, string>>;
  const focusFinal = (day: string) => [...new Set(focus.filter((r) => r.ChargePeriodStart.startsWith(day)).map((r) => r.x_Final))];
  const finance = (await (await api('/reports/finance?month=2026-11&timezone=UTC')).json()) as { month_final: boolean; provisional_days: string[]; rows: Array<{ final: boolean }> };
  const changes = (await (await api('/cost/changes?from=2026-11-20&to=2026-11-21&baseline_from=2026-11-19&baseline_to=2026-11-20')).json()) as { final: { baseline: boolean; current: boolean } };
  const changesLater = (await (await api('/cost/changes?from=2026-11-21&to=2026-11-22&baseline_from=2026-11-20&baseline_to=2026-11-21')).json()) as { final: { baseline: boolean; current: boolean } };
  return { cost, focusFinal, finance, changes, changesLater };
}

describe('final flags over collections (issue 32, acceptance 5)', () => {
  it('a day inside the window is provisional, and final after the window and an agreeing re-collection', async () => {
    await collect();
    const before = await flags();
    expect(before.cost.rows.map((r) => [r.day, r.final])).toEqual([['2026-11-19', false], ['2026-11-20', false], ['2026-11-21', false]]);
    expect(before.cost.final).toBe(false);
    expect(before.focusFinal('2026-11-20')).toEqual(['false']);
    expect(before.changes.final).toMatchObject({ baseline: false, current: false });

    // 2026-11-20's window (24 h) ends 2026-11-22T00:00Z; 2026-11-21's ends 2026-11-23T00:00Z.
    sim.clock.set('2026-11-22T06:00:00Z');
    await collect();
    const after = await flags();
    expect(after.cost.rows.map((r) => [r.day, r.final])).toEqual([['2026-11-19', true], ['2026-11-20', true], ['2026-11-21', false]]);
    expect(after.cost.provisional_days).toEqual(['2026-11-21']);
    expect(after.focusFinal('2026-11-20')).toEqual(['true']);
    expect(after.focusFinal('2026-11-21')).toEqual(['false']);
    // /cost/changes says which period can still move (both products collected: product=all).
    expect(after.changes.final).toMatchObject({ baseline: true, current: true });
    expect(after.changesLater.final).toMatchObject({ baseline: true, current: false });
    // November is not over: the finance report's month and rows stay provisional.
    expect(after.finance.month_final).toBe(false);
    expect(after.finance.rows.length).toBeGreaterThan(0);
    expect(after.finance.rows.every((r) => r.final === false)).toBe(true);
  });
});
