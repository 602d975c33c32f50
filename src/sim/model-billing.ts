// Model APIs as billed: the caller's calls to the public model endpoints (requests.ts generates them), priced per
// output unit. Each model has a unit, a currency (two bill in EUR) and a price that some models raise on the
// 15th of every month; each call is made with one of the caller's API keys (or a login), and some keys carry a
// discount. /v1/models/usage, /v1/models/pricing, /v1/models/billing-events and the truth all read this file.
import type { Endpoint, World } from './world.js';
import type { Req, RequestModel } from './requests.js';
import { bucketize, DAY_MS, HOUR_MS, type Buckets, type Timeframe } from './time.js';
import { formatNanos, percentToMilli, RawJson, rowCost } from './money.js';
import { hashString, unit as unitOf } from './prng.js';
import { priceOverrideNanos, runawayKeyOf } from './scenario.js';

/** How the caller authenticated a call: an API key (with its label), or a login. */
export interface ModelKey {
  index: number;
  apiKeyId: string | null;
  loginUsername: string | null;
  /** The label the platform shows (`auth_method`). */
  label: string;
  percentDiscount: number | null;
  percentDiscountMilli: number | null;
  /** Share of the calls made with it. */
  share: number;
}

const KEYS: Array<Omit<ModelKey, 'index' | 'percentDiscountMilli'>> = [
  { apiKeyId: 'key_7f3a9c01', loginUsername: null, label: 'Production Key', percentDiscount: 10, share: 0.5 },
  { apiKeyId: 'key_91c2e7b4', loginUsername: null, label: 'Batch Key', percentDiscount: 25, share: 0.25 },
  { apiKeyId: 'key_04bd5a66', loginUsername: null, label: 'Dev Key', percentDiscount: null, share: 0.15 },
  { apiKeyId: null, loginUsername: 'alice', label: 'alice (dashboard login)', percentDiscount: null, share: 0.1 },
];
export const MODEL_KEYS: ModelKey[] = KEYS.map((k, index) => ({
  ...k,
  index,
  percentDiscountMilli: k.percentDiscount === null ? null : percentToMilli(k.percentDiscount),
}));

export interface ModelPricing {
  unit: string;
  currency: 'USD' | 'EUR';
  /** Price per unit in integer nanos of `currency`, from the start of history. */
  basePriceNanos: number;
  /** Added on the 15th of every month (00:00 UTC); 0 for a price that never changes. */
  monthlyStepNanos: number;
  /** Units billed per output of a call (a call has 1-4 outputs). */
  unitsPerOutput: number;
}

/** By model slug (world.ts MODEL_LIST). */
const PRICING: Record<string, ModelPricing> = {
  'flux-dev': { unit: 'image', currency: 'USD', basePriceNanos: 25_000_000, monthlyStepNanos: 2_500_000, unitsPerOutput: 1 },
  'flux-pro': { unit: 'image', currency: 'USD', basePriceNanos: 50_000_000, monthlyStepNanos: 0, unitsPerOutput: 1 },
  'fast-sdxl': { unit: 'image', currency: 'USD', basePriceNanos: 3_000_000, monthlyStepNanos: 0, unitsPerOutput: 1 },
  whisper: { unit: 'second', currency: 'USD', basePriceNanos: 100_000, monthlyStepNanos: 10_000, unitsPerOutput: 30 },
  'kling-video': { unit: 'video', currency: 'USD', basePriceNanos: 400_000_000, monthlyStepNanos: 0, unitsPerOutput: 1 },
  'recraft-v3': { unit: 'image', currency: 'EUR', basePriceNanos: 40_000_000, monthlyStepNanos: 0, unitsPerOutput: 1 },
  'stable-audio': { unit: 'second', currency: 'EUR', basePriceNanos: 200_000, monthlyStepNanos: 20_000, unitsPerOutput: 20 },
  'llava-next': { unit: 'image', currency: 'USD', basePriceNanos: 1_500_000, monthlyStepNanos: 0, unitsPerOutput: 1 },
  birefnet: { unit: 'megapixel', currency: 'USD', basePriceNanos: 2_000_000, monthlyStepNanos: 0, unitsPerOutput: 4 },
  'f5-tts': { unit: 'second', currency: 'USD', basePriceNanos: 150_000, monthlyStepNanos: 0, unitsPerOutput: 10 },
  'clarity-upscaler': { unit: 'megapixel', currency: 'USD', basePriceNanos: 30_000_000, monthlyStepNanos: 3_000_000, unitsPerOutput: 4 },
  'minimax-video': { unit: 'video', currency: 'USD', basePriceNanos: 300_000_000, monthlyStepNanos: 0, unitsPerOutput: 1 },
};

export function pricingOf(ep: Endpoint): ModelPricing {
  const p = PRICING[ep.id.slice(ep.id.indexOf('/') + 1)];
  if (!p) throw new Error(`no model pricing for ${ep.id}`);
  return p;
}

/** The 15th-of-month price changes between the start of history and `tMs` (inclusive). */
function priceChangesUntil(world: World, tMs: number): number {
  const start = new Date(world.historyStartMs);
  let n = 0;
  for (let y = start.getUTCFullYear(), m = start.getUTCMonth(); ; m++) {
    const change = Date.UTC(y, m, 15);
    if (change > tMs) return n;
    if (change > world.historyStartMs) n++;
  }
}

/** The price per unit of a model at a time, in nanos of its currency. */
export function modelPriceAt(world: World, ep: Endpoint, tMs: number): number {
  const p = pricingOf(ep);
  const scenarioPrice = priceOverrideNanos(world, ep, tMs);
  if (scenarioPrice !== null) return scenarioPrice;
  return p.basePriceNanos + (p.monthlyStepNanos === 0 ? 0 : p.monthlyStepNanos * priceChangesUntil(world, tMs));
}

/** Which key made a call: a pure function of the request id. */
export function keyOfCall(req: Req): ModelKey {
  let x = unitOf(hashString(req.id, 0x6b65795f));
  for (const k of MODEL_KEYS) {
    x -= k.share;
    if (x < 0) return k;
  }
  return MODEL_KEYS[MODEL_KEYS.length - 1];
}

/** One billed call: successful calls only, billed at the price of their end. */
export interface ModelCharge {
  req: Req;
  key: ModelKey;
  unit: string;
  currency: string;
  quantity: number;
  unitPriceNanos: number;
  subtotalNanos: bigint;
  discountNanos: bigint;
  totalNanos: bigint;
}

export function chargeOf(world: World, req: Req): ModelCharge | null {
  if (!req.endpoint.isModel || req.statusClass !== 'success') return null;
  const pricing = pricingOf(req.endpoint);
  const runaway = runawayKeyOf(world, req);
  const key = (runaway !== null && MODEL_KEYS.find((k) => k.apiKeyId === runaway)) || keyOfCall(req);
  const quantity = (req.billableMilli / 1000) * pricing.unitsPerOutput;
  const unitPriceNanos = modelPriceAt(world, req.endpoint, req.endedMs);
  const cost = rowCost(quantity, unitPriceNanos, key.percentDiscountMilli);
  return { req, key, unit: pricing.unit, currency: pricing.currency, quantity, unitPriceNanos, ...cost };
}

/** Charges of calls to `eps` that ended in [fromMs, toMs), in (ended_at, request_id) order per endpoint. */
export function* chargesBetween(world: World, requests: RequestModel, eps: Endpoint[], fromMs: number, toMs: number): Generator<ModelCharge> {
  for (const ep of eps) {
    for (let h = Math.floor(fromMs / HOUR_MS); h * HOUR_MS < toMs; h++) {
      for (const req of requests.hour(ep, h, false)) {
        if (req.endedMs < fromMs || req.endedMs >= toMs) continue;
        const c = chargeOf(world, req);
        if (c) yield c;
      }
    }
  }
}

export interface ModelUsageQuery {
  startMs: number;
  endMs: number;
  tz: string;
  timeframe: Timeframe;
  bound: boolean;
  endpoints: Endpoint[];
  /** With the auth_method expands: rows per key as well. */
  byKey: boolean;
  apiKeyId?: string;
  loginUsername?: string;
  nowMs: number;
}

export interface ModelUsageRow {
  /** -1 for a summary row. */
  bucketIndex: number;
  bucket: string | null;
  /** A bucket of the older row shape (only `cost`): before world.modelLegacyCutoverMs. */
  legacy: boolean;
  endpoint: Endpoint;
  unit: string;
  currency: string;
  unitPriceNanos: number;
  percentDiscount: number | null;
  /** The key when grouped by key; else null. */
  key: ModelKey | null;
  quantity: number;
  subtotalNanos: bigint;
  discountNanos: bigint;
  totalNanos: bigint;
}

export interface ModelUsageResult {
  buckets: Buckets;
  series: ModelUsageRow[];
  summary: ModelUsageRow[];
}

/** Buckets that start before this are served in the legacy row shape: the first 20 days of history. */
export function modelLegacyCutoverMs(world: World): number {
  return Math.floor(world.historyStartMs / DAY_MS) * DAY_MS + 20 * DAY_MS;
}

/**
 * Usage rows: quantity per (bucket, endpoint, unit, currency, unit price, discount[, key]), each priced from its
 * own quantity (so a summary row can differ from the sum of its daily rows by a few nanos). Rows at different
 * prices or discounts come apart. Null when the range needs too many buckets.
 */
export function computeModelUsage(world: World, requests: RequestModel, q: ModelUsageQuery): ModelUsageResult | null {
  const buckets = bucketize(q.startMs, q.endMs, q.timeframe, q.tz, q.bound, q.nowMs);
  if (!buckets) return null;
  const B = buckets.labels.length;
  const edges = buckets.edges;
  const cutover = modelLegacyCutoverMs(world);
  type Acc = { row: Omit<ModelUsageRow, 'bucketIndex' | 'bucket' | 'legacy' | 'quantity' | 'subtotalNanos' | 'discountNanos' | 'totalNanos'>; perBucket: Map<number, number> };
  const accs = new Map<string, Acc>();
  if (B > 0) {
    for (const c of chargesBetween(world, requests, q.endpoints, edges[0], edges[B])) {
      if (q.apiKeyId !== undefined && c.key.apiKeyId !== q.apiKeyId) continue;
      if (q.loginUsername !== undefined && c.key.loginUsername !== q.loginUsername) continue;
      let lo = 0;
      let hi = B;
      while (hi - lo > 1) {
        const mid = (lo + hi) >>> 1;
        if (edges[mid] <= c.req.endedMs) lo = mid;
        else hi = mid;
      }
      const id = [c.req.endpoint.index, c.unitPriceNanos, c.key.percentDiscountMilli ?? -1, q.byKey ? c.key.index : -1].join('|');
      let acc = accs.get(id);
      if (!acc) {
        acc = {
          row: { endpoint: c.req.endpoint, unit: c.unit, currency: c.currency, unitPriceNanos: c.unitPriceNanos, percentDiscount: c.key.percentDiscount, key: q.byKey ? c.key : null },
          perBucket: new Map(),
        };
        accs.set(id, acc);
      }
      acc.perBucket.set(lo, (acc.perBucket.get(lo) ?? 0) + c.quantity);
    }
  }
  const sorted = [...accs.values()].sort(
    (a, b) =>
      cmp(a.row.endpoint.id, b.row.endpoint.id) || a.row.unitPriceNanos - b.row.unitPriceNanos ||
      (a.row.percentDiscount ?? -1) - (b.row.percentDiscount ?? -1) || (a.row.key?.index ?? -1) - (b.row.key?.index ?? -1),
  );
  const priced = (a: Acc, bucketIndex: number, quantity: number): ModelUsageRow => {
    const cost = rowCost(quantity, a.row.unitPriceNanos, a.row.key ? a.row.key.percentDiscountMilli : percentMilli(a.row.percentDiscount));
    return {
      ...a.row,
      bucketIndex,
      bucket: bucketIndex >= 0 ? buckets.labels[bucketIndex] : null,
      legacy: bucketIndex >= 0 && edges[bucketIndex] < cutover,
      quantity,
      ...cost,
    };
  };
  const series: ModelUsageRow[] = [];
  for (let i = 0; i < B; i++) for (const a of sorted) {
    const quantity = a.perBucket.get(i);
    if (quantity) series.push(priced(a, i, quantity));
  }
  const summary: ModelUsageRow[] = [];
  for (const a of sorted) {
    let total = 0;
    for (const v of a.perBucket.values()) total += v;
    if (total > 0) summary.push(priced(a, -1, total));
  }
  return { buckets, series, summary };
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const percentMilli = (p: number | null): number | null => (p === null ? null : percentToMilli(p));

/** The served JSON of a usage row: the current shape, or the legacy one (only `cost`) for older buckets. */
export function modelUsageRowJson(row: ModelUsageRow, expands: { authMethod: boolean; structured: boolean }): Record<string, unknown> {
  const money = (n: bigint | number) => new RawJson(formatNanos(n));
  const out: Record<string, unknown> = row.legacy
    ? { endpoint_id: row.endpoint.id, unit: row.unit, quantity: row.quantity, cost: money(row.totalNanos), currency: row.currency }
    : {
        endpoint_id: row.endpoint.id,
        unit: row.unit,
        quantity: row.quantity,
        unit_price: money(row.unitPriceNanos),
        percent_discount: row.percentDiscount,
        cost_subtotal: money(row.subtotalNanos),
        cost_discount: money(row.discountNanos),
        cost_total: money(row.totalNanos),
        cost: money(row.totalNanos),
        currency: row.currency,
      };
  if (row.key && expands.authMethod) out.auth_method = row.key.label;
  if (row.key && expands.structured) {
    out.auth_method_structured = {
      detail: row.key.label,
      ...(row.key.apiKeyId ? { api_key_id: row.key.apiKeyId } : {}),
      ...(row.key.loginUsername ? { login_username: row.key.loginUsername } : {}),
    };
  }
  return out;
}

/** EUR is converted at a fixed 1.08 for the platform's USD estimate of a call. */
const USD_PER_CURRENCY: Record<string, [bigint, bigint]> = { USD: [1n, 1n], EUR: [108n, 100n] };

/** One record of /v1/models/billing-events. */
export function billingEventJson(c: ModelCharge): Record<string, unknown> {
  const [num, den] = USD_PER_CURRENCY[c.currency];
  return {
    request_id: c.req.id,
    endpoint_id: c.req.endpoint.id,
    timestamp: new Date(c.req.endedMs).toISOString(),
    output_units: c.quantity,
    unit_price: new RawJson(formatNanos(c.unitPriceNanos)),
    percent_discount: c.key.percentDiscount,
    cost_subtotal: new RawJson(formatNanos(c.subtotalNanos)),
    cost_discount: new RawJson(formatNanos(c.discountNanos)),
    cost_total: new RawJson(formatNanos(c.totalNanos)),
    cost_estimate_nano_usd: Number((c.totalNanos * num) / den),
  };
}
