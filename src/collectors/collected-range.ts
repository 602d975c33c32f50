// The record of what a chunk of a time-series source asked for (sql/030), committed with the chunk's rows: the
// evidence coverage rests on (src/insights/coverage.ts). Written by the runner-history and analytics collectors.
import { collectedRanges, type CollectedSource } from '../store/tables/collected-ranges.js';
import { toDateTime64 } from '../values.js';
import { tableWrite } from './common.js';

export function collectedRangeWrite(source: CollectedSource, range: { timezone: string; startMs: number; endMs: number }, now: Date) {
  return tableWrite(collectedRanges, [
    { source, zone: range.timezone, range_start: toDateTime64(range.startMs), range_end: toDateTime64(range.endMs), collected_at: toDateTime64(now) },
  ]);
}
