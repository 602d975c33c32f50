// Which platform filled the store (sql/032, issue 44.1): read and recorded by src/jobs/store-platform.ts.
import { z } from 'zod';
import { chNumber, defineTable, namedQuery } from './table.js';

export const StorePlatformRow = z.object({
  recorded_at: z.string(), // DateTime64(3) UTC text
  kind: z.enum(['platform', 'simulator']),
  base_url: z.string(),
  key_fingerprint: z.string(),
  recorded_by: z.string(),
});
export type StorePlatformRow = z.input<typeof StorePlatformRow>;

export const storePlatform = defineTable('store_platform', StorePlatformRow);

/** The store's platform: the latest record (a deliberate move records a new one); none before the first collection. */
export const latestStorePlatform = namedQuery(
  'latest_store_platform',
  `SELECT s.kind AS kind, s.base_url AS base_url, s.key_fingerprint AS key_fingerprint
   FROM store_platform AS s ORDER BY s.recorded_at DESC LIMIT 1`,
  z.object({ kind: z.enum(['platform', 'simulator']), base_url: z.string(), key_fingerprint: z.string() }),
);

/**
 * Whether the store already holds collected or pushed data: a store filled before sql/032 has no record, and demo
 * mode must not start implicitly on it (its rows may be a real platform's).
 */
export const collectedRowCount = namedQuery(
  'collected_row_count',
  `SELECT (SELECT count() FROM usage_buckets) + (SELECT count() FROM apps) + (SELECT count() FROM requests)
     + (SELECT count() FROM logs) + (SELECT count() FROM model_usage_buckets) AS n`,
  z.object({ n: chNumber }),
);
