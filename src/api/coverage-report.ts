// Coverage of the sources an answer reads, from the collection records (cost_day_collections for usage and model
// usage, collected_ranges for runner history and analytics), handed to the one implementation in
// src/insights/coverage.ts. Every route, report and job that computes from a source calls this.
import { DateTime } from 'luxon';
import type { Store } from '../store/client.js';
import { collectedDays } from '../store/tables/cost-day-collections.js';
import { collectedSpans } from '../store/tables/collected-ranges.js';
import { combineCoverage, daySpans, sourceCoverage, type Coverage, type CoverageSource, type SourceCoverage } from '../insights/coverage.js';

export interface CoverageQuery {
  sources: readonly CoverageSource[];
  zone: string;
  /** Local days of `zone`, `to` exclusive. */
  from: string;
  to: string;
  now: Date;
  /** What each source's absence does to the figures, in words (e.g. runner history: "its cost is unattributed"). */
  consequence?: Partial<Record<CoverageSource, string>>;
}

/** One source's coverage of [from, to) in a zone. */
export async function loadSourceCoverage(store: Pick<Store, 'client'>, source: CoverageSource, q: Omit<CoverageQuery, 'sources' | 'consequence'>): Promise<SourceCoverage> {
  const fromMs = DateTime.fromISO(q.from, { zone: q.zone }).toMillis();
  const toMs = DateTime.fromISO(q.to, { zone: q.zone }).toMillis();
  const spans =
    source === 'usage' || source === 'model_usage'
      ? daySpans(
          (await collectedDays(store, { product: source === 'usage' ? 'serverless' : 'model_api', zone: q.zone, from: q.from, to: q.to })).map((d) => ({ day: d.local_day, collectedAtMs: d.collected_ms })),
          q.zone,
        )
      : await collectedSpans(store, { source, zone: q.zone, fromMs, toMs });
  return sourceCoverage({ source, zone: q.zone, fromMs, toMs, nowMs: q.now.getTime(), spans });
}

/** The coverage of every source the answer reads. */
export async function loadCoverage(store: Pick<Store, 'client'>, q: CoverageQuery): Promise<Coverage> {
  const parts = await Promise.all(q.sources.map((s) => loadSourceCoverage(store, s, q)));
  return combineCoverage(parts, q.consequence);
}
