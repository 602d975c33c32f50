// Coverage of the sources an answer reads, from the collection records (cost_day_collections for usage and model
// usage, collected_ranges for runner history and analytics), handed to the one implementation in
// src/insights/coverage.ts. Every route, report and job that computes from a source calls this.
import { DateTime } from 'luxon';
import { z } from 'zod';
import type { Store } from '../store/client.js';
import { collectedDays } from '../store/tables/cost-day-collections.js';
import { collectedSpans } from '../store/tables/collected-ranges.js';
import { combineCoverage, COVERAGE_SOURCES, daySpans, sourceCoverage, type Coverage, type CoverageSource, type SourceCoverage } from '../insights/coverage.js';

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
  // A day-granular source's today is not over: the rest of it is still to be collected, so today is partial, and a
  // group absent from it is not known to be gone.
  const nowMs = source === 'usage' || source === 'model_usage' ? DateTime.fromJSDate(q.now, { zone: q.zone }).startOf('day').plus({ days: 1 }).toMillis() : q.now.getTime();
  return sourceCoverage({ source, zone: q.zone, fromMs, toMs, nowMs, spans });
}

/** The coverage of every source the answer reads. */
export async function loadCoverage(store: Pick<Store, 'client'>, q: CoverageQuery): Promise<Coverage> {
  const parts = await Promise.all(q.sources.map((s) => loadSourceCoverage(store, s, q)));
  return combineCoverage(parts, q.consequence);
}

const COVERAGE_SOURCE_NAMES = Object.keys(COVERAGE_SOURCES) as [CoverageSource, ...CoverageSource[]];
const MissingSchema = z.object({ source: z.enum(COVERAGE_SOURCE_NAMES), zone: z.string(), from: z.string(), to: z.string().describe('exclusive; a date is a local midnight of zone') });

/** The `coverage` object of every answer that reads a source (the OpenAPI schema). */
export const CoverageResponse = z
  .union([
    z.object({ status: z.literal('complete') }),
    z.object({
      status: z.enum(['partial', 'not_collected']),
      sources: z.array(
        z.object({
          source: z.enum(COVERAGE_SOURCE_NAMES),
          zone: z.string(),
          status: z.enum(['complete', 'partial', 'not_collected']),
          collected_through: z.string().nullable(),
          missing: z.array(MissingSchema),
        }),
      ),
      missing: z.array(MissingSchema),
      warning: z.string().describe('one plain sentence per incomplete source, with what its absence does to the figures'),
    }),
  ])
  .describe('what the figures rest on: complete, or the ranges of each source no collection read (the CSV form carries it in the X-Tallyhouse-Coverage header)');
