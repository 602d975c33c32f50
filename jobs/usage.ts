import { z } from 'zod';
import { defineJob, type JobContext } from '../src/collectors/job.js';
import { commaList } from '../src/jobs/options.js';
import { runResumable } from '../src/jobs/resumable.js';
import { parseLocalDate } from '../src/collectors/time-args.js';
import { collectUsageChunk, monthChunks, scheduledWindow } from '../src/collectors/usage.js';
import { DateTime } from 'luxon';
import { usageMonths } from '../src/store/tables/usage-buckets.js';
import { dayCollections } from '../src/store/tables/cost-day-collections.js';
import { daysFinality } from '../src/insights/finality.js';

/**
 * Serverless usage (admin scope): the daily time series and the platform's summary, per configured
 * timezone. A scheduled run collects the current month and re-collects the last USAGE_RECOLLECT_DAYS days
 * (recent buckets still change), reaching back further if earlier runs were missed. With --from/--to it
 * backfills that range in month chunks and resumes after an interruption.
 */
export const usageJob = defineJob({
  name: 'usage',
  description: 'serverless usage and cost per app, machine type and day, per timezone',
  defaultCron: '*/30 * * * *',
  scope: 'admin',
  label: 'the usage collector',
  // The platform's usage series is daily: a backfill covers whole local days.
  range: 'dates',
  options: z.object({
    apps: commaList(z.string()).optional().describe('comma-separated app names (default: USAGE_APPS, else all apps)'),
  }),
  async run(ctx, options) {
    const config = ctx.runtime.config;
    const timezones = ctx.timezone ? [ctx.timezone] : config.TIMEZONES;
    const apps = options.apps ?? config.USAGE_APPS;
    if (ctx.range) return backfill(ctx, timezones, ctx.range.from, ctx.range.to, apps);
    for (const timezone of timezones) {
      const window = scheduledWindow(ctx.now(), timezone, config.USAGE_RECOLLECT_DAYS);
      const key = `scheduled:${timezone}`;
      // Reach back to where the last successful run got to, so missed runs leave no gap.
      const through = await ctx.checkpoints.get('usage', key);
      const from = through && through < window.from ? parseLocalDate(through, timezone, 'checkpoint').startOf('month').toISODate()! : window.from;
      for (const c of monthChunks(from, window.to, timezone)) {
        ctx.signal.throwIfAborted();
        await collectUsageChunk(ctx, { timezone, ...c, apps });
        await ctx.checkpoints.save('usage', key, c.to);
      }
      await catchUpFinality(ctx, timezone, from, apps);
    }
  },
});

/** Months before the scheduled window the finality catch-up looks at, and the passes it gives one month. */
export const CATCHUP_MONTHS = 13;
export const CATCHUP_MAX_PASSES = 3;

/**
 * Finality catch-up (issue 44.4): a month collected before the version that records collections (sql/026), or
 * whose last re-collection came before its late-billing window ended, stays provisional, as nothing re-collects it.
 * Each scheduled run re-collects at most one such month per zone (bounded work): the oldest of the last
 * CATCHUP_MONTHS months before the scheduled window that holds usage, has a day that is neither final nor still in
 * its late-billing window, and has had fewer than CATCHUP_MAX_PASSES catch-up passes. Two passes that read the same
 * rows make its days final (src/insights/finality.ts); a month the platform keeps changing is left after the last
 * pass, provisional, as the answers say.
 */
async function catchUpFinality(ctx: JobContext, timezone: string, windowFrom: string, apps: string[] | undefined): Promise<void> {
  const store = ctx.runtime.store;
  const earliest = DateTime.fromISO(windowFrom, { zone: timezone }).startOf('month').minus({ months: CATCHUP_MONTHS }).toISODate()!;
  const months = await usageMonths(store, { timezone, from: earliest, to: windowFrom });
  if (months.length === 0) return;
  const key = `finality-catchup:${timezone}`;
  const passes = parsePasses(await ctx.checkpoints.get('usage', key));
  for (const { month } of months) {
    if ((passes[month] ?? 0) >= CATCHUP_MAX_PASSES) continue;
    const next = DateTime.fromISO(month, { zone: timezone }).plus({ months: 1 }).toISODate()!;
    const range = { from: month, to: next < windowFrom ? next : windowFrom };
    const collections = await dayCollections(store, { product: 'serverless', timezone, ...range });
    const days = daysFinality({ ...range, timezone, collections, now: ctx.now(), windowHours: ctx.runtime.config.LATE_BILLING_WINDOW_HOURS });
    // A pass counts only once the window is over: until then the month is left to the scheduled runs.
    if (days.every((d) => d.final || d.reason === 'late_billing_window')) continue;
    ctx.signal.throwIfAborted();
    await collectUsageChunk(ctx, { timezone, ...range, apps });
    passes[month] = (passes[month] ?? 0) + 1;
    await ctx.checkpoints.save('usage', key, JSON.stringify(passes));
    ctx.log.info({ timezone, month, pass: passes[month] }, 'finality catch-up: an earlier month re-collected');
    return;
  }
}

function parsePasses(value: string | undefined): Record<string, number> {
  if (!value) return {};
  try {
    const parsed: unknown = JSON.parse(value);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return {};
    return Object.fromEntries(Object.entries(parsed).filter((e): e is [string, number] => Number.isInteger(e[1])));
  } catch {
    return {};
  }
}

/**
 * Month chunks of every timezone, PLATFORM_MAX_IN_FLIGHT at once (independent windows; the client's shared limit
 * bounds the calls), resumable. The checkpoint key names the zones, range and apps.
 */
async function backfill(ctx: JobContext, timezones: readonly string[], from: string, to: string, apps: string[] | undefined): Promise<void> {
  const chunks = timezones.flatMap((timezone) => monthChunks(from, to, timezone).map((c) => ({ timezone, ...c })));
  await runResumable(ctx, {
    job: 'usage',
    key: `backfill:${timezones.join('+')}:${from}:${to}${apps ? `:${apps.join(',')}` : ''}`,
    chunks,
    label: `usage ${timezones.join(', ')} ${from}..${to}`,
    position: (c) => `${c.timezone}@${c.from}`,
    logFields: { timezones },
    concurrency: ctx.runtime.config.PLATFORM_MAX_IN_FLIGHT,
    work: async (c) => {
      const result = await collectUsageChunk(ctx, { ...c, apps });
      return `${c.timezone} ${c.from}: ${result.bucketRows} daily rows`;
    },
  });
}
