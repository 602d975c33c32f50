import { z } from 'zod';
import { defineJob, type JobContext } from '../src/collectors/job.js';
import { commaList } from '../src/jobs/options.js';
import { runResumable } from '../src/jobs/resumable.js';
import { parseLocalDate } from '../src/collectors/time-args.js';
import { collectUsageChunk, monthChunks, scheduledWindow } from '../src/collectors/usage.js';

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
    }
  },
});

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
