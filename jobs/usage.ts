import { z } from 'zod';
import { defineJob, type JobContext } from '../src/jobs/job.js';
import { commaList } from '../src/jobs/options.js';
import { runResumable } from '../src/jobs/resumable.js';
import { parseLocalDate } from '../src/jobs/time-args.js';
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
    if (ctx.range) {
      for (const timezone of timezones) await backfill(ctx, timezone, ctx.range.from, ctx.range.to, apps);
      return;
    }
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

async function backfill(ctx: JobContext, timezone: string, from: string, to: string, apps: string[] | undefined): Promise<void> {
  await runResumable(ctx, {
    job: 'usage',
    key: `backfill:${timezone}:${from}:${to}${apps ? `:${apps.join(',')}` : ''}`,
    chunks: monthChunks(from, to, timezone),
    label: `usage ${timezone} ${from}..${to}`,
    position: (c) => c.from,
    logFields: { timezone },
    work: async (c) => {
      const result = await collectUsageChunk(ctx, { timezone, ...c, apps });
      return `${c.from}: ${result.bucketRows} daily rows`;
    },
  });
}
