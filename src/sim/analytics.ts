// Analytics per endpoint and bucket, from the requests that ended in the bucket; runner history per bucket,
// from the runners' state timelines. Percentiles are nearest-rank on the sorted observed values, so every
// percentile is a value some request really had.
import type { Endpoint } from './world.js';
import type { AppRunners } from './runners.js';
import { historyClass } from './runners.js';
import type { RequestModel, Req } from './requests.js';
import { errorCategory } from './requests.js';
import type { Buckets } from './time.js';
import { HOUR_MS, bucketIndex } from './time.js';

export const ANALYTICS_METRICS = [
  'request_count', 'success_count', 'user_error_count', 'error_count',
  'startup_error_count', 'connection_error_count', 'timeout_error_count', 'runtime_error_count',
  'cold_boot_count', 'p50_cold_boot_duration', 'p75_cold_boot_duration', 'p90_cold_boot_duration',
  'p25_duration', 'p50_duration', 'p75_duration', 'p90_duration', 'p95_duration', 'p99_duration',
  'p50_prepare_duration', 'p75_prepare_duration', 'p90_prepare_duration', 'p95_prepare_duration', 'p99_prepare_duration',
  'total_billable_duration',
] as const;
export type AnalyticsMetric = (typeof ANALYTICS_METRICS)[number];
/** What a row can carry: the notes' metrics, and the interface's rates. */
export type ServedMetric = AnalyticsMetric | 'success_rate' | 'error_rate';

/**
 * The metric names the interface lists for `expand` (platform-interface.md, "Analytics metric names"); a platform
 * serving exactly the interface (--strict-interface) refuses any other name with 422.
 */
export const INTERFACE_EXPAND_METRICS: AnalyticsMetric[] = [
  'startup_error_count', 'connection_error_count', 'timeout_error_count', 'runtime_error_count',
  'cold_boot_count', 'p50_cold_boot_duration', 'p75_cold_boot_duration', 'p90_cold_boot_duration',
  'p25_duration', 'p95_duration', 'p99_duration', 'p95_prepare_duration', 'p99_prepare_duration',
  'total_billable_duration',
];

/**
 * The interface's base analytics ("request counts, success and error rates, and p50, p75, p90"), served by a
 * strict platform whatever `expand` names: rates (success: 2xx, error: 5xx, of all requests; null without requests)
 * where the notes' platform gives counts.
 */
export const INTERFACE_BASE_METRICS = ['request_count', 'success_rate', 'error_rate', 'p50_duration', 'p75_duration', 'p90_duration'] as const;

/** Served when the caller names no metric in `expand`: the base analytics of the interface. */
export const BASE_METRICS: AnalyticsMetric[] = [
  'request_count', 'success_count', 'user_error_count', 'error_count', 'p50_duration', 'p75_duration', 'p90_duration',
];

/** Nearest rank: sorted[ceil(p·n) − 1], with p in whole percent so the product is exact. */
export function percentile(sorted: number[], percent: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.max(0, Math.ceil((percent * sorted.length) / 100) - 1)];
}

class Acc {
  count = 0;
  success = 0;
  userError = 0;
  error = 0;
  startup = 0;
  connection = 0;
  timeout = 0;
  runtime = 0;
  totalDurationMs = 0;
  durations: number[] = [];
  prepares: number[] = [];
  coldBoots: number[] = [];

  add(r: Req): void {
    this.count++;
    if (r.statusClass === 'success') this.success++;
    else if (r.statusClass === 'user_error') this.userError++;
    else this.error++;
    switch (errorCategory(r.errorType)) {
      case 'startup': this.startup++; break;
      case 'connection': this.connection++; break;
      case 'timeout': this.timeout++; break;
      case 'runtime': this.runtime++; break;
    }
    this.totalDurationMs += r.durationMs;
    this.durations.push(r.durationMs);
    this.prepares.push(r.prepareMs);
    if (r.coldBootMs >= 0) this.coldBoots.push(r.coldBootMs);
  }

  merge(o: Acc): void {
    this.count += o.count; this.success += o.success; this.userError += o.userError; this.error += o.error;
    this.startup += o.startup; this.connection += o.connection; this.timeout += o.timeout; this.runtime += o.runtime;
    this.totalDurationMs += o.totalDurationMs;
    for (const x of o.durations) this.durations.push(x);
    for (const x of o.prepares) this.prepares.push(x);
    for (const x of o.coldBoots) this.coldBoots.push(x);
  }

  values(metrics: readonly ServedMetric[]): Record<string, number | null> {
    const asc = (a: number, b: number): number => a - b;
    const d = [...this.durations].sort(asc);
    const p = [...this.prepares].sort(asc);
    const c = [...this.coldBoots].sort(asc);
    const sec = (ms: number | null): number | null => (ms === null ? null : ms / 1000);
    const out: Record<string, number | null> = {};
    for (const m of metrics) {
      let v: number | null;
      switch (m) {
        case 'request_count': v = this.count; break;
        case 'success_rate': v = this.count === 0 ? null : this.success / this.count; break;
        case 'error_rate': v = this.count === 0 ? null : this.error / this.count; break;
        case 'success_count': v = this.success; break;
        case 'user_error_count': v = this.userError; break;
        case 'error_count': v = this.error; break;
        case 'startup_error_count': v = this.startup; break;
        case 'connection_error_count': v = this.connection; break;
        case 'timeout_error_count': v = this.timeout; break;
        case 'runtime_error_count': v = this.runtime; break;
        case 'cold_boot_count': v = this.coldBoots.length; break;
        case 'total_billable_duration': v = this.totalDurationMs / 1000; break;
        default: {
          const m2 = /^p(\d+)_(cold_boot_|prepare_)?duration$/.exec(m);
          const arr = !m2 ? d : m2[2] === 'cold_boot_' ? c : m2[2] === 'prepare_' ? p : d;
          v = m2 ? sec(percentile(arr, Number(m2[1]))) : null;
        }
      }
      out[m] = v;
    }
    return out;
  }
}

export interface AnalyticsRow {
  /** -1 for a summary row. */
  bucketIndex: number;
  bucket: string | null;
  endpointId: string;
  values: Record<string, number | null>;
}

/**
 * One row per (bucket, requested endpoint id), also for buckets without requests (counts 0, percentiles null);
 * a bare `owner/app` aggregates all of its routes. Summary rows cover the whole range per endpoint id.
 */
export function computeAnalytics(
  requests: RequestModel,
  targets: Array<{ id: string; endpoints: Endpoint[] }>,
  buckets: Buckets,
  metrics: readonly ServedMetric[],
): { series: AnalyticsRow[]; summary: AnalyticsRow[] } {
  const edges = buckets.edges;
  const B = buckets.labels.length;
  const series: AnalyticsRow[] = [];
  const summary: AnalyticsRow[] = [];
  const perTarget: Acc[][] = targets.map(() => Array.from({ length: B }, () => new Acc()));
  if (B > 0) {
    const from = edges[0];
    const to = edges[B];
    targets.forEach((t, ti) => {
      for (const ep of t.endpoints) {
        for (let h = Math.floor(from / HOUR_MS); h * HOUR_MS < to; h++) {
          const list = requests.hour(ep, h, false);
          let bi = -1;
          for (const r of list) {
            if (r.endedMs < from || r.endedMs >= to) continue;
            if (bi < 0) bi = bucketIndex(edges, r.endedMs);
            while (edges[bi + 1] <= r.endedMs) bi++;
            perTarget[ti][bi].add(r);
          }
        }
      }
    });
  }
  for (let i = 0; i < B; i++) {
    targets.forEach((t, ti) => {
      series.push({ bucketIndex: i, bucket: buckets.labels[i], endpointId: t.id, values: perTarget[ti][i].values(metrics) });
    });
  }
  targets.forEach((t, ti) => {
    const total = new Acc();
    for (const a of perTarget[ti]) total.merge(a);
    summary.push({ bucketIndex: -1, bucket: null, endpointId: t.id, values: total.values(metrics) });
  });
  return { series, summary };
}

export interface RunnerHistoryPoint {
  timestamp: string;
  running: number;
  idle: number;
  pending: number;
  draining: number;
}

const CLASSES = ['running', 'idle', 'pending', 'draining'] as const;

/**
 * Runner counts by state per bucket: `max` is the most runners in the state at any moment of the bucket,
 * `avg` the time-weighted mean (runner-seconds in the state / bucket seconds, 3 decimals).
 */
export function computeRunnerHistory(ar: AppRunners, buckets: Buckets, aggregation: 'max' | 'avg'): RunnerHistoryPoint[] {
  const edges = buckets.edges;
  const B = buckets.labels.length;
  if (B === 0) return [];
  const from = edges[0];
  const to = edges[B];
  const changes: Array<[number, number, number]> = []; // [timeMs, classIndex, delta]
  for (const runner of ar.runnersOverlapping(from, to)) {
    for (const [state, a, b] of ar.timeline(runner)) {
      const cls = historyClass(state);
      if (!cls) continue;
      const s = Math.max(a, from);
      const e = Math.min(b, to);
      if (e <= s) continue;
      const ci = CLASSES.indexOf(cls);
      changes.push([s, ci, 1], [e, ci, -1]);
    }
  }
  changes.sort((x, y) => x[0] - y[0]);
  const integral = Array.from({ length: B }, () => [0, 0, 0, 0]);
  const maxima = Array.from({ length: B }, () => [0, 0, 0, 0]);
  const counts = [0, 0, 0, 0];
  let t = from;
  let bi = 0;
  let ci = 0;
  const advance = (until: number): void => {
    while (t < until && bi < B) {
      const e = Math.min(until, edges[bi + 1]);
      for (let k = 0; k < 4; k++) {
        integral[bi][k] += counts[k] * (e - t);
        if (counts[k] > maxima[bi][k]) maxima[bi][k] = counts[k];
      }
      t = e;
      if (t >= edges[bi + 1]) bi++;
    }
  };
  while (ci < changes.length) {
    const time = changes[ci][0];
    advance(time);
    while (ci < changes.length && changes[ci][0] === time) {
      counts[changes[ci][1]] += changes[ci][2];
      ci++;
    }
  }
  advance(to);
  const out: RunnerHistoryPoint[] = [];
  for (let i = 0; i < B; i++) {
    const len = edges[i + 1] - edges[i];
    const v = (k: number): number =>
      aggregation === 'max' ? maxima[i][k] : len > 0 ? Math.round((integral[i][k] / len) * 1000) / 1000 : 0;
    out.push({ timestamp: buckets.labels[i], running: v(0), idle: v(1), pending: v(2), draining: v(3) });
  }
  return out;
}
