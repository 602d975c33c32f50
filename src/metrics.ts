import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

// prom-client's default set includes gauges named *_total, which Prometheus naming practice (and
// `promtool check metrics`) reserves for counters. The same numbers remain available, per type,
// as nodejs_active_handles / nodejs_active_requests / nodejs_active_resources.
const MISNAMED_DEFAULTS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** The process's metrics registry: default process metrics plus whatever each component registers. */
export function createRegistry(opts: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  if (opts.defaultMetrics !== false) {
    collectDefaultMetrics({ register: registry });
    for (const name of MISNAMED_DEFAULTS) registry.removeSingleMetric(name);
  }
  return registry;
}

type MetricConfig<T extends string> = { name: string; help: string; labelNames?: readonly T[] };

/**
 * Get-or-create, so two components built on one registry (two schedulers in a test, a CLI run beside
 * the service) share a metric instead of failing on "already registered".
 */
export function counter<T extends string>(registry: Registry | undefined, cfg: MetricConfig<T>): Counter<T> {
  return (registry?.getSingleMetric(cfg.name) as Counter<T> | undefined) ?? new Counter<T>({ ...cfg, registers: registry ? [registry] : [] });
}

export function gauge<T extends string>(
  registry: Registry | undefined,
  cfg: MetricConfig<T> & { collect?: (this: Gauge<T>) => void | Promise<void> },
): Gauge<T> {
  return (registry?.getSingleMetric(cfg.name) as Gauge<T> | undefined) ?? new Gauge<T>({ ...cfg, registers: registry ? [registry] : [] });
}

export function histogram<T extends string>(registry: Registry | undefined, cfg: MetricConfig<T> & { buckets: number[] }): Histogram<T> {
  return (registry?.getSingleMetric(cfg.name) as Histogram<T> | undefined) ?? new Histogram<T>({ ...cfg, registers: registry ? [registry] : [] });
}

let storeGeneration = 0;
/** Called when a job commits new data: gauges read from the store refresh at their next scrape, not a minute later. */
export function markStoreChanged(): void {
  storeGeneration++;
}
export function currentStoreGeneration(): number {
  return storeGeneration;
}
