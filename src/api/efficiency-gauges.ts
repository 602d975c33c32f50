import { DateTime } from 'luxon';
import type { BusinessGauge } from '../http/business-metrics.js';
import { decimalToScaled } from '../values.js';
import { MONEY_SCALE } from '../insights/efficiency.js';
import { loadEfficiency } from './efficiency-routes.js';

const IDLE_DAYS = 7;

/**
 * Idle share of each app's usage cost over the last 7 local days (today included) in the first TIMEZONES zone,
 * from the same module as /api/v1/efficiency; the alert TallyhouseIdleSpendHigh reads it. Apps beyond
 * METRICS_MAX_APPS (by idle cost) are left out: a share does not sum.
 */
export const idleCostShare: BusinessGauge = {
  name: 'tallyhouse_idle_cost_share',
  help: 'Idle cost / usage cost (0-1) per app over the last 7 local days, billed runner time kept warm by keep_alive or min_concurrency.',
  labelNames: ['app', 'currency', 'timezone'],
  async read(rt) {
    const timezone = rt.config.TIMEZONES[0];
    const today = DateTime.fromJSDate(rt.now()).setZone(timezone).startOf('day');
    const rows = await loadEfficiency(rt.store, { from: today.minus({ days: IDLE_DAYS - 1 }).toISODate()!, to: today.plus({ days: 1 }).toISODate()!, timezone });
    const perApp = new Map<string, { app: string; currency: string; idle: bigint; cost: bigint }>();
    for (const r of rows) {
      const k = `${r.app}|${r.currency}`;
      const e = perApp.get(k) ?? { app: r.app, currency: r.currency, idle: 0n, cost: 0n };
      e.idle += decimalToScaled(r.idle_cost, MONEY_SCALE);
      e.cost += decimalToScaled(r.cost, MONEY_SCALE);
      perApp.set(k, e);
    }
    return [...perApp.values()]
      .filter((e) => e.cost > 0n)
      .sort((a, b) => (b.idle > a.idle ? 1 : b.idle < a.idle ? -1 : a.app < b.app ? -1 : 1))
      .slice(0, rt.config.METRICS_MAX_APPS)
      .map((e) => ({ labels: { app: e.app, currency: e.currency, timezone }, value: Number((e.idle * 1_000_000n) / e.cost) / 1e6 }));
  },
};
