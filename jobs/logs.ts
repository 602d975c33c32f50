import { z } from 'zod';
import { isDemoMode } from '../src/config.js';
import { defineJob, type JobContext } from '../src/collectors/job.js';
import type { TimeRange } from '../src/collectors/time-args.js';
import { listApps, type AppRef } from '../src/collectors/endpoints.js';
import { fillFromHistory, HISTORY_PAGE_LIMIT, type LogWindow } from '../src/collectors/logs.js';
import { whenServed } from '../src/collectors/optional-endpoint.js';
import { platformPaths } from '../src/platform/index.js';
import { drainSeconds, dropCopiesOfDrainLines } from '../src/store/tables/logs.js';
import { toDateTime64 } from '../src/values.js';
import { runResumable } from '../src/jobs/resumable.js';

const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;
/** A first scheduled run looks back this far. */
const FIRST_RUN_HOURS = 24;
/** Gap windows closer than this are paged as one. */
const MERGE_GAP_MS = 10 * MINUTE_MS;
const CHECKPOINT_KEY = 'filled_until';

/**
 * Fills the log lines the drain did not deliver from logs history (platform notes, "Logs and log drains"). With a
 * drain configured (LOG_DRAIN_SECRET or LOG_DRAIN_TOKEN, or demo mode), a scheduled run looks at [checkpoint, now - settle) for spells longer than
 * --gap-seconds in which the drain delivered no line of any app (a disabled drain, an outage of ours, a partition),
 * and pages history for those spells, widened to the whole seconds at their edges; without a drain, it pages the
 * whole span. Records already stored are skipped, so a record comes once whichever way it came. --from/--to pages
 * everything in the range (resumable, a day at a time).
 */
export const logsJob = defineJob({
  name: 'logs',
  description: 'log lines the drain missed (or all of them, without a drain), from logs history',
  defaultCron: '*/5 * * * *',
  scope: 'api',
  sharded: true,
  label: 'the logs collector',
  range: 'times',
  options: z.object({
    'gap-seconds': z.coerce
      .number()
      .int()
      .min(1)
      .default(60)
      .describe('a spell of at least this many seconds without a drain line (any app) is filled from history (default 60)'),
    'settle-minutes': z.coerce
      .number()
      .min(0)
      .default(5)
      .describe('the newest minutes left to the drain, which delivers on a schedule (default 5)'),
    'page-limit': z.coerce
      .number()
      .int()
      .min(1)
      .max(HISTORY_PAGE_LIMIT)
      .default(HISTORY_PAGE_LIMIT)
      .describe(`records per history page, 1-${HISTORY_PAGE_LIMIT} (default ${HISTORY_PAGE_LIMIT})`),
  }),
  async run(ctx, options) {
    const apps = await listApps(ctx);
    if (ctx.range) return backfill(ctx, ctx.range, apps, options['page-limit']);
    const toMs = ctx.now().getTime() - options['settle-minutes'] * MINUTE_MS;
    const saved = await ctx.checkpoints.get('logs', CHECKPOINT_KEY);
    const savedMs = saved ? Date.parse(saved) : NaN;
    const fromMs = Number.isFinite(savedMs) ? savedMs : toMs - FIRST_RUN_HOURS * HOUR_MS;
    if (toMs <= fromMs) return;
    const config = ctx.runtime.config;
    // Demo mode wires the simulator's drain to the service with a generated secret.
    const drain = Boolean(config.LOG_DRAIN_SECRET || config.LOG_DRAIN_TOKEN) || isDemoMode(config);
    // Lines this instance's drain took but has not stored yet (a store outage) are not gaps: filling them from
    // history now would store them twice once the spool replays. Wait for the spool to empty.
    const spooled = drain ? await spoolDrained(ctx) : 0;
    if (spooled > 0) {
      ctx.log.info({ spooled }, `logs: the store has not taken ${spooled} drain line(s) yet (they wait in the spool); gaps are filled once it has`);
      return;
    }
    const windows = drain ? await drainGaps(ctx, fromMs, toMs, options['gap-seconds'] * SECOND_MS) : [{ fromMs, toMs }];
    if (windows.length > 0) {
      // Logs history is only in the platform notes (rule 3): where it is not served, the gaps stay unfilled, noted.
      const served = await whenServed(ctx, platformPaths.logsHistory, () => fillFromHistory(ctx, apps, windows, options['page-limit']));
      if (!served.served) {
        await ctx.checkpoints.save('logs', CHECKPOINT_KEY, new Date(toMs).toISOString());
        return;
      }
      const result = served.value;
      const spans = windows.map((w) => `${new Date(w.fromMs).toISOString()}..${new Date(w.toMs).toISOString()}`);
      const level = result.stored > 0 ? 'info' : 'debug';
      ctx.log[level](
        { windows: spans, received: result.received, stored: result.stored, rejected: result.rejected },
        drain
          ? `logs: the drain delivered nothing in ${windows.length} spell(s); history filled ${result.stored} line(s)`
          : `logs: no drain configured; history stored ${result.stored} line(s)`,
      );
    }
    // A record the drain and history both brought keeps the drain's copy: the later writer removes the other. A fill
    // killed between its insert and that removal left copies where no gap is left now: every run removes them over
    // its whole span (the checkpoint moves only after, so a killed run's span is this run's too).
    // A store that refuses the delete (no ALTER DELETE grant) keeps the copies and the job goes on; one that is down
    // or slow fails the run, which the next tick repeats over the same span.
    if (drain) {
      const span = { from: toDateTime64(fromMs), to: toDateTime64(toMs), apps: apps.map((a) => a.name) };
      const { refused } = await dropCopiesOfDrainLines(ctx.runtime.store, span);
      if (refused) ctx.log.warn({ from: span.from, to: span.to, error: refused }, 'logs: the store refused to delete history copies of records the drain stored; they stay stored twice');
    }
    await ctx.checkpoints.save('logs', CHECKPOINT_KEY, new Date(toMs).toISOString());
  },
});

/** Lines in this process's drain spool not yet in the store: its tallyhouse_drain_spool_lines gauge (0 without a drain). */
/**
 * The spool briefly holds every batch the drain takes (acknowledged, then replayed to the store within a flush
 * interval): a run that found a batch in flight skipped its gap fill and said so, every time in the demo, which
 * read like a stuck spool. Waits up to SPOOL_SETTLE_MS for it to empty; returns what is still held then.
 */
export async function spoolDrained(ctx: Pick<JobContext, 'runtime'>, settleMs = SPOOL_SETTLE_MS): Promise<number> {
  const deadline = Date.now() + settleMs;
  for (;;) {
    const held = await spooledDrainLines(ctx);
    if (held === 0 || Date.now() >= deadline) return held;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const SPOOL_SETTLE_MS = 5_000;

async function spooledDrainLines(ctx: Pick<JobContext, 'runtime'>): Promise<number> {
  const gauge = ctx.runtime.registry.getSingleMetric('tallyhouse_drain_spool_lines');
  if (!gauge) return 0;
  const { values } = await gauge.get();
  return values.reduce((n, v) => n + v.value, 0);
}

/**
 * Spells in [fromMs, toMs) longer than `gapMs` without a drain line, each widened to the whole seconds of the
 * lines around it (a second the drain delivered part of is read again; what is stored is skipped), and merged
 * when close.
 */
async function drainGaps(ctx: JobContext, fromMs: number, toMs: number, gapMs: number): Promise<LogWindow[]> {
  const seconds = await drainSeconds(ctx.runtime.store, { from: toDateTime64(fromMs), to: toDateTime64(toMs) });
  const windows: LogWindow[] = [];
  let covered = fromMs; // end of the last second with a drain line (or the span's start)
  let windowStart = fromMs; // start of that second
  const close = (nextMs: number, nextEnd: number): void => {
    if (nextMs - covered < gapMs) return;
    const w = { fromMs: windowStart, toMs: nextEnd };
    const last = windows[windows.length - 1];
    if (last && w.fromMs - last.toMs < MERGE_GAP_MS) last.toMs = w.toMs;
    else windows.push(w);
  };
  for (const { s } of seconds) {
    const startMs = Number(s) * SECOND_MS;
    close(startMs, Math.min(toMs, startMs + SECOND_MS));
    covered = startMs + SECOND_MS;
    windowStart = startMs;
  }
  close(toMs, toMs);
  return windows;
}

async function backfill(ctx: JobContext, range: TimeRange, apps: AppRef[], pageLimit: number): Promise<void> {
  const { fromMs, toMs } = range.instants(ctx.timezone ?? 'UTC');
  const days: LogWindow[] = [];
  for (let t = fromMs; t < toMs; t += DAY_MS) days.push({ fromMs: t, toMs: Math.min(toMs, t + DAY_MS) });
  await runResumable(ctx, {
    job: 'logs',
    key: `backfill:${range.from}:${range.to}`,
    chunks: days,
    label: `logs ${range.from}..${range.to} (a day at a time)`,
    position: (w) => new Date(w.fromMs).toISOString(),
    work: async (w) => {
      const result = await fillFromHistory(ctx, apps, [w], pageLimit);
      return `${result.stored} of ${result.received} lines new`;
    },
  });
}
