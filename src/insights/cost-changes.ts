// Why the bill changed: the difference between two periods' cost, per group, decomposed into volume, price,
// discount and new/gone groups (issue 32.1). One pure module (CONTRIBUTING.md rule 11: the formulas are in the
// README, "Why the bill changed"): the API route, the CLI report and the anomaly explanations all call it.
//
// Exactness: every amount is a decimal string, computed on BigInt at SCALE decimals. Per priced item, volume is
// the one figure that may be rounded (half away from zero) when the item's price is not one exact decimal; price
// is then the remainder of the subtotal's change, so per item, per group and per currency
// volume + price + discount + new + gone = current cost - baseline cost, exactly.
import { decimalToScaled, scaledToDecimal } from '../values.js';

/** Decimals of every amount in and out (the store's cost columns keep 12). */
export const COST_CHANGE_SCALE = 12;

export type CostProduct = 'serverless' | 'model_api';

/**
 * One priced item of one group in one period, summed over the period: e.g. for group {app: 'acme/x'} the item
 * 'GPU-H100' (or 'GPU-H100 surge'), or for group {endpoint: 'svc-ai/flux-dev'} the item 'svc-ai/flux-dev image'.
 * Amounts are exact decimal strings; `discount` is the positive amount taken off `subtotal`.
 */
export interface CostLine {
  product: CostProduct;
  /** The group's key values, e.g. { app: 'acme/flux' } or { endpoint: 'svc-ai/flux-dev', api_key: 'k1' }. */
  group: Record<string, string>;
  /** What one unit price applies to within the group (machine type and surge; endpoint and unit). */
  item: string;
  currency: string;
  quantity: string;
  subtotal: string;
  discount: string;
}

/** The parts of a change; they add up to `difference` exactly. */
export interface ChangeParts {
  /** Quantity change at the old price: (q1 - q0) x p0. */
  volume: string;
  /** Unit-price change at the new quantity: (p1 - p0) x q1 (the subtotal's change minus volume). */
  price: string;
  /** Change in discount, as its effect on cost: -(discount1 - discount0). */
  discount: string;
  /** The whole cost of a group that had none in the baseline. */
  new: string;
  /** Minus the whole cost of a group that has none in the current period. */
  gone: string;
}

export interface PeriodFigures {
  quantity: string;
  subtotal: string;
  discount: string;
  /** subtotal - discount */
  cost: string;
}

export interface ItemChange extends ChangeParts {
  item: string;
  baseline: PeriodFigures & { unit_price: string | null };
  current: PeriodFigures & { unit_price: string | null };
  difference: string;
}

export type GroupStatus = 'new' | 'gone' | 'changed' | 'unchanged';

export interface GroupChange extends ChangeParts {
  product: CostProduct;
  group: Record<string, string>;
  currency: string;
  status: GroupStatus;
  baseline: { subtotal: string; discount: string; cost: string };
  current: { subtotal: string; discount: string; cost: string };
  difference: string;
  items: ItemChange[];
}

export interface CurrencyTotal extends ChangeParts {
  currency: string;
  baseline: string;
  current: string;
  difference: string;
}

export interface CostChanges {
  /** Ranked top movers first: by |difference|, then product, group and currency. */
  groups: GroupChange[];
  /** One row per currency (never one number across currencies). */
  totals: CurrencyTotal[];
}

interface Sums {
  q: bigint;
  s: bigint;
  d: bigint;
}

const S = COST_CHANGE_SCALE;
const ONE = 10n ** BigInt(S);

function toScaled(value: string, what: string): bigint {
  try {
    return decimalToScaled(value, S);
  } catch (e) {
    throw new Error(`cost line ${what}: ${(e as Error).message}`);
  }
}

const text = (v: bigint) => scaledToDecimal(v, S);

/** a x b / c on scaled values, rounded half away from zero to the scale. */
function mulDiv(a: bigint, b: bigint, c: bigint): bigint {
  const num = a * b;
  const neg = num < 0n !== c < 0n;
  const n = num < 0n ? -num : num;
  const d = c < 0n ? -c : c;
  let q = n / d;
  if ((n % d) * 2n >= d) q += 1n;
  return neg ? -q : q;
}

/** The period's unit price of an item: subtotal / quantity (rounded to the scale when not exact), or null. */
function unitPrice(x: Sums): string | null {
  return x.q === 0n ? null : text(mulDiv(x.s, ONE, x.q));
}

/** A stable identity for a group's key values (keys sorted). */
export function groupKey(group: Record<string, string>): string {
  return JSON.stringify(Object.keys(group).sort().map((k) => [k, group[k]]));
}

function sumLines(lines: CostLine[], side: string) {
  // group id -> item -> sums; group id -> (product, group, currency)
  const byGroup = new Map<string, { product: CostProduct; group: Record<string, string>; currency: string; items: Map<string, Sums> }>();
  for (const line of lines) {
    const id = JSON.stringify([line.product, groupKey(line.group), line.currency]);
    let g = byGroup.get(id);
    if (!g) byGroup.set(id, (g = { product: line.product, group: { ...line.group }, currency: line.currency, items: new Map() }));
    const cur = g.items.get(line.item) ?? { q: 0n, s: 0n, d: 0n };
    cur.q += toScaled(line.quantity, `${side} quantity`);
    cur.s += toScaled(line.subtotal, `${side} subtotal`);
    cur.d += toScaled(line.discount, `${side} discount`);
    g.items.set(line.item, cur);
  }
  return byGroup;
}

const ZERO: Sums = { q: 0n, s: 0n, d: 0n };

/**
 * Per priced item: volume = (q1 - q0) x p0 with p0 = s0 / q0 (when the item had no baseline quantity, p0 is
 * taken as p1 = s1 / q1, so a new item's subtotal is all volume); price = (s1 - s0) - volume, which is
 * (p1 - p0) x q1 whenever each period's subtotal is its quantity times its price; discount = -(d1 - d0).
 */
function itemParts(b: Sums, c: Sums): { volume: bigint; price: bigint; discount: bigint } {
  let volume = 0n;
  if (b.q !== 0n) volume = mulDiv(c.q - b.q, b.s, b.q);
  else if (c.q !== 0n) volume = c.s; // (q1 - 0) x (s1 / q1)
  return { volume, price: c.s - b.s - volume, discount: -(c.d - b.d) };
}

function figures(x: Sums): PeriodFigures {
  return { quantity: text(x.q), subtotal: text(x.s), discount: text(x.d), cost: text(x.s - x.d) };
}

function abs(v: bigint) {
  return v < 0n ? -v : v;
}

/** The change from `baseline` to `current`, per group and per currency, each difference decomposed exactly. */
export function attributeChanges({ baseline, current }: { baseline: CostLine[]; current: CostLine[] }): CostChanges {
  const before = sumLines(baseline, 'baseline');
  const after = sumLines(current, 'current');
  const ids = new Set([...before.keys(), ...after.keys()]);
  const groups: (GroupChange & { _diff: bigint; _id: string })[] = [];
  const totals = new Map<string, { b: bigint; c: bigint; volume: bigint; price: bigint; discount: bigint; new: bigint; gone: bigint }>();
  for (const id of ids) {
    const b = before.get(id);
    const c = after.get(id);
    const meta = (b ?? c)!;
    const itemNames = [...new Set([...(b?.items.keys() ?? []), ...(c?.items.keys() ?? [])])].sort();
    let bs = 0n, bd = 0n, cs = 0n, cd = 0n;
    let volume = 0n, price = 0n, discount = 0n;
    const items: ItemChange[] = [];
    for (const name of itemNames) {
      const bi = b?.items.get(name) ?? ZERO;
      const ci = c?.items.get(name) ?? ZERO;
      bs += bi.s; bd += bi.d; cs += ci.s; cd += ci.d;
      const parts = b && c ? itemParts(bi, ci) : { volume: 0n, price: 0n, discount: 0n };
      volume += parts.volume; price += parts.price; discount += parts.discount;
      const diff = ci.s - ci.d - (bi.s - bi.d);
      items.push({
        item: name,
        baseline: { ...figures(bi), unit_price: unitPrice(bi) },
        current: { ...figures(ci), unit_price: unitPrice(ci) },
        difference: text(diff),
        volume: text(parts.volume),
        price: text(parts.price),
        discount: text(parts.discount),
        new: text(b ? 0n : diff),
        gone: text(c ? 0n : diff),
      });
    }
    const diff = cs - cd - (bs - bd);
    const isNew = !b ? diff : 0n;
    const isGone = !c ? diff : 0n;
    const status: GroupStatus = !b ? 'new' : !c ? 'gone' : diff === 0n && volume === 0n && price === 0n && discount === 0n ? 'unchanged' : 'changed';
    groups.push({
      product: meta.product,
      group: meta.group,
      currency: meta.currency,
      status,
      baseline: { subtotal: text(bs), discount: text(bd), cost: text(bs - bd) },
      current: { subtotal: text(cs), discount: text(cd), cost: text(cs - cd) },
      difference: text(diff),
      volume: text(volume),
      price: text(price),
      discount: text(discount),
      new: text(isNew),
      gone: text(isGone),
      items,
      _diff: diff,
      _id: id,
    });
    const t = totals.get(meta.currency) ?? { b: 0n, c: 0n, volume: 0n, price: 0n, discount: 0n, new: 0n, gone: 0n };
    t.b += bs - bd; t.c += cs - cd;
    t.volume += volume; t.price += price; t.discount += discount; t.new += isNew; t.gone += isGone;
    totals.set(meta.currency, t);
  }
  groups.sort((x, y) => {
    const dx = abs(x._diff), dy = abs(y._diff);
    if (dx !== dy) return dx > dy ? -1 : 1;
    return x._id < y._id ? -1 : x._id > y._id ? 1 : 0;
  });
  return {
    groups: groups.map(({ _diff, _id, ...g }) => g),
    totals: [...totals.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([currency, t]) => ({
        currency,
        baseline: text(t.b),
        current: text(t.c),
        difference: text(t.c - t.b),
        volume: text(t.volume),
        price: text(t.price),
        discount: text(t.discount),
        new: text(t.new),
        gone: text(t.gone),
      })),
  };
}

/** The parts of a change that explain it, largest first, in words (e.g. for an anomaly's explanation). */
export function describeGroupChange(g: GroupChange): string {
  const name = Object.values(g.group).join('/') || g.product;
  if (g.status === 'new') return `new ${name}: +${g.current.cost} ${g.currency}`;
  if (g.status === 'gone') return `gone ${name}: -${g.baseline.cost} ${g.currency}`;
  const parts: [string, string][] = [['volume', g.volume], ['price', g.price], ['discount', g.discount]];
  parts.sort((a, b) => {
    // Stryker disable next-line StringLiteral: the error's label only; the parts are this module's own decimal text
    const x = abs(toScaled(a[1], 'part')), y = abs(toScaled(b[1], 'part'));
    return x === y ? 0 : x > y ? -1 : 1;
  });
  const [kind, amount] = parts[0];
  const signed = amount.startsWith('-') ? amount : `+${amount}`;
  let detail = '';
  if (kind === 'price') {
    const moved = g.items.filter((i) => i.baseline.unit_price !== null && i.current.unit_price !== null && i.baseline.unit_price !== i.current.unit_price);
    if (moved.length > 0) detail = `: unit price ${moved.map((i) => `${i.item} ${i.baseline.unit_price} -> ${i.current.unit_price}`).join(', ')}`;
  }
  return `${kind} effect ${signed} ${g.currency} on ${name}${detail}`;
}

/** A group seen in one period only while the other was not wholly collected: its absence there is not known. */
export type CoverageStatus = 'baseline_not_collected' | 'current_not_collected';

export interface HonestGroupChange extends Omit<GroupChange, 'status' | 'items'> {
  status: GroupStatus | CoverageStatus;
  items: Array<ItemChange & { not_collected: string }>;
  /** The difference of a group whose other period was not wholly collected (neither new nor gone: unknown). */
  not_collected: string;
}

export interface HonestCurrencyTotal extends CurrencyTotal {
  not_collected: string;
  /** Cost per day of each period: months differ in length, and a month to date has fewer days than its baseline. */
  baseline_per_day: string;
  current_per_day: string;
}

export interface HonestCostChanges {
  groups: HonestGroupChange[];
  totals: HonestCurrencyTotal[];
}

function perDay(amount: string, days: number): string {
  return text(mulDiv(toScaled(amount, 'per-day amount'), 1n, BigInt(days)));
}

/**
 * The changes as far as the collections support them (issue 45.2): where a period was not wholly collected, a group
 * seen only in the other is `baseline_not_collected` (not new) or `current_not_collected` (not gone), and its
 * difference moves from new/gone to `not_collected`, so volume + price + discount + new + gone + not_collected =
 * difference still holds exactly. Totals carry each period's cost per day.
 */
export function honestChanges(
  changes: CostChanges,
  q: { baselineComplete: boolean; currentComplete: boolean; baselineDays: number; currentDays: number },
): HonestCostChanges {
  const notCollected = new Map<string, bigint>();
  const groups = changes.groups.map((g): HonestGroupChange => {
    const unknownNew = g.status === 'new' && !q.baselineComplete;
    const unknownGone = g.status === 'gone' && !q.currentComplete;
    if (!unknownNew && !unknownGone) return { ...g, not_collected: '0', items: g.items.map((i) => ({ ...i, not_collected: '0' })) };
    notCollected.set(g.currency, (notCollected.get(g.currency) ?? 0n) + toScaled(g.difference, 'difference'));
    return {
      ...g,
      status: unknownNew ? 'baseline_not_collected' : 'current_not_collected',
      new: '0',
      gone: '0',
      not_collected: g.difference,
      items: g.items.map((i) => ({ ...i, new: '0', gone: '0', not_collected: i.difference })),
    };
  });
  const totals = changes.totals.map((t): HonestCurrencyTotal => {
    const moved = notCollected.get(t.currency) ?? 0n;
    return {
      ...t,
      new: text(toScaled(t.new, 'new') - sumOf(groups, t.currency, 'baseline_not_collected')),
      gone: text(toScaled(t.gone, 'gone') - sumOf(groups, t.currency, 'current_not_collected')),
      not_collected: text(moved),
      baseline_per_day: perDay(t.baseline, q.baselineDays),
      current_per_day: perDay(t.current, q.currentDays),
    };
  });
  return { groups, totals };
}

function sumOf(groups: readonly HonestGroupChange[], currency: string, status: CoverageStatus): bigint {
  return groups.filter((g) => g.currency === currency && g.status === status).reduce((n, g) => n + toScaled(g.not_collected, 'not collected'), 0n);
}

/**
 * The periods a change question compares (one default for the API and the CLI). The baseline defaults to the period
 * just before `from`: the same number of whole calendar months when the period is whole months, else the same number
 * of days. A period not over at `today` (local date) is compared to date: the current period ends after today and the
 * baseline covers the same number of days from its start (month to date against the same days of the baseline).
 */
export function changePeriods(q: { from: string; to: string; baselineFrom?: string; baselineTo?: string; today: string }): {
  from: string; to: string; baselineFrom: string; baselineTo: string; toDate: boolean;
} {
  const day = (s: string) => Date.parse(`${s}T00:00:00Z`);
  const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const addMonths = (s: string, n: number) => {
    const d = new Date(day(s));
    return iso(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + n, 1));
  };
  const monthsOf = (from: string, to: string): number | null => {
    if (!from.endsWith('-01') || !to.endsWith('-01')) return null;
    const n = (Number(to.slice(0, 4)) - Number(from.slice(0, 4))) * 12 + Number(to.slice(5, 7)) - Number(from.slice(5, 7));
    return n > 0 ? n : null;
  };
  const tomorrow = iso(day(q.today) + 86_400_000);
  const toDate = q.to > tomorrow && q.from < tomorrow;
  const to = toDate ? tomorrow : q.to;
  if (q.baselineFrom !== undefined && q.baselineTo !== undefined) return { from: q.from, to, baselineFrom: q.baselineFrom, baselineTo: q.baselineTo, toDate };
  const months = monthsOf(q.from, q.to);
  const days = (day(q.to) - day(q.from)) / 86_400_000;
  let baselineFrom: string;
  let baselineTo: string;
  if (q.baselineTo !== undefined) {
    baselineTo = q.baselineTo;
    baselineFrom = months !== null && baselineTo.endsWith('-01') ? addMonths(baselineTo, -months) : iso(day(baselineTo) - days * 86_400_000);
  } else {
    baselineFrom = q.baselineFrom ?? (months !== null ? addMonths(q.from, -months) : iso(day(q.from) - days * 86_400_000));
    baselineTo = months !== null && baselineFrom.endsWith('-01') ? addMonths(baselineFrom, months) : iso(day(baselineFrom) + days * 86_400_000);
  }
  if (toDate) {
    const elapsed = (day(to) - day(q.from)) / 86_400_000;
    const clipped = iso(day(baselineFrom) + elapsed * 86_400_000);
    if (clipped < baselineTo) baselineTo = clipped;
  }
  return { from: q.from, to, baselineFrom, baselineTo, toDate };
}
