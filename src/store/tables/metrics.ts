import { z } from 'zod';
import { defineTable } from './table.js';
import type { Store } from '../client.js';
import type { Logger } from '../../log.js';
import { applyTtlDays } from '../retention.js';

export const metricSeries = defineTable(
  'metric_series',
  z.object({
    metric: z.string(),
    fingerprint: z.string().regex(/^\d+$/), // UInt64 as decimal text
    labels: z.record(z.string(), z.string()),
    family: z.string(),
    type: z.string(),
    help: z.string(),
    unit: z.string(),
    last_seen: z.string(),
  }),
);

export const metricSamples = defineTable(
  'metric_samples',
  z.object({
    metric: z.string(),
    fingerprint: z.string().regex(/^\d+$/),
    ts: z.string(),
    value: z.union([z.number(), z.enum(['NaN', '+Inf', '-Inf'])]),
  }),
);

export type SeriesRow = z.input<typeof metricSeries.row>;
export type SampleRow = z.input<typeof metricSamples.row>;

export const scrapes = defineTable(
  'scrapes',
  z.object({
    scraped_at: z.string(),
    job: z.string(),
    instance: z.string(),
    target: z.string(),
    up: z.union([z.literal(0), z.literal(1)]),
    duration_seconds: z.number().nonnegative(),
    samples: z.number().int().nonnegative(),
    bytes: z.number().int().nonnegative(),
    error: z.string(),
  }),
);

export type ScrapeRow = z.input<typeof scrapes.row>;

/** Keeps metric_samples' TTL at METRICS_RETENTION_DAYS. */
export function applyMetricsRetention(store: Pick<Store, 'client' | 'cluster'>, days: number, logger?: Logger): Promise<boolean> {
  // Samples are many and short-lived: merges apply a new TTL, no rewrite of every part at start-up.
  return applyTtlDays(store, 'metric_samples', 'ts', days, { logger, rewriteExistingParts: false });
}
