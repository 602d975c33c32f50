// The change-attribution report (src/api/cost-changes-report.ts) with no store (issue 31: the mutation score of
// the money modules): a stand-in client answers the two line queries and the day-collection query, and the
// report and its table are compared with figures worked by hand from the README's formulas (volume =
// (q1 - q0) x p0, price = (s1 - s0) - volume, discount = -(d1 - d0), a gone group whole) and finality's rule (a
// day is final once a collection after its 48-hour window agreed with the one before).
import { describe, expect, it } from 'vitest';
import { CHANGE_GROUP_NAMES, costChangesReport, costChangesTable, type CostChangesQuery } from '../../src/api/cost-changes-report.js';
import { collectedDays, dayCollections } from '../../src/store/tables/cost-day-collections.js';
import type { Store } from '../../src/store/client.js';

type Params = Record<string, unknown>;
type Answer = (p: Params) => unknown[];

function fakeStore(answers: { serverless?: Answer; model?: Answer; collections?: Answer; spans?: Answer }) {
  const asked: Array<{ query: string; params: Params }> = [];
  const store = {
    client: {
      query: async ({ query, query_params }: { query: string; query_params: Params }) => {
        const name = query === collectedDays.sql ? 'spans' : query === dayCollections.sql ? 'collections' : query.includes('FROM model_usage_buckets') ? 'model' : query.includes('FROM usage_buckets') ? 'serverless' : '?';
        asked.push({ query: name, params: query_params });
        const rows = (answers as Record<string, Answer | undefined>)[name]?.(query_params) ?? (name === 'spans' ? wholeDays(query_params) : []);
        return { json: async () => rows };
      },
    },
  } as unknown as Pick<Store, 'client'>;
  return { store, asked };
}

// Coverage (issue 45.1): every day of a range read whole on Nov 11, unless a test says otherwise.
function wholeDays(p: Params): unknown[] {
  const out: unknown[] = [];
  for (let d = Date.parse(`${String(p.from)}T00:00:00Z`); d < Date.parse(`${String(p.to)}T00:00:00Z`); d += 86_400_000) {
    out.push({ local_day: new Date(d).toISOString().slice(0, 10), collected_ms: Date.parse('2026-11-11T00:00:00Z') });
  }
  return out;
}

const agreed = (day: string) => [
  { local_day: day, collected_text: '2026-11-10 00:00:00.000', fingerprint: 'f' },
  { local_day: day, collected_text: '2026-11-11 00:00:00.000', fingerprint: 'f' },
];

// Baseline 30-31 October, current 1-2 November. acme/a's surge CPU: 10 s for 1 (discount 0.1) -> 20 s for 2
// (discount 0.2): volume = 10 x 0.1 = 1, price = 1 - 1 = 0, discount = -0.1, difference 1.8 - 0.9 = 0.9.
// acme/b's GPU: 5 s for 5 both times: unchanged. svc-ai/flux images: 4 for 0.1 in the baseline, none since: gone, -0.1.
const serverless: Answer = (p) =>
  p.from === '2026-10-30'
    ? [
        { g_app: 'acme/a', g_surge: 'true', app: 'acme/a', machine_type: 'CPU', is_surge: true, currency: 'USD', quantity: '10', subtotal: '1', discount: '0.1' },
        { g_app: 'acme/b', g_surge: 'false', app: 'acme/b', machine_type: 'GPU', is_surge: false, currency: 'EUR', quantity: '5', subtotal: '5', discount: '0' },
      ]
    : [
        { g_app: 'acme/a', g_surge: 'true', app: 'acme/a', machine_type: 'CPU', is_surge: true, currency: 'USD', quantity: '20', subtotal: '2', discount: '0.2' },
        { g_app: 'acme/b', g_surge: 'false', app: 'acme/b', machine_type: 'GPU', is_surge: false, currency: 'EUR', quantity: '5', subtotal: '5', discount: '0' },
      ];
const model: Answer = (p) =>
  p.from === '2026-10-30' ? [{ g_endpoint: 'svc-ai/flux', endpoint_id: 'svc-ai/flux', unit: 'image', currency: 'USD', quantity: '4', subtotal: '0.1', discount: '0' }] : [];
// Both October days final for both products; November's not yet.
const collections: Answer = (p) => (p.product === 'all' ? [] : [...agreed('2026-10-30'), ...agreed('2026-10-31')]);

const QUERY: CostChangesQuery & { windowHours: number; now: Date } = {
  timezone: 'UTC',
  from: '2026-11-01',
  to: '2026-11-03',
  baselineFrom: '2026-10-30',
  baselineTo: '2026-11-01',
  product: 'all',
  groupBy: ['app', 'endpoint', 'surge'],
  windowHours: 48,
  now: new Date('2026-11-11T00:00:00Z'),
};

describe('costChangesReport, by hand', () => {
  it('both products: each grouped by the keys that apply to it, items named, the parts worked out', async () => {
    const { store, asked } = fakeStore({ serverless, model, collections });
    const report = await costChangesReport(store, { ...QUERY, apps: ['acme/a', 'acme/b'], endpoints: ['svc-ai/flux'] });
    expect(report).toMatchObject({
      timezone: 'UTC', from: '2026-11-01', to: '2026-11-03', baseline_from: '2026-10-30', baseline_to: '2026-11-01', product: 'all', group_by: ['app', 'endpoint', 'surge'],
      final: { baseline: true, current: false, provisional_days: ['2026-11-01', '2026-11-02'] },
    });
    expect(report.groups.map((g) => [g.product, g.group, g.currency, g.status, g.difference, g.volume, g.price, g.discount, g.new, g.gone, g.items.map((i) => i.item)])).toEqual([
      ['serverless', { app: 'acme/a', surge: 'true' }, 'USD', 'changed', '0.9', '1', '0', '-0.1', '0', '0', ['acme/a CPU surge']],
      ['model_api', { endpoint: 'svc-ai/flux' }, 'USD', 'gone', '-0.1', '0', '0', '0', '0', '-0.1', ['svc-ai/flux image']],
      ['serverless', { app: 'acme/b', surge: 'false' }, 'EUR', 'unchanged', '0', '0', '0', '0', '0', '0', ['acme/b GPU']],
    ]);
    expect(report.totals.map((t) => [t.currency, t.baseline, t.current, t.difference])).toEqual([
      ['EUR', '5', '5', '0'],
      ['USD', '1', '1.8', '0.8'],
    ]);
    const lines = asked.filter((a) => a.query !== 'collections' && a.query !== 'spans');
    expect(lines).toEqual([
      { query: 'serverless', params: { timezone: 'UTC', from: '2026-10-30', to: '2026-11-01', apps: ['acme/a', 'acme/b'] } },
      { query: 'model', params: { timezone: 'UTC', from: '2026-10-30', to: '2026-11-01', endpoints: ['svc-ai/flux'] } },
      { query: 'serverless', params: { timezone: 'UTC', from: '2026-11-01', to: '2026-11-03', apps: ['acme/a', 'acme/b'] } },
      { query: 'model', params: { timezone: 'UTC', from: '2026-11-01', to: '2026-11-03', endpoints: ['svc-ai/flux'] } },
    ]);
    // Finality of both products, each period.
    expect(asked.filter((a) => a.query === 'collections').map((a) => [a.params.product, a.params.from, a.params.to]).sort()).toEqual([
      ['model_api', '2026-10-30', '2026-11-01'], ['model_api', '2026-11-01', '2026-11-03'],
      ['serverless', '2026-10-30', '2026-11-01'], ['serverless', '2026-11-01', '2026-11-03'],
    ]);
  });

  it('one product: only its lines and its finality; no filter lists means every app and endpoint', async () => {
    const s = fakeStore({ serverless, model, collections });
    const report = await costChangesReport(s.store, { ...QUERY, product: 'serverless' });
    expect(report.groups.map((g) => g.product)).toEqual(['serverless', 'serverless']);
    expect(s.asked.filter((a) => a.query === 'serverless').map((a) => a.params.apps)).toEqual([[], []]);
    expect(new Set(s.asked.filter((a) => a.query === 'collections').map((a) => a.params.product))).toEqual(new Set(['serverless']));
    expect(s.asked.some((a) => a.query === 'model')).toBe(false);

    const m = fakeStore({ serverless, model, collections });
    const modelReport = await costChangesReport(m.store, { ...QUERY, product: 'model_api' });
    expect(modelReport.groups.map((g) => [g.product, g.status])).toEqual([['model_api', 'gone']]);
    expect(m.asked.filter((a) => a.query === 'model').map((a) => a.params.endpoints)).toEqual([[], []]);
    expect(m.asked.some((a) => a.query === 'serverless')).toBe(false);
    expect(new Set(m.asked.filter((a) => a.query === 'collections').map((a) => a.params.product))).toEqual(new Set(['model_api']));
  });

  it('the days that can still change: of both periods, once each, in order', async () => {
    const { store } = fakeStore({});
    const report = await costChangesReport(store, { ...QUERY, product: 'serverless', baselineFrom: '2026-11-02', baselineTo: '2026-11-04', from: '2026-11-01', to: '2026-11-03' });
    expect(report.final).toEqual({ baseline: false, current: false, provisional_days: ['2026-11-01', '2026-11-02', '2026-11-03'] });
  });

  it('a baseline not collected: nothing is new, a gone group in a partly collected current period is not gone, and the coverage says so', async () => {
    // Nothing read of the baseline; the current period's Nov 2 only read at 06:00 on Nov 2.
    const spans: Answer = (p) => (p.from === '2026-10-30' ? [] : [
      { local_day: '2026-11-01', collected_ms: Date.parse('2026-11-11T00:00:00Z') },
      { local_day: '2026-11-02', collected_ms: Date.parse('2026-11-02T06:00:00Z') },
    ]);
    const { store } = fakeStore({ serverless: (p) => (p.from === '2026-10-30' ? [] : serverless(p)), model, collections, spans });
    const report = await costChangesReport(store, QUERY);
    // acme/a and acme/b would be "new" (no baseline rows); svc-ai/flux "gone" (no current rows): unknown, all three.
    expect(report.groups.map((g) => [g.group, g.status, g.difference, g.new, g.gone, g.not_collected])).toEqual([
      [{ app: 'acme/b', surge: 'false' }, 'baseline_not_collected', '5', '0', '0', '5'],
      [{ app: 'acme/a', surge: 'true' }, 'baseline_not_collected', '1.8', '0', '0', '1.8'],
      [{ endpoint: 'svc-ai/flux' }, 'current_not_collected', '-0.1', '0', '0', '-0.1'],
    ]);
    expect(report.totals.map((t) => [t.currency, t.difference, t.new, t.gone, t.not_collected])).toEqual([['EUR', '5', '0', '0', '5'], ['USD', '1.7', '0', '0', '1.7']]);
    expect(report.coverage).toMatchObject({ status: 'partial' });
    if (report.coverage.status === 'complete') throw new Error('unreachable');
    expect(report.coverage.warning).toBe(
      'Baseline 2026-10-30 to 2026-11-01: serverless usage (UTC) was not collected for this range: its serverless cost is unknown, not zero. ' +
      'model API usage (UTC) was not collected for this range: its model API cost is unknown, not zero. ' +
      'Current period 2026-11-01 to 2026-11-03: serverless usage (UTC) was not collected for 2026-11-02T06:00:00Z to 2026-11-03 (collected through 2026-11-02T06:00:00Z): its serverless cost is unknown, not zero. ' +
      'model API usage (UTC) was not collected for 2026-11-02T06:00:00Z to 2026-11-03 (collected through 2026-11-02T06:00:00Z): its model API cost is unknown, not zero. ' +
      'A group seen in one period only is not_collected there, not new or gone.',
    );
  });

  it('group names cover both products', () => {
    expect(CHANGE_GROUP_NAMES).toEqual(['app', 'environment', 'machine_type', 'surge', 'endpoint', 'api_key', 'unit']);
  });
});

describe('costChangesTable, by hand', () => {
  it('a row per group, ranked, its keys or empty where they do not apply; a total per currency; final when both periods are', async () => {
    const { store } = fakeStore({ serverless, model, collections });
    const report = await costChangesReport(store, QUERY);
    const table = costChangesTable(report);
    expect(table.columns).toEqual(['row_type', 'rank', 'product', 'app', 'endpoint', 'surge', 'currency', 'status', 'baseline_cost', 'current_cost', 'difference', 'volume', 'price', 'discount', 'new', 'gone', 'not_collected', 'baseline_per_day', 'current_per_day', 'final']);
    expect(table.rows).toEqual([
      { row_type: 'group', rank: 1, product: 'serverless', app: 'acme/a', endpoint: '', surge: 'true', currency: 'USD', status: 'changed',
        baseline_cost: '0.9', current_cost: '1.8', difference: '0.9', volume: '1', price: '0', discount: '-0.1', new: '0', gone: '0', not_collected: '0', baseline_per_day: null, current_per_day: null, final: false },
      { row_type: 'group', rank: 2, product: 'model_api', app: '', endpoint: 'svc-ai/flux', surge: '', currency: 'USD', status: 'gone',
        baseline_cost: '0.1', current_cost: '0', difference: '-0.1', volume: '0', price: '0', discount: '0', new: '0', gone: '-0.1', not_collected: '0', baseline_per_day: null, current_per_day: null, final: false },
      { row_type: 'group', rank: 3, product: 'serverless', app: 'acme/b', endpoint: '', surge: 'false', currency: 'EUR', status: 'unchanged',
        baseline_cost: '5', current_cost: '5', difference: '0', volume: '0', price: '0', discount: '0', new: '0', gone: '0', not_collected: '0', baseline_per_day: null, current_per_day: null, final: false },
      { row_type: 'total', rank: null, product: '', app: '', endpoint: '', surge: '', currency: 'EUR', status: '',
        baseline_cost: '5', current_cost: '5', difference: '0', volume: '0', price: '0', discount: '0', new: '0', gone: '0', not_collected: '0', baseline_per_day: '2.5', current_per_day: '2.5', final: false },
      { row_type: 'total', rank: null, product: '', app: '', endpoint: '', surge: '', currency: 'USD', status: '',
        baseline_cost: '1', current_cost: '1.8', difference: '0.8', volume: '1', price: '0', discount: '-0.1', new: '0', gone: '-0.1', not_collected: '0', baseline_per_day: '0.5', current_per_day: '0.9', final: false },
    ]);
    // The top movers only; the totals still cover every group.
    const top = costChangesTable(report, 1);
    expect(top.rows.map((r) => [r.row_type, r.rank])).toEqual([['group', 1], ['total', null], ['total', null]]);
    // Both periods final: every row is.
    const final = costChangesTable({ ...report, final: { baseline: true, current: true, provisional_days: [] } });
    expect(final.rows.every((r) => r.final === true)).toBe(true);
    expect(costChangesTable({ ...report, final: { baseline: false, current: true, provisional_days: [] } }).rows.every((r) => r.final === false)).toBe(true);
  });
});
