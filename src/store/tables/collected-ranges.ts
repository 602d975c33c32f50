// What each collection of a time-series source read (sql/030): the evidence coverage rests on (src/insights/coverage.ts).
import { z } from 'zod';
import { chNumber, defineTable, namedQuery } from './table.js';

export const COLLECTED_SOURCES = ['runner_history', 'analytics'] as const;
export type CollectedSource = (typeof COLLECTED_SOURCES)[number];

export const CollectedRangeRow = z.object({
  source: z.enum(COLLECTED_SOURCES),
  zone: z.string(),
  range_start: z.string(), // DateTime64(3) UTC text
  range_end: z.string(),
  collected_at: z.string(),
});
export type CollectedRangeRow = z.input<typeof CollectedRangeRow>;

export const collectedRanges = defineTable('collected_ranges', CollectedRangeRow);

const Span = z.object({ from_ms: chNumber, to_ms: chNumber, collected_ms: chNumber }).transform((r) => ({ fromMs: r.from_ms, toMs: r.to_ms, collectedAtMs: r.collected_ms }));

/** Every collection of a source in a zone that overlaps [from, to) (epoch milliseconds). */
export const collectedSpans = namedQuery(
  'collected_ranges_overlapping',
  `SELECT toUnixTimestamp64Milli(range_start) AS from_ms, toUnixTimestamp64Milli(range_end) AS to_ms, toUnixTimestamp64Milli(collected_at) AS collected_ms
   FROM collected_ranges
   WHERE source = {source:String} AND zone = {zone:String}
     AND range_start < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC') AND range_end > fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
   ORDER BY range_start, collected_at`,
  Span,
);
