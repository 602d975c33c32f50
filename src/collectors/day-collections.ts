// What a collection read of each local day of its range: one cost_day_collections row per day (sql/026), the
// evidence a day's cost is final (src/insights/finality.ts). Written by the usage and models collectors, with their rows.
import { DateTime } from 'luxon';
import { costDayCollections, dayFingerprint, type CostDayCollectionRow } from '../store/tables/cost-day-collections.js';
import { addDecimals, toDateTime64 } from '../values.js';
import { tableWrite } from './common.js';

/** A row as read: its local day, its cost_total and one text line of its identity and values. */
export interface DayRead {
  day: string;
  costTotal: string;
  line: string;
}

export function dayCollectionWrite(
  product: CostDayCollectionRow['product'],
  range: { timezone: string; from: string; to: string },
  rows: DayRead[],
  now: Date,
) {
  const byDay = new Map<string, DayRead[]>();
  for (const r of rows) byDay.set(r.day, [...(byDay.get(r.day) ?? []), r]);
  const out: CostDayCollectionRow[] = [];
  const collectedAt = toDateTime64(now);
  for (let d = DateTime.fromISO(range.from, { zone: 'UTC' }); d.toISODate()! < range.to; d = d.plus({ days: 1 })) {
    const day = d.toISODate()!;
    const read = byDay.get(day) ?? [];
    out.push({
      product,
      timezone: range.timezone,
      day,
      collected_at: collectedAt,
      row_count: read.length,
      cost_total: addDecimals(read.map((r) => r.costTotal)),
      fingerprint: dayFingerprint(read.map((r) => r.line)),
    });
  }
  return tableWrite(costDayCollections, out);
}
