import { collectDefaultMetrics, Registry } from 'prom-client';

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
