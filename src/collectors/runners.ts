import { DateTime, type DurationLikeObject } from 'luxon';
import { z } from 'zod';
import type { JobContext } from './job.js';
import { appPath, isPlatformError, RunnersHistoryPoint, type PlatformError } from '../platform/index.js';
import { runnerHistory, type RunnerHistoryRow } from '../store/tables/runner-history.js';
import { nextVersionMs, toDateTime64 } from '../values.js';
import { bucketChunks, type Timeframe } from './time.js';
import { collectedRangeWrite } from './collected-range.js';
import { collectorRejects, commitRows, tableWrite, describeZodIssue, mapLimit } from './common.js';
import { type AppRef } from './endpoints.js';

export type RunnerAggregation = 'max' | 'avg';
export type RunnerTimeframe = Timeframe;

// Loose envelope: each point is validated on its own.
const HistoryResponse = z.looseObject({
  endpoint_id: z.string().nullish(),
  timeframe: z.string().nullish(),
  aggregation: z.string().nullish(),
  history: z.array(z.unknown()),
});

/** Apps read at once (one call per app and aggregation). */
const CONCURRENCY = 4;

export interface RunnerHistoryRange {
  timezone: string;
  timeframe: RunnerTimeframe;
  aggregations: readonly RunnerAggregation[];
  startMs: number;
  endMs: number;
}

export interface RunnerHistoryResult {
  rows: number;
  rejected: number;
  /** Apps the platform refused (403/404: deleted or no longer owned since the listing), with the error. */
  refused: Map<string, PlatformError>;
}

/**
 * Runner counts by state (running, idle, pending, draining) per app and bucket, one call per app and
 * aggregation (the platform does not page this list). Resolves once every row is committed.
 */
export async function collectRunnerHistory(ctx: JobContext, apps: readonly AppRef[], range: RunnerHistoryRange): Promise<RunnerHistoryResult> {
  const startedAt = ctx.now();
  const version = nextVersionMs();
  const collectedAt = toDateTime64(Date.now());
  const rejects = collectorRejects('runners');
  const refused = new Map<string, PlatformError>();
  const calls = apps.flatMap((app) => range.aggregations.map((aggregation) => ({ app, aggregation })));
  const perCall = await mapLimit(calls, CONCURRENCY, async ({ app, aggregation }): Promise<RunnerHistoryRow[]> => {
    let response: z.infer<typeof HistoryResponse>;
    try {
      response = await ctx.platform.getJson(appPath(app.owner, app.name, 'runners/history'), {
        query: {
          start: new Date(range.startMs).toISOString(),
          end: new Date(range.endMs).toISOString(),
          timeframe: range.timeframe,
          aggregation,
          timezone: range.timezone,
        },
        schema: HistoryResponse,
        ctx: ctx.call,
      });
    } catch (err) {
      if (isPlatformError(err) && (err.status === 403 || err.status === 404)) {
        refused.set(app.endpoint_id, err);
        return [];
      }
      throw err;
    }
    const rows: RunnerHistoryRow[] = [];
    for (const raw of response.history) {
      const parsed = RunnersHistoryPoint.safeParse(raw);
      if (!parsed.success) {
        rejects.add(raw, describeZodIssue(parsed.error));
        continue;
      }
      const ts = DateTime.fromISO(parsed.data.timestamp, { setZone: true });
      if (!ts.isValid) {
        rejects.add(raw, `timestamp: not an ISO 8601 timestamp (${ts.invalidExplanation ?? ts.invalidReason})`);
        continue;
      }
      rows.push({
        owner: app.owner,
        name: app.name,
        endpoint_id: app.endpoint_id,
        timezone: range.timezone,
        timeframe: range.timeframe,
        // What the platform says it aggregated by, else what was asked.
        aggregation: response.aggregation ?? aggregation,
        timestamp: toDateTime64(ts.toJSDate()),
        timestamp_offset_minutes: ts.offset,
        running: parsed.data.running ?? null,
        idle: parsed.data.idle ?? null,
        pending: parsed.data.pending ?? null,
        draining: parsed.data.draining ?? null,
        raw: JSON.stringify(raw),
        version,
        collected_at: collectedAt,
      });
    }
    return rows;
  });
  const rows = perCall.flat();
  const rejected = rejects.rows.length;
  // The range is recorded with its rows (sql/030): an hour with no runner is collected, not missing.
  const stored = await commitRows(ctx, [tableWrite(runnerHistory, rows)], rejects, { timezone: range.timezone });
  // The range vouches for its rows: recorded after they are stored, and only when no app was left out or refused by
  // the store, as of when the reads began (coverage must never say complete for what was not read).
  if (stored.refused === 0 && refused.size === 0) await commitRows(ctx, [collectedRangeWrite('runner_history', range, startedAt)], rejects);
  return { rows: rows.length, rejected, refused };
}

/** Calls cover at most this much (the platform answers at most 10,000 buckets and does not page). */
const CHUNK: Record<RunnerTimeframe, DurationLikeObject> = {
  minute: { days: 1 },
  hour: { days: 30 },
  day: { months: 12 },
};

export function nextBucket(startMs: number, timeframe: RunnerTimeframe, timezone: string): number {
  return DateTime.fromMillis(startMs, { zone: timezone }).plus({ [`${timeframe}s`]: 1 }).startOf(timeframe).toMillis();
}

/** Splits [startMs, endMs) into calls that begin on bucket boundaries. */
export function historyChunks(startMs: number, endMs: number, timeframe: RunnerTimeframe, timezone: string): Array<{ startMs: number; endMs: number }> {
  return bucketChunks(startMs, endMs, timeframe, timezone, CHUNK[timeframe]);
}
