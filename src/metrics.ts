import { collectDefaultMetrics, Registry } from 'prom-client';

/** The process's metrics registry: default process metrics plus whatever each component registers. */
export function createRegistry(opts: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  return registry;
}
