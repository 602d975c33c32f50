// Final or provisional (issue 32.4): whether a day's cost can still change. One pure module (no I/O): the /cost
// route, the finance report and the FOCUS export call it with the collections the store holds (sql/026).
//
// A local day is final once the late-billing window after its end has passed (LATE_BILLING_WINDOW_HOURS: the
// platform may bill late work into a day until then) and a collection made after the window read the day exactly
// as the collection before it had (same rows, quantities and totals: the same fingerprint), so nothing arrived
// late. Until then it is provisional, with the reason.
import { DateTime } from 'luxon';

export interface DayCollection {
  day: string;
  /** DateTime64(3) UTC text or ISO 8601: when the collection read the day (the platform's clock). */
  collected_at: string;
  fingerprint: string;
}

export type FinalityReason = 'agreed' | 'late_billing_window' | 'awaiting_recollection';

export interface DayFinality {
  day: string;
  final: boolean;
  reason: FinalityReason;
  /** When the late-billing window of the day ends (ISO 8601 UTC). */
  window_ends_at: string;
}

function utcMs(text: string): number {
  return Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(text) ? text.replace(' ', 'T') : `${text.replace(' ', 'T')}Z`);
}

/** The finality of each local day of [from, to) in `timezone`, from its collections (any order). */
export function daysFinality(q: {
  from: string;
  to: string;
  timezone: string;
  collections: DayCollection[];
  now: Date;
  windowHours: number;
}): DayFinality[] {
  const byDay = new Map<string, DayCollection[]>();
  for (const c of q.collections) byDay.set(c.day, [...(byDay.get(c.day) ?? []), c]);
  const out: DayFinality[] = [];
  const nowMs = q.now.getTime();
  for (let d = DateTime.fromISO(q.from, { zone: q.timezone }); d.toISODate()! < q.to; d = d.plus({ days: 1 })) {
    const day = d.toISODate()!;
    const windowEndMs = d.plus({ days: 1 }).toMillis() + q.windowHours * 3_600_000;
    const list = (byDay.get(day) ?? []).map((c) => ({ ...c, ms: utcMs(c.collected_at) })).sort((a, b) => a.ms - b.ms);
    // A collection stamped after the window (the platform's clock) is itself proof the window has passed, so the
    // caller's clock only words the reason of a provisional day.
    const agreed = list.some((c, i) => i > 0 && c.ms >= windowEndMs && c.fingerprint === list[i - 1].fingerprint);
    const reason: FinalityReason = agreed ? 'agreed' : nowMs < windowEndMs ? 'late_billing_window' : 'awaiting_recollection';
    out.push({ day, final: reason === 'agreed', reason, window_ends_at: new Date(windowEndMs).toISOString() });
  }
  return out;
}

/** A figure over several days is final when every one of them is. */
export function allFinal(days: DayFinality[]): boolean {
  return days.length > 0 && days.every((d) => d.final);
}

export interface Finality {
  /** Every day of the range is final. */
  final: boolean;
  /** The days that can still change. */
  provisional_days: string[];
  days: DayFinality[];
}

export function summarizeFinality(days: DayFinality[]): Finality {
  return { final: allFinal(days), provisional_days: days.filter((d) => !d.final).map((d) => d.day), days };
}
