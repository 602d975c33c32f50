// The efficiency module (pure): hand-worked numbers only.
import { describe, expect, it } from 'vitest';
import { efficiencyByDay, efficiencyByHour, recommendations, splitByWeights, type AppInput, type UsageDayInput } from '../../src/insights/efficiency.js';

const app: AppInput = { name: 'flux', owner: 'acme', endpoint_id: 'acme/flux', keep_alive: 300, min_concurrency: 1 };
const other: AppInput = { name: 'sdxl', owner: 'acme', endpoint_id: 'acme/sdxl', keep_alive: 0, min_concurrency: 0 };
const row = (p: Partial<UsageDayInput>): UsageDayInput => ({
  date: '2026-11-20', app: 'flux', machine_type: 'GPU-H100', is_surge: false, quantity: '100', cost_total: '0.0575',
  currency: 'USD', unit_price: '0.000575', percent_discount: null, ...p,
});

describe('splitByWeights', () => {
  it('splits by largest remainder, ties to the earlier part, and gives everything to the fallback without weights', () => {
    // 7 by 1:1:0 → 3.5, 3.5, 0: one unit left, equal remainders, the earlier (busy) takes it.
    expect(splitByWeights(7n, [1n, 1n, 0n], 1)).toEqual([4n, 3n, 0n]);
    // 10 by 1:1:1 → 3.33 each: one left, to busy.
    expect(splitByWeights(10n, [1n, 1n, 1n], 1)).toEqual([4n, 3n, 3n]);
    // 10 by 1:2:7 → exact.
    expect(splitByWeights(10n, [1n, 2n, 7n], 1)).toEqual([1n, 2n, 7n]);
    // 5 by 3:0:1 → 3.75, 0, 1.25: one left, to the larger remainder (busy .75).
    expect(splitByWeights(5n, [3n, 0n, 1n], 1)).toEqual([4n, 0n, 1n]);
    expect(splitByWeights(9n, [0n, 0n, 0n], 1)).toEqual([0n, 9n, 0n]);
  });
});

describe('efficiencyByDay', () => {
  it('splits each usage row by the day weights of the hourly avg history, surge rows apart, and adds up to the cost', () => {
    const rows = efficiencyByDay({
      usage: [row({}), row({ is_surge: true, quantity: '20', cost_total: '0.01725', unit_price: '0.0008625' })],
      // Day weights: running 0.5 + 0.25 = 0.75, idle 0.25 + 0 = 0.25, draining 0 → 3:1:0.
      history: [
        { app: 'flux', date: '2026-11-20', hour: 3, running: 0.5, idle: 0.25, draining: 0 },
        { app: 'flux', date: '2026-11-20', hour: 4, running: 0.25, idle: 0, draining: 0 },
      ],
      metrics: [{ app: 'flux', machine_type: 'GPU-H100', date: '2026-11-20', gpu_samples: 4, gpu_utilization_sum: 1.8, vram_peak_used_bytes: 20, vram_total_bytes: 80, samples: 4, runners: 1 }],
      apps: [app],
    });
    expect(rows).toEqual([{
      date: '2026-11-20', app: 'flux', endpoint_id: 'acme/flux', machine_type: 'GPU-H100', currency: 'USD',
      machine_seconds: '120', busy_machine_seconds: '90', idle_machine_seconds: '30', draining_machine_seconds: '0',
      // 0.0575 × 3/4 = 0.043125, × 1/4 = 0.014375; 0.01725 × 3/4 = 0.0129375, × 1/4 = 0.0043125.
      unattributed_machine_seconds: '0',
      cost: '0.07475', busy_cost: '0.0560625', idle_cost: '0.0186875', draining_cost: '0', unattributed_cost: '0',
      idle_share: 0.25, unattributed_share: 0, gpu_utilization: 0.45, gpu_samples: 4, vram_peak_used_bytes: 20, vram_total_bytes: 80, vram_peak_share: 0.25,
      history_hours: 2,
    }]);
  });

  it('a day without runner history is unattributed, never idle; idle share is over the attributed cost', () => {
    const rows = efficiencyByDay({
      // Nov 20 has history (1:1 busy:idle); Nov 21 has none (not collected yet).
      usage: [row({}), row({ date: '2026-11-21', quantity: '40', cost_total: '0.03' })],
      history: [{ app: 'flux', date: '2026-11-20', hour: 3, running: 0.5, idle: 0.5, draining: 0 }],
      metrics: [],
      apps: [app],
    });
    expect(rows.map((r) => [r.date, r.busy_cost, r.idle_cost, r.draining_cost, r.unattributed_cost, r.unattributed_machine_seconds, r.idle_share, r.unattributed_share])).toEqual([
      // 0.0575 split 1:1; idle share 0.02875 / 0.0575.
      ['2026-11-20', '0.02875', '0.02875', '0', '0', '0', 0.5, 0],
      // Nothing to split by: the whole 0.03 is unattributed, idle share unknown (null), not 1.
      ['2026-11-21', '0', '0', '0', '0.03', '40', null, 1],
    ]);
  });
});

describe('efficiencyByHour', () => {
  it('splits the day row by hour and state weights; the hours add up to the row', () => {
    const rows = efficiencyByHour({
      usage: [row({ quantity: '100', cost_total: '0.0575' })],
      // Weights by hour and state: 03h 0.5 running, 0.25 idle; 04h 0.25 running → 2:1:1 of 4.
      history: [
        { app: 'flux', date: '2026-11-20', hour: 4, running: 0.25, idle: 0, draining: 0 },
        { app: 'flux', date: '2026-11-20', hour: 3, running: 0.5, idle: 0.25, draining: 0 },
      ],
      apps: [app],
    });
    expect(rows.map((r) => [r.hour, r.busy_machine_seconds, r.idle_machine_seconds, r.busy_cost, r.idle_cost, r.draining_cost])).toEqual([
      // 100 s × 2/4 = 50, × 1/4 = 25; 0.0575 × 1/2 = 0.02875, × 1/4 = 0.014375.
      [3, '50', '25', '0.02875', '0.014375', '0'],
      [4, '25', '0', '0.014375', '0', '0'],
    ]);
  });
});

describe('recommendations', () => {
  it('names the cheapest machine whose VRAM covers the peak with the margin, with the month saving at the owner\u2019s net usage prices', () => {
    const hints = recommendations({
      apps: [app, other],
      monthUsage: [
        // flux on H100 at 0.000575 less 12.5 % = 0.000503125 net; 1000 s this month.
        row({ quantity: '600', percent_discount: '12.5', date: '2026-11-19' }),
        row({ quantity: '400', percent_discount: '12.5' }),
        // A surge row counts its seconds but is not a price.
        row({ quantity: '10', is_surge: true, unit_price: '0.0008625', percent_discount: '12.5' }),
        // Prices of the owner's other machines come from another app: A6000 0.0002, A100 0.0003 less 10 % = 0.00027.
        row({ app: 'sdxl', machine_type: 'GPU-A6000', unit_price: '0.0002' }),
        row({ app: 'sdxl', machine_type: 'GPU-A100', unit_price: '0.0003', percent_discount: '10' }),
      ],
      peaks: [{ app: 'flux', peak_used_bytes: 35, samples: 12, runners: 3, first_sample: 'a', last_sample: 'b' }],
      // 35 × 1.2 = 42: A100 (40) is too small, A6000 (48) covers it and is the cheapest.
      machines: [{ machine_type: 'GPU-H100', vram_total_bytes: 80 }, { machine_type: 'GPU-A6000', vram_total_bytes: 48 }, { machine_type: 'GPU-A100', vram_total_bytes: 40 }],
      marginPercent: 20,
      idleRows: [],
      idleHistory: [],
      idleWindow: { from: '2026-10-21', to: '2026-11-20' },
    });
    expect(hints).toHaveLength(1);
    // 1010 s × (0.000503125 − 0.0002) = 0.30615625 → 0.306156250 (nanos: 0.306156250 exact).
    expect(hints[0]).toMatchObject({ kind: 'right_size', app: 'flux', machine_type: 'GPU-H100', recommended_machine_type: 'GPU-A6000', amount: '0.30615625', required_vram_bytes: 42, machine_seconds: '1010' });
  });

  it('gives no hint when the current machine is the cheapest that fits, and a keep-warm hint with its idle hours', () => {
    const hints = recommendations({
      apps: [app],
      monthUsage: [row({}), row({ machine_type: 'GPU-A6000', app: 'flux', unit_price: '0.0002', quantity: '0' })],
      peaks: [{ app: 'flux', peak_used_bytes: 45, samples: 3, runners: 1, first_sample: 'a', last_sample: 'b' }],
      machines: [{ machine_type: 'GPU-H100', vram_total_bytes: 80 }, { machine_type: 'GPU-A6000', vram_total_bytes: 48 }],
      marginPercent: 20, // 54 > 48
      idleRows: efficiencyByDay({ usage: [row({})], history: [{ app: 'flux', date: '2026-11-20', hour: 2, running: 0, idle: 1, draining: 0 }, { app: 'flux', date: '2026-11-20', hour: 23, running: 0, idle: 0.5, draining: 0.5 }], metrics: [], apps: [app] }),
      idleHistory: [{ app: 'flux', date: '2026-11-20', hour: 2, running: 0, idle: 1, draining: 0 }, { app: 'flux', date: '2026-11-20', hour: 23, running: 0, idle: 0.5, draining: 0.5 }],
      idleWindow: { from: '2026-10-21', to: '2026-11-20' },
    });
    // Idle weight 1.5 of 2 → 0.0575 × 3/4 = 0.043125.
    expect(hints).toEqual([expect.objectContaining({ kind: 'keep_warm', app: 'flux', amount: '0.043125', idle_hours: '02:00 (1), 23:00 (0.5)' })]);
  });
});
