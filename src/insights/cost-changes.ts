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
