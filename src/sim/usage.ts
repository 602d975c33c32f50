// Serverless usage: machine-seconds of runner time per (bucket, app, environment, machine type, surge), priced
// per row from that row's own quantity. Shared by the HTTP handler and the truth API: both read the same
// world model; only the HTTP layer pages and serialises.
import type { App, World } from './world.js';
import type { RunnerModel } from './runners.js';
import { bucketize, type Buckets, type Timeframe } from './time.js';
import { formatNanos, RawJson, rowCost } from './money.js';

export interface UsageQuery {
  startMs: number;
  endMs: number;
  tz: string;
  timeframe: Timeframe;
  /** bound_to_timeframe: widen the range to whole buckets. */
  bound: boolean;
  apps: App[];
  /** Virtual now: nothing exists after it. */
  nowMs: number;
}

export interface UsageRow {
  /** -1 for a summary row. */
  bucketIndex: number;
  bucket: string | null;
  app: App;
  machineType: string;
  isSurge: boolean;
  quantity: number;
  unitPriceNanos: number;
  percentDiscount: number | null;
  subtotalNanos: bigint;
  discountNanos: bigint;
  totalNanos: bigint;
}

export interface UsageResult {
  buckets: Buckets;
  series: UsageRow[];
  summary: UsageRow[];
}

interface Key {
  app: App;
  machineType: string;
  isSurge: boolean;
  perBucket: Float64Array;
}

/** Returns null when the range needs more buckets than allowed (the caller answers 400). */
export function computeUsage(world: World, runners: RunnerModel, q: UsageQuery): UsageResult | null {
  // Quantities are whole machine-seconds: clip the range to whole seconds (runner state changes are on seconds).
  const capMs = Math.floor(q.nowMs / 1000) * 1000;
  const buckets = bucketize(Math.floor(q.startMs / 1000) * 1000, Math.floor(q.endMs / 1000) * 1000, q.timeframe, q.tz, q.bound, capMs);
  if (!buckets) return null;
  const edges = buckets.edges;
  const B = buckets.labels.length;
  const from = edges[0];
  const to = edges[B];
  const keys = new Map<string, Key>();
  const keyOf = (app: App, machineType: string, isSurge: boolean): Key => {
    const id = `${app.index}|${machineType}|${isSurge ? 1 : 0}`;
    let k = keys.get(id);
    if (!k) keys.set(id, (k = { app, machineType, isSurge, perBucket: new Float64Array(B) }));
    return k;
  };
  const add = (k: Key, a: number, b: number): void => {
    // Binary search for the first bucket, then walk.
    let lo = 0;
    let hi = B;
    while (hi - lo > 1) {
      const mid = (lo + hi) >>> 1;
      if (edges[mid] <= a) lo = mid;
      else hi = mid;
    }
    for (let i = lo; i < B && a < b; i++) {
      const e = Math.min(b, edges[i + 1]);
      if (e > a) k.perBucket[i] += (e - a) / 1000;
      a = Math.max(a, e);
    }
  };

  if (B > 0 && to > from) {
    for (const app of q.apps) {
      for (const runner of runners.of(app).runnersOverlapping(from, to)) {
        const a = Math.max(runner.billedFromMs, from);
        const b = Math.min(runner.endMs, to);
        if (b <= a) continue;
        let t = a;
        for (const [sa, sb] of world.surgePeriods(runner.machineType, a, b)) {
          const s0 = Math.max(sa, a);
          const s1 = Math.min(sb, b);
          if (s0 > t) add(keyOf(app, runner.machineType, false), t, s0);
          if (s1 > s0) add(keyOf(app, runner.machineType, true), s0, s1);
          t = Math.max(t, s1);
        }
        if (b > t) add(keyOf(app, runner.machineType, false), t, b);
      }
    }
  }

  const sorted = [...keys.values()].sort(
    (x, y) =>
      (x.app.name < y.app.name ? -1 : x.app.name > y.app.name ? 1 : 0) ||
      (x.app.environment < y.app.environment ? -1 : x.app.environment > y.app.environment ? 1 : 0) ||
      (x.machineType < y.machineType ? -1 : x.machineType > y.machineType ? 1 : 0) ||
      Number(x.isSurge) - Number(y.isSurge),
  );
  const makeRow = (k: Key, bucketIndex: number, quantity: number): UsageRow => {
    const price = world.price(k.app.owner, k.machineType);
    const unitPriceNanos = k.isSurge ? price.surgePriceNanos : price.unitPriceNanos;
    const cost = rowCost(quantity, unitPriceNanos, price.percentDiscountMilli);
    return {
      bucketIndex,
      bucket: bucketIndex >= 0 ? buckets.labels[bucketIndex] : null,
      app: k.app,
      machineType: k.machineType,
      isSurge: k.isSurge,
      quantity,
      unitPriceNanos,
      percentDiscount: price.percentDiscount,
      subtotalNanos: cost.subtotalNanos,
      discountNanos: cost.discountNanos,
      totalNanos: cost.totalNanos,
    };
  };
  const series: UsageRow[] = [];
  for (let i = 0; i < B; i++) {
    for (const k of sorted) {
      const quantity = Math.round(k.perBucket[i]);
      if (quantity > 0) series.push(makeRow(k, i, quantity));
    }
  }
  const summary: UsageRow[] = [];
  for (const k of sorted) {
    let total = 0;
    for (let i = 0; i < B; i++) total += Math.round(k.perBucket[i]);
    if (total > 0) summary.push(makeRow(k, -1, total));
  }
  return { buckets, series, summary };
}

/** The served JSON shape of a usage row (money as exact decimals). */
export function usageRowJson(row: UsageRow): Record<string, unknown> {
  return {
    app: row.app.name,
    environment: row.app.environment,
    machine_type: row.machineType,
    unit: 'second',
    quantity: row.quantity,
    unit_price: new RawJson(formatNanos(row.unitPriceNanos)),
    percent_discount: row.percentDiscount,
    cost_subtotal: new RawJson(formatNanos(row.subtotalNanos)),
    cost_discount: new RawJson(formatNanos(row.discountNanos)),
    cost_total: new RawJson(formatNanos(row.totalNanos)),
    cost: new RawJson(formatNanos(row.totalNanos)),
    currency: 'USD',
    is_surge: row.isSurge,
  };
}
