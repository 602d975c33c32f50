import { z } from 'zod';
import { defineJob, type JobContext } from '../src/collectors/job.js';
import type { TimeRange } from '../src/collectors/time-args.js';
import { commitRows, tableWrite, collectorRejects } from '../src/collectors/common.js';
import { listApps, type AppRef } from '../src/collectors/endpoints.js';
import { PAGE_LIMIT, readEventsOfApps, type AppEventsResult } from '../src/collectors/events.js';
import { appEvents } from '../src/store/tables/app-events.js';
import { runResumable } from '../src/jobs/resumable.js';
import { chunk } from '../src/platform/index.js';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
/** A first run reads the platform's default window, the last 24 hours. */
const FIRST_RUN_HOURS = 24;
/** `end` is sent a little after our clock, so a platform clock slightly ahead of ours loses nothing. */
const END_MARGIN_MS = 5 * MINUTE_MS;
const DEFAULT_OVERLAP_MINUTES = 10;
const WATERMARKS_KEY = 'watermarks';
/** Apps read per backfill chunk (one checkpoint each). */
const BACKFILL_BATCH = 10;

/**
 * Operational events per app (deployments, configuration changes, runner lifecycle), newest first. Each app
 * has a watermark: the newest `created_at` stored. A scheduled run asks for [watermark - overlap, now] and
 * stops paging at the first older event; events already stored are skipped by id, so three runs store each
 * event once. --from/--to reads that window for every app (again skipping what is stored).
 */
export const eventsJob = defineJob({
  name: 'events',
  description: 'operational events per app (deployments, config changes, runner lifecycle), runner states normalised',
  defaultCron: '*/5 * * * *',
  scope: 'api',
  sharded: true,
  label: 'the events collector',
  range: 'times',
  options: z.object({
    'page-limit': z.coerce
      .number()
      .int()
      .min(1)
      .max(PAGE_LIMIT)
      .default(PAGE_LIMIT)
      .describe(`events per page, 1-${PAGE_LIMIT} (default ${PAGE_LIMIT})`),
    'overlap-minutes': z.coerce
      .number()
      .min(0)
      .default(DEFAULT_OVERLAP_MINUTES)
      .describe(`minutes before the watermark read again, for events the platform records late (default ${DEFAULT_OVERLAP_MINUTES})`),
  }),
  async run(ctx, options) {
    const apps = await listApps(ctx);
    if (ctx.range) await backfill(ctx, ctx.range, apps, options['page-limit']);
    else await scheduled(ctx, apps, options['overlap-minutes'] * MINUTE_MS, options['page-limit']);
  },
});

type Watermarks = Record<string, string>;

async function readWatermarks(ctx: JobContext): Promise<Watermarks> {
  const saved = await ctx.checkpoints.get('events', WATERMARKS_KEY);
  if (!saved) return {};
  try {
    const parsed = JSON.parse(saved) as unknown;
    return parsed && typeof parsed === 'object' ? (parsed as Watermarks) : {};
  } catch {
    ctx.log.warn('the events watermarks checkpoint is not JSON; reading the last 24 hours of every app');
    return {};
  }
}

async function scheduled(ctx: JobContext, apps: AppRef[], overlapMs: number, pageLimit: number): Promise<void> {
  const nowMs = ctx.now().getTime();
  const watermarks = await readWatermarks(ctx);
  const rejects = collectorRejects('events');
  const results = await readEventsOfApps(
    ctx,
    apps,
    (app) => {
      const mark = watermarks[app.endpoint_id] ? Date.parse(watermarks[app.endpoint_id]) : NaN;
      return { startMs: Number.isNaN(mark) ? nowMs - FIRST_RUN_HOURS * HOUR_MS : mark - overlapMs, endMs: nowMs + END_MARGIN_MS };
    },
    rejects,
    pageLimit,
  );
  await commit(ctx, results, rejects);
  // Only after the events are committed do the watermarks move. Only this run's apps are kept, so apps no longer
  // listed do not stay in the map for good.
  const inRun = new Set(apps.map((a) => a.endpoint_id));
  const next: Watermarks = Object.fromEntries(Object.entries(watermarks).filter(([id]) => inRun.has(id)));
  for (const r of results) {
    if (r.error || r.newestMs === null) continue;
    const before = next[r.app.endpoint_id] ? Date.parse(next[r.app.endpoint_id]) : -Infinity;
    if (r.newestMs > before) next[r.app.endpoint_id] = new Date(r.newestMs).toISOString();
  }
  await ctx.checkpoints.save('events', WATERMARKS_KEY, JSON.stringify(next));
}

async function commit(ctx: JobContext, results: AppEventsResult[], rejects: ReturnType<typeof collectorRejects>): Promise<number> {
  const refused = results.filter((r) => r.error);
  if (refused.length > 0) {
    const ids = refused.map((r) => r.app.endpoint_id).sort();
    ctx.log.warn({ apps: ids }, `events skipped ${ids.length} app(s) the platform refused (403/404): ${ids.join(', ')}`);
  }
  const rows = results.flatMap((r) => r.rows);
  await commitRows(ctx, [tableWrite(appEvents, rows)], rejects, { apps: results.length });
  return rows.length;
}

async function backfill(ctx: JobContext, range: TimeRange, apps: AppRef[], pageLimit: number): Promise<void> {
  const { fromMs: from, toMs: to } = range.instants(ctx.timezone ?? 'UTC');
  // Apps in a fixed order, a batch at a time; the checkpoint is the number of apps done.
  const ordered = [...apps].sort((a, b) => (a.endpoint_id < b.endpoint_id ? -1 : a.endpoint_id > b.endpoint_id ? 1 : 0));
  await runResumable(ctx, {
    job: 'events',
    key: `backfill:${range.from}:${range.to}`,
    chunks: chunk(ordered, BACKFILL_BATCH).map((batch, i) => ({ appsBefore: i * BACKFILL_BATCH, batch })),
    label: `events ${range.from}..${range.to} (batches of ${BACKFILL_BATCH} apps)`,
    position: (c) => String(c.appsBefore),
    work: async (c) => {
      const rejects = collectorRejects('events');
      const results = await readEventsOfApps(ctx, c.batch, () => ({ startMs: from, endMs: to }), rejects, pageLimit);
      return `${await commit(ctx, results, rejects)} events`;
    },
  });
}
