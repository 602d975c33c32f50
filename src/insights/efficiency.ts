// GPU efficiency: where serverless spend goes (busy, idle, draining), how hard the GPUs work, how much VRAM the
// models use, and which apps could run on a cheaper machine. One pure module (rows in, figures out, no I/O), fed
// by named queries in src/store/tables; the routes and the CLI report call it (CONTRIBUTING.md rule 20 asks for one
// answer, one implementation).
//
// The split rule. The platform bills a runner per second while it is running, IDLE or draining, so an app's
// machine-seconds in usage are the sum over its runner history of (running + idle + draining) × bucket seconds.
// Usage is daily per app, machine type and surge; runner history is hourly per app (no machine type). Each usage
// row's cost is split by the app's state weights of that local day: the sums of the hourly `avg` history in
// thousandths of a runner (the platform's resolution). An app that ran several machine types on a day has the same
// state mix apportioned to each: the history cannot tell them apart. The split is exact: in units of the store's
// money scale (1e-12) by largest remainder, ties to busy, then idle, then draining, so the three add up to the row's
// cost. A day the history shows no billed runner (not collected, or below its resolution) is `unattributed`: its
// cost is known, its split is not (issue 45.2). It is never counted idle: before a runner-history backfill that
// would call every earlier day's whole bill idle. Idle share is over the attributed cost only, with the
// unattributed share beside it.
import { decimalToScaled, scaledToDecimal } from '../values.js';

export const MONEY_SCALE = 12;
export const QUANTITY_SCALE = 9;

export interface UsageDayInput {
  /** Local date of the daily bucket, YYYY-MM-DD. */
  date: string;
  app: string;
  machine_type: string;
  is_surge: boolean;
  quantity: string;
  cost_total: string;
  currency: string;
  unit_price: string;
  percent_discount: string | null;
}

export interface HistoryHourInput {
  app: string;
  /** Local date of the hourly bucket. */
  date: string;
  /** Local hour of day, 0-23. */
  hour: number;
  running: number | null;
  idle: number | null;
  draining: number | null;
}

/** Per-runner metrics aggregated per app, machine type and local day. */
export interface RunnerMetricsDayInput {
  app: string;
  machine_type: string;
  date: string;
  gpu_samples: number;
  gpu_utilization_sum: number;
  /** Largest VRAM in use on one runner (summed over its GPUs), bytes. */
  vram_peak_used_bytes: number;
  /** That runner's VRAM (summed over its GPUs), bytes. */
  vram_total_bytes: number;
  samples: number;
  runners: number;
}

export interface AppInput {
  name: string;
  owner: string;
  endpoint_id: string;
  keep_alive: number | null;
  min_concurrency: number | null;
}

export interface EfficiencyRow {
  date: string;
  app: string;
  endpoint_id: string;
  machine_type: string;
  currency: string;
  machine_seconds: string;
  busy_machine_seconds: string;
  idle_machine_seconds: string;
  draining_machine_seconds: string;
  cost: string;
  busy_cost: string;
  idle_cost: string;
  draining_cost: string;
  /** Cost of the usage rows whose app-day has no billed runner in the history: known, but not split (busy + idle + draining + unattributed = cost). */
  unattributed_machine_seconds: string;
  unattributed_cost: string;
  /** idle_cost / (cost - unattributed_cost), to 6 places; null when nothing is attributed. */
  idle_share: number | null;
  /** unattributed_cost / cost (0 when cost is 0), to 6 places. */
  unattributed_share: number;
  /** Mean GPU utilisation (0-1) over the per-runner samples of the day; null without samples. */
  gpu_utilization: number | null;
  gpu_samples: number;
  vram_peak_used_bytes: number | null;
  vram_total_bytes: number | null;
  /** Peak VRAM used / VRAM of the machine (1 = full); null without samples. */
  vram_peak_share: number | null;
  /** What the state split rests on: thousandths of a runner-hour by state (sum of the hourly avg history). */
  history_hours: number;
}

/** Largest-remainder split of `total` by non-negative integer weights; ties go to the earlier weight. All to `fallback` when the weights are 0. */
export function splitByWeights(total: bigint, weights: readonly bigint[], fallback: number): bigint[] {
  // A credit (negative cost) is split as its magnitude, then negated: BigInt division truncates toward zero, and the
  // remainder pass below only adds.
  if (total < 0n) return splitByWeights(-total, weights, fallback).map((p) => -p);
  const sum = weights.reduce((a, b) => a + b, 0n);
  if (sum === 0n) return weights.map((_, i) => (i === fallback ? total : 0n));
  const parts = weights.map((w) => (total * w) / sum);
  let left = total - parts.reduce((a, b) => a + b, 0n);
  const order = weights.map((w, i) => ({ i, r: (total * w) % sum })).sort((a, b) => (a.r === b.r ? a.i - b.i : a.r > b.r ? -1 : 1));
  for (const { i } of order) {
    if (left === 0n) break;
    parts[i] += 1n;
    left -= 1n;
  }
  return parts;
}

const milli = (v: number | null): bigint => BigInt(Math.round((v ?? 0) * 1000));
const round6 = (x: number): number => Math.round(x * 1e6) / 1e6;

/** Busy, idle and draining machine-seconds and cost per local day, app, machine type and currency. */
export function efficiencyByDay(input: {
  usage: readonly UsageDayInput[];
  history: readonly HistoryHourInput[];
  metrics: readonly RunnerMetricsDayInput[];
  apps: readonly AppInput[];
}): EfficiencyRow[] {
  const weights = new Map<string, { w: bigint[]; hours: number }>();
  for (const h of input.history) {
    const k = `${h.app}|${h.date}`;
    let e = weights.get(k);
    if (!e) weights.set(k, (e = { w: [0n, 0n, 0n], hours: 0 }));
    e.w[0] += milli(h.running);
    e.w[1] += milli(h.idle);
    e.w[2] += milli(h.draining);
    e.hours++;
  }
  const endpointOf = new Map(input.apps.map((a) => [a.name, a.endpoint_id]));
  const groups = new Map<string, { date: string; app: string; machine_type: string; currency: string; q: bigint[]; c: bigint[] }>();
  for (const u of input.usage) {
    const k = `${u.date}|${u.app}|${u.machine_type}|${u.currency}`;
    let g = groups.get(k);
    if (!g) groups.set(k, (g = { date: u.date, app: u.app, machine_type: u.machine_type, currency: u.currency, q: [0n, 0n, 0n, 0n, 0n], c: [0n, 0n, 0n, 0n, 0n] }));
    const w = weights.get(`${u.app}|${u.date}`)?.w ?? [0n, 0n, 0n];
    // Each usage row (surge and non-surge apart) is split on its own, so the parts add up to every row.
    const q = decimalToScaled(u.quantity, QUANTITY_SCALE);
    const c = decimalToScaled(u.cost_total, MONEY_SCALE);
    g.q[0] += q;
    g.c[0] += c;
    if (w.every((x) => x === 0n)) {
      g.q[4] += q;
      g.c[4] += c;
      continue;
    }
    const qs = splitByWeights(q, w, 1);
    const cs = splitByWeights(c, w, 1);
    for (let i = 0; i < 3; i++) {
      g.q[i + 1] += qs[i];
      g.c[i + 1] += cs[i];
    }
  }
  const metrics = new Map(input.metrics.map((m) => [`${m.date}|${m.app}|${m.machine_type}`, m]));
  const out: EfficiencyRow[] = [];
  for (const g of groups.values()) {
    const m = metrics.get(`${g.date}|${g.app}|${g.machine_type}`);
    const cost = g.c[0];
    out.push({
      date: g.date,
      app: g.app,
      endpoint_id: endpointOf.get(g.app) ?? '',
      machine_type: g.machine_type,
      currency: g.currency,
      machine_seconds: scaledToDecimal(g.q[0], QUANTITY_SCALE),
      busy_machine_seconds: scaledToDecimal(g.q[1], QUANTITY_SCALE),
      idle_machine_seconds: scaledToDecimal(g.q[2], QUANTITY_SCALE),
      draining_machine_seconds: scaledToDecimal(g.q[3], QUANTITY_SCALE),
      cost: scaledToDecimal(cost, MONEY_SCALE),
      busy_cost: scaledToDecimal(g.c[1], MONEY_SCALE),
      idle_cost: scaledToDecimal(g.c[2], MONEY_SCALE),
      draining_cost: scaledToDecimal(g.c[3], MONEY_SCALE),
      unattributed_machine_seconds: scaledToDecimal(g.q[4], QUANTITY_SCALE),
      unattributed_cost: scaledToDecimal(g.c[4], MONEY_SCALE),
      idle_share: cost - g.c[4] === 0n ? null : round6(Number((g.c[2] * 1_000_000n) / (cost - g.c[4])) / 1e6),
      unattributed_share: cost === 0n ? 0 : round6(Number((g.c[4] * 1_000_000n) / cost) / 1e6),
      gpu_utilization: m && m.gpu_samples > 0 ? round6(m.gpu_utilization_sum / m.gpu_samples) : null,
      gpu_samples: m?.gpu_samples ?? 0,
      vram_peak_used_bytes: m && m.gpu_samples > 0 ? m.vram_peak_used_bytes : null,
      vram_total_bytes: m && m.gpu_samples > 0 ? m.vram_total_bytes : null,
      vram_peak_share: m && m.gpu_samples > 0 && m.vram_total_bytes > 0 ? round6(m.vram_peak_used_bytes / m.vram_total_bytes) : null,
      history_hours: weights.get(`${g.app}|${g.date}`)?.hours ?? 0,
    });
  }
  return out.sort((a, b) => cmp(a.date, b.date) || cmp(a.currency, b.currency) || cmp(a.app, b.app) || cmp(a.machine_type, b.machine_type));
}

export interface EfficiencyHourRow {
  date: string;
  hour: number;
  app: string;
  endpoint_id: string;
  machine_type: string;
  currency: string;
  busy_machine_seconds: string;
  idle_machine_seconds: string;
  draining_machine_seconds: string;
  busy_cost: string;
  idle_cost: string;
  draining_cost: string;
}

/**
 * The same figures per local hour. Usage is daily, so each daily row is split by the app-day's weights per hour and
 * state (3 × the day's hours), by largest remainder: the hours of a day add up to its row exactly. Summed over a
 * day they can differ from `efficiencyByDay`'s split of the same row by a few units of the last place (12 decimals),
 * because the remainders fall differently; the daily figures are the reference. A day with no billed runner in
 * its history has no hourly rows.
 */
export function efficiencyByHour(input: { usage: readonly UsageDayInput[]; history: readonly HistoryHourInput[]; apps: readonly AppInput[] }): EfficiencyHourRow[] {
  const hoursOf = new Map<string, HistoryHourInput[]>();
  for (const h of input.history) {
    const k = `${h.app}|${h.date}`;
    const list = hoursOf.get(k) ?? [];
    list.push(h);
    hoursOf.set(k, list);
  }
  const endpointOf = new Map(input.apps.map((a) => [a.name, a.endpoint_id]));
  const out = new Map<string, { row: EfficiencyHourRow; q: bigint[]; c: bigint[] }>();
  for (const u of input.usage) {
    const hours = (hoursOf.get(`${u.app}|${u.date}`) ?? []).slice().sort((a, b) => a.hour - b.hour);
    const weights = hours.flatMap((h) => [milli(h.running), milli(h.idle), milli(h.draining)]);
    if (weights.every((w) => w === 0n)) continue;
    const qs = splitByWeights(decimalToScaled(u.quantity, QUANTITY_SCALE), weights, 1);
    const cs = splitByWeights(decimalToScaled(u.cost_total, MONEY_SCALE), weights, 1);
    hours.forEach((h, i) => {
      const k = `${u.date}|${h.hour}|${u.app}|${u.machine_type}|${u.currency}`;
      let e = out.get(k);
      if (!e) {
        e = {
          row: {
            date: u.date, hour: h.hour, app: u.app, endpoint_id: endpointOf.get(u.app) ?? '', machine_type: u.machine_type, currency: u.currency,
            busy_machine_seconds: '', idle_machine_seconds: '', draining_machine_seconds: '', busy_cost: '', idle_cost: '', draining_cost: '',
          },
          q: [0n, 0n, 0n],
          c: [0n, 0n, 0n],
        };
        out.set(k, e);
      }
      for (let j = 0; j < 3; j++) {
        e.q[j] += qs[i * 3 + j];
        e.c[j] += cs[i * 3 + j];
      }
    });
  }
  return [...out.values()]
    .map(({ row, q, c }) => ({
      ...row,
      busy_machine_seconds: scaledToDecimal(q[0], QUANTITY_SCALE), idle_machine_seconds: scaledToDecimal(q[1], QUANTITY_SCALE),
      draining_machine_seconds: scaledToDecimal(q[2], QUANTITY_SCALE),
      busy_cost: scaledToDecimal(c[0], MONEY_SCALE), idle_cost: scaledToDecimal(c[1], MONEY_SCALE), draining_cost: scaledToDecimal(c[2], MONEY_SCALE),
    }))
    .filter((r) => r.busy_machine_seconds !== '0' || r.idle_machine_seconds !== '0' || r.draining_machine_seconds !== '0' || r.busy_cost !== '0' || r.idle_cost !== '0' || r.draining_cost !== '0')
    .sort((a, b) => cmp(a.date, b.date) || a.hour - b.hour || cmp(a.currency, b.currency) || cmp(a.app, b.app) || cmp(a.machine_type, b.machine_type));
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Idle runner-hours per app and local hour of day (from the hourly avg history): when keep-warm time is spent. */
export function idleHours(history: readonly HistoryHourInput[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const h of history) {
    let a = out.get(h.app);
    if (!a) out.set(h.app, (a = new Array<number>(24).fill(0)));
    a[h.hour] = Math.round((a[h.hour] + (h.idle ?? 0)) * 1000) / 1000;
  }
  return out;
}

export interface VramPeakInput {
  app: string;
  /** Largest VRAM one runner used (summed over its GPUs), bytes. */
  peak_used_bytes: number;
  samples: number;
  runners: number;
  first_sample: string;
  last_sample: string;
}

export interface MachineVramInput {
  machine_type: string;
  /** VRAM of one machine (summed over its GPUs), bytes, as its runners report it. */
  vram_total_bytes: number;
}

export interface Hint {
  kind: 'right_size' | 'keep_warm' | 'raise_max_concurrency';
  app: string;
  endpoint_id: string;
  /** null for raise_max_concurrency (not about money or a machine). */
  currency: string | null;
  machine_type: string | null;
  recommended_machine_type: string | null;
  /** right_size: the month's machine-seconds on machine_type × the difference of net prices; keep_warm: the idle cost. */
  amount: string | null;
  /** What the hint rests on, in words with counts. */
  evidence: string;
  peak_vram_bytes: number | null;
  required_vram_bytes: number | null;
  machine_seconds: string | null;
  /** keep_warm: local hours of day with idle runners, most idle first, as "HH:00 (runner-hours)". */
  idle_hours: string | null;
  /** raise_max_concurrency (src/insights/scheduling.ts): the share of requests that failed with runner_scheduling_failure. */
  share_of_requests: number | null;
  scheduling_failures: number | null;
  /** raise_max_concurrency: requests with a known outcome the share is of. */
  requests: number | null;
  /** raise_max_concurrency: when the latest scheduling failure ended (ISO 8601 UTC). */
  last_seen: string | null;
  /** raise_max_concurrency: the app's current setting (apps collector); null when unknown. */
  max_concurrency: number | null;
}

/** The fields only a raise_max_concurrency hint fills. */
export const NO_CONCURRENCY_EVIDENCE = { share_of_requests: null, scheduling_failures: null, requests: null, last_seen: null, max_concurrency: null } as const;

interface Price {
  /** Net of the discount, 1e-18 currency units per machine-second (unit price at 1e-12 × (1 - pct/100) with pct at 1e-4). */
  net18: bigint;
  date: string;
}

/**
 * Right-sizing and keep-warm hints. Prices: the non-surge unit price and discount the platform reported in the
 * owner's usage rows (latest day of the month), because the machine-second price is per owner and machine type and
 * `unit_prices` holds per-endpoint output-unit prices, not machine prices. Candidates: machine types whose VRAM a
 * runner reported and whose price the owner's usage shows in that currency. Savings are rounded half-up to nanos.
 */
export function recommendations(input: {
  apps: readonly AppInput[];
  /** Daily usage of the month the savings are for (all apps: prices come from any of the owner's apps). */
  monthUsage: readonly UsageDayInput[];
  peaks: readonly VramPeakInput[];
  machines: readonly MachineVramInput[];
  marginPercent: number;
  /** Efficiency rows of the keep-warm window (the last 30 days) and its hourly history. */
  idleRows: readonly EfficiencyRow[];
  idleHistory: readonly HistoryHourInput[];
  idleWindow: { from: string; to: string };
}): Hint[] {
  const appByName = new Map(input.apps.map((a) => [a.name, a]));
  const prices = new Map<string, Price>(); // owner|machine|currency
  const seconds = new Map<string, bigint>(); // app|machine|currency
  for (const u of input.monthUsage) {
    const app = appByName.get(u.app);
    if (!app) continue;
    const sk = `${u.app}|${u.machine_type}|${u.currency}`;
    seconds.set(sk, (seconds.get(sk) ?? 0n) + decimalToScaled(u.quantity, QUANTITY_SCALE));
    if (u.is_surge) continue;
    const pk = `${app.owner}|${u.machine_type}|${u.currency}`;
    const prev = prices.get(pk);
    if (prev && prev.date >= u.date) continue;
    const pct = u.percent_discount === null ? 0n : decimalToScaled(u.percent_discount, 4);
    prices.set(pk, { net18: decimalToScaled(u.unit_price, MONEY_SCALE) * (1_000_000n - pct), date: u.date });
  }
  const vram = new Map(input.machines.map((m) => [m.machine_type, m.vram_total_bytes]));
  const peaks = new Map(input.peaks.map((p) => [p.app, p]));
  const hints: Hint[] = [];
  const margin = BigInt(Math.round(input.marginPercent * 100)); // hundredths of a percent
  for (const [sk, q] of [...seconds].sort(([a], [b]) => cmp(a, b))) {
    const [appName, machineType, currency] = sk.split('|');
    const app = appByName.get(appName)!;
    const peak = peaks.get(appName);
    if (!peak || peak.peak_used_bytes <= 0 || q === 0n) continue;
    const current = prices.get(`${app.owner}|${machineType}|${currency}`);
    if (!current) continue;
    // Required VRAM = peak × (1 + margin), compared in integers: total × 10000 ≥ peak × (10000 + margin).
    const need = BigInt(peak.peak_used_bytes) * (10_000n + margin);
    let best: { machine: string; price: Price } | null = null;
    for (const [machine, total] of vram) {
      if (BigInt(total) * 10_000n < need) continue;
      const p = prices.get(`${app.owner}|${machine}|${currency}`);
      if (!p) continue;
      if (!best || p.net18 < best.price.net18 || (p.net18 === best.price.net18 && machine < best.machine)) best = { machine, price: p };
    }
    if (!best || best.price.net18 >= current.net18) continue;
    // q at 1e-9 × Δ at 1e-18 = 1e-27; to nanos (1e-9): / 1e18, half up.
    const exact = q * (current.net18 - best.price.net18);
    const half = 10n ** 18n / 2n;
    const savingNanos = (exact + half) / 10n ** 18n;
    hints.push({
      kind: 'right_size',
      app: appName,
      endpoint_id: app.endpoint_id,
      currency,
      machine_type: machineType,
      recommended_machine_type: best.machine,
      amount: scaledToDecimal(savingNanos, 9),
      evidence:
        `peak VRAM ${peak.peak_used_bytes} bytes over ${peak.samples} per-runner samples of ${peak.runners} runner(s) ` +
        `(${peak.first_sample} to ${peak.last_sample}); ${best.machine} has ${vram.get(best.machine)} bytes; ` +
        `${scaledToDecimal(q, QUANTITY_SCALE)} machine-seconds on ${machineType} this month at the owner's usage prices of ${current.date} and ${best.price.date}`,
      peak_vram_bytes: peak.peak_used_bytes,
      required_vram_bytes: Number((need + 9_999n) / 10_000n),
      machine_seconds: scaledToDecimal(q, QUANTITY_SCALE),
      idle_hours: null,
      ...NO_CONCURRENCY_EVIDENCE,
    });
  }
  // Keep-warm: idle cost of the window per app and currency, with the hours of day it happened in.
  const hours = idleHours(input.idleHistory);
  // Evidence only: a day without runner history adds nothing (its cost is unattributed, not idle).
  const idle = new Map<string, { cost: bigint; unattributed: bigint; days: Set<string>; machines: Set<string> }>();
  for (const r of input.idleRows) {
    const k = `${r.app}|${r.currency}`;
    let e = idle.get(k);
    if (!e) idle.set(k, (e = { cost: 0n, unattributed: 0n, days: new Set(), machines: new Set() }));
    e.unattributed += decimalToScaled(r.unattributed_cost, MONEY_SCALE);
    if (r.history_hours === 0) continue;
    e.cost += decimalToScaled(r.idle_cost, MONEY_SCALE);
    e.days.add(r.date);
    e.machines.add(r.machine_type);
  }
  for (const [k, e] of [...idle].sort(([a], [b]) => cmp(a, b))) {
    const [appName, currency] = k.split('|');
    const app = appByName.get(appName);
    if (!app || e.cost === 0n) continue;
    const warm = (app.keep_alive ?? 0) > 0 || (app.min_concurrency ?? 0) > 0;
    if (!warm) continue;
    const perHour = hours.get(appName) ?? [];
    const busiest = perHour
      .map((v, h) => ({ h, v }))
      .filter((x) => x.v > 0)
      .sort((a, b) => b.v - a.v || a.h - b.h);
    hints.push({
      kind: 'keep_warm',
      app: appName,
      endpoint_id: app.endpoint_id,
      currency,
      machine_type: [...e.machines].sort().join(','),
      recommended_machine_type: null,
      amount: scaledToDecimal(e.cost, MONEY_SCALE),
      evidence:
        `idle cost of ${e.days.size} day(s) of usage from ${input.idleWindow.from} to ${input.idleWindow.to} (exclusive) with runner history, split by ` +
        `the hourly runner history${e.unattributed > 0n ? ` (${scaledToDecimal(e.unattributed, MONEY_SCALE)} of the window's cost has no runner history: unattributed, not counted)` : ''}; ` +
        `keep_alive ${app.keep_alive ?? 'unknown'} s, min_concurrency ${app.min_concurrency ?? 'unknown'}`,
      peak_vram_bytes: null,
      required_vram_bytes: null,
      machine_seconds: null,
      idle_hours: busiest.map((x) => `${String(x.h).padStart(2, '0')}:00 (${x.v})`).join(', '),
      ...NO_CONCURRENCY_EVIDENCE,
    });
  }
  return hints;
}
