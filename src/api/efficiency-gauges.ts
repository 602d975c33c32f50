import { DateTime } from 'luxon';
import type { BusinessGauge } from '../http/business-metrics.js';
import type { Runtime } from '../runtime.js';
import { decimalToScaled } from '../values.js';
import { MONEY_SCALE } from '../insights/efficiency.js';
import { loadEfficiency } from './efficiency-routes.js';

const IDLE_DAYS = 7;

interface AppShares {
  app: string;
  currency: string;
  idle: bigint;
  unattributed: bigint;
  cost: bigint;
}

/** Idle, unattributed and total cost per app and currency over the last 7 local days (today included), first TIMEZONES zone. */
async function lastWeek(rt: Runtime): Promise<{ timezone: string; apps: AppShares[] }> {
  const timezone = rt.config.TIMEZONES[0];
  const today = DateTime.fromJSDate(rt.now()).setZone(timezone).startOf('day');
  const rows = await loadEfficiency(rt.store, { from: today.minus({ days: IDLE_DAYS - 1 }).toISODate()!, to: today.plus({ days: 1 }).toISODate()!, timezone });
  const perApp = new Map<string, AppShares>();
  for (const r of rows) {
    const k = `${r.app}|${r.currency}`;
    const e = perApp.get(k) ?? { app: r.app, currency: r.currency, idle: 0n, unattributed: 0n, cost: 0n };
    e.idle += decimalToScaled(r.idle_cost, MONEY_SCALE);
    e.unattributed += decimalToScaled(r.unattributed_cost, MONEY_SCALE);
    e.cost += decimalToScaled(r.cost, MONEY_SCALE);
    perApp.set(k, e);
  }
  return { timezone, apps: [...perApp.values()] };
}

const share = (part: bigint, whole: bigint) => Number((part * 1_000_000n) / whole) / 1e6;

/**
 * Idle share of each app's attributed usage cost (cost with runner history) over the last 7 local days in the first
 * TIMEZONES zone, from the same module as /api/v1/efficiency; the alert TallyhouseIdleSpendHigh reads it. Cost without
 * runner history is left out (issue 45.2: before a history backfill it would read 1.0 for every app); an app with none
 * attributed has no sample. Apps beyond METRICS_MAX_APPS (by idle cost) are left out: a share does not sum.
 */
export const idleCostShare: BusinessGauge = {
  name: 'tallyhouse_idle_cost_ratio',
  help: 'Idle cost / attributed usage cost (0-1) per app over the last 7 local days: billed runner time kept warm by keep_alive or min_concurrency. Cost without runner history is left out (see tallyhouse_unattributed_cost_ratio).',
  labelNames: ['app', 'currency', 'timezone'],
  async read(rt) {
    const { timezone, apps } = await lastWeek(rt);
    return apps
      .filter((e) => e.cost - e.unattributed > 0n)
      .sort((a, b) => (b.idle > a.idle ? 1 : b.idle < a.idle ? -1 : a.app < b.app ? -1 : 1))
      .slice(0, rt.config.METRICS_MAX_APPS)
      .map((e) => ({ labels: { app: e.app, currency: e.currency, timezone }, value: share(e.idle, e.cost - e.unattributed) }));
  },
};

/** The share of each app's usage cost over the same 7 days that has no runner history to split it (unknown, not idle). */
export const unattributedCostShare: BusinessGauge = {
  name: 'tallyhouse_unattributed_cost_ratio',
  help: 'Usage cost without runner history / usage cost (0-1) per app over the last 7 local days: its busy/idle split is unknown until the runner history is collected.',
  labelNames: ['app', 'currency', 'timezone'],
  async read(rt) {
    const { timezone, apps } = await lastWeek(rt);
    return apps
      .filter((e) => e.cost > 0n)
      .sort((a, b) => (b.unattributed > a.unattributed ? 1 : b.unattributed < a.unattributed ? -1 : a.app < b.app ? -1 : 1))
      .slice(0, rt.config.METRICS_MAX_APPS)
      .map((e) => ({ labels: { app: e.app, currency: e.currency, timezone }, value: share(e.unattributed, e.cost) }));
  },
};
