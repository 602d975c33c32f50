// What an answer rests on (issue 45.1, CONTRIBUTING.md rule 23): per source and zone, which parts of the range asked
// about were collected. One pure module (collections in, coverage out, no I/O, no clock: the caller passes `now`);
// every route, report and job that computes from a source calls it through src/api/coverage-report.ts.
//
// A collection covers [from, min(to, collected_at)): what came after the moment it read was not there to read (a day
// collected at 06:00 is partial until a later collection read it whole). The range asked about ends at `now` at the
// latest: the future is not "missing". What no collection covers is missing; a range is `complete` when nothing is.
import { DateTime } from 'luxon';

export const COVERAGE_SOURCES = {
  usage: 'serverless usage',
  model_usage: 'model API usage',
  runner_history: 'runner history',
  analytics: 'request analytics',
} as const;
export type CoverageSource = keyof typeof COVERAGE_SOURCES;

/** One collection: what it asked for, and when it read. Epoch milliseconds. */
export interface CollectedSpan {
  fromMs: number;
  toMs: number;
  collectedAtMs: number;
}

export interface MissingRange {
  source: CoverageSource;
  zone: string;
  /** Local date (YYYY-MM-DD) when the bound is a local midnight of the zone, else an ISO instant with its offset. */
  from: string;
  to: string;
}

export type SourceStatus = 'complete' | 'partial' | 'not_collected';

export interface SourceCoverage {
  source: CoverageSource;
  zone: string;
  status: SourceStatus;
  /** The end of the last collected instant of the range (null when nothing of it was collected). */
  collected_through: string | null;
  missing: MissingRange[];
}

export type Coverage =
  | { status: 'complete' }
  | { status: 'partial' | 'not_collected'; sources: SourceCoverage[]; missing: MissingRange[]; warning: string };

/** Local text of an instant: a date at a local midnight, else ISO with the zone's offset (seconds). */
export function boundText(ms: number, zone: string): string {
  const t = DateTime.fromMillis(ms, { zone });
  return t.equals(t.startOf('day')) ? t.toISODate()! : t.toISO({ suppressMilliseconds: true })!;
}

/** The parts of [fromMs, toMs) no span covers, merged, in order. */
export function uncovered(fromMs: number, toMs: number, spans: readonly CollectedSpan[]): Array<[number, number]> {
  const covered = spans
    .map((s) => [Math.max(s.fromMs, fromMs), Math.min(s.toMs, s.collectedAtMs, toMs)] as [number, number])
    .filter(([a, b]) => b > a)
    .sort((x, y) => x[0] - y[0]);
  const gaps: Array<[number, number]> = [];
  let at = fromMs;
  for (const [a, b] of covered) {
    if (a > at) gaps.push([at, a]);
    at = Math.max(at, b);
  }
  if (at < toMs) gaps.push([at, toMs]);
  return gaps;
}

/** One source in one zone over [fromMs, toMs), the part after `nowMs` left out. */
export function sourceCoverage(q: { source: CoverageSource; zone: string; fromMs: number; toMs: number; nowMs: number; spans: readonly CollectedSpan[] }): SourceCoverage {
  const end = Math.min(q.toMs, q.nowMs);
  const gaps = end > q.fromMs ? uncovered(q.fromMs, end, q.spans) : [];
  const missing = gaps.map(([a, b]) => ({ source: q.source, zone: q.zone, from: boundText(a, q.zone), to: boundText(b, q.zone) }));
  const whole = gaps.length === 1 && gaps[0][0] === q.fromMs && gaps[0][1] === end;
  const status: SourceStatus = gaps.length === 0 ? 'complete' : whole ? 'not_collected' : 'partial';
  let through: number | null = null;
  for (const s of q.spans) {
    const b = Math.min(s.toMs, s.collectedAtMs, end);
    if (b > Math.max(s.fromMs, q.fromMs) && (through === null || b > through)) through = b;
  }
  return { source: q.source, zone: q.zone, status, collected_through: through === null ? null : boundText(through, q.zone), missing };
}

/** The days of a day-granular source (usage) as spans: local day d read at t covers [d, d+1) up to t. */
export function daySpans(days: ReadonlyArray<{ day: string; collectedAtMs: number }>, zone: string): CollectedSpan[] {
  return days.map((d) => {
    const start = DateTime.fromISO(d.day, { zone });
    return { fromMs: start.toMillis(), toMs: start.plus({ days: 1 }).toMillis(), collectedAtMs: d.collectedAtMs };
  });
}

function rangeList(missing: readonly MissingRange[], max = 3): string {
  const shown = missing.slice(0, max).map((m) => `${m.from} to ${m.to}`);
  return shown.join(', ') + (missing.length > max ? ` and ${missing.length - max} more` : '');
}

/**
 * Several sources' coverage as one answer: complete when each is; else every missing range and one plain sentence
 * per source that is not complete, with what its absence means for the figures (`consequence`, per source).
 */
export function combineCoverage(parts: readonly SourceCoverage[], consequence: Partial<Record<CoverageSource, string>> = {}): Coverage {
  const incomplete = parts.filter((p) => p.status !== 'complete');
  if (incomplete.length === 0) return { status: 'complete' };
  const status = parts.every((p) => p.status === 'not_collected') ? 'not_collected' : 'partial';
  const sentences = incomplete.map((p) => {
    const what = `${COVERAGE_SOURCES[p.source]} (${p.zone})`;
    const head = p.status === 'not_collected' ? `${what} was not collected for this range` : `${what} was not collected for ${rangeList(p.missing)}`;
    const through = p.status === 'partial' && p.collected_through ? ` (collected through ${p.collected_through})` : '';
    const tail = consequence[p.source] ? `: ${consequence[p.source]}` : '';
    return `${head}${through}${tail}.`;
  });
  return { status, sources: parts.map((p) => ({ ...p, missing: [...p.missing] })), missing: incomplete.flatMap((p) => p.missing), warning: sentences.join(' ') };
}

/** The CSV header's value (`X-Tallyhouse-Coverage`): `complete`, or the status and the warning on one line. */
export function coverageHeader(c: Coverage): string {
  // Header values are one line of visible ASCII: the warning's text is ASCII already; line breaks cannot occur.
  return c.status === 'complete' ? 'complete' : `${c.status}; ${c.warning}`.replace(/[^\x20-\x7e]/g, '?');
}

/**
 * Coverages of several periods of one answer (a change's baseline and current period) as one: each warning prefixed
 * with its period's label, and `note` (what the answer did about it) after them.
 */
export function periodsCoverage(parts: ReadonlyArray<{ label: string; coverage: Coverage }>, note = ''): Coverage {
  const incomplete = parts.filter((p) => p.coverage.status !== 'complete');
  if (incomplete.length === 0) return { status: 'complete' };
  const sources: SourceCoverage[] = [];
  const missing: MissingRange[] = [];
  const sentences: string[] = [];
  for (const p of incomplete) {
    if (p.coverage.status === 'complete') continue;
    sources.push(...p.coverage.sources);
    missing.push(...p.coverage.missing);
    sentences.push(`${p.label}: ${p.coverage.warning}`);
  }
  const status = incomplete.length === parts.length && incomplete.every((p) => p.coverage.status === 'not_collected') ? 'not_collected' : 'partial';
  return { status, sources, missing, warning: [...sentences, ...(note ? [note] : [])].join(' ') };
}
