import { z } from 'zod';
import { defineJob, type JobContext } from '../src/collectors/job.js';
import { runResumable } from '../src/jobs/resumable.js';
import { parseLocalDate } from '../src/collectors/time-args.js';
import { monthChunks, scheduledWindow } from '../src/collectors/usage.js';
import { collectModelBillingEvents, collectModelCatalogue, collectModelPricesWhenServed, collectModelUsageChunk } from '../src/collectors/models.js';
import { modelEndpointsWithUsage } from '../src/store/tables/model-usage.js';

/**
 * Model-API spend (admin scope): usage per model endpoint, unit, price, discount and key, per configured
 * timezone (daily series and the platform's summary, like the usage job), then the catalogue, the caller's
 * prices and the per-call billing events of every endpoint seen in usage plus MODEL_ENDPOINT_IDS. A scheduled
 * run collects the current month and re-collects the last USAGE_RECOLLECT_DAYS days; --from/--to backfills.
 */
export const modelsJob = defineJob({
  name: 'models',
  description: 'model-API usage and cost per endpoint, key and day, per timezone; model prices and billing events',
  defaultCron: '5,35 * * * *',
  scope: 'admin',
  label: 'the models collector',
  range: 'dates',
  options: z.object({}),
  async run(ctx) {
    const config = ctx.runtime.config;
    const timezones = ctx.timezone ? [ctx.timezone] : config.TIMEZONES;
    let earliestMs = Infinity;
    const seen = new Set<string>(config.MODEL_ENDPOINT_IDS ?? []);
    if (ctx.range) {
      for (const timezone of timezones) {
        earliestMs = Math.min(earliestMs, parseLocalDate(ctx.range.from, timezone, '--from').toMillis());
        await backfill(ctx, timezone, ctx.range.from, ctx.range.to, seen);
      }
    } else {
      for (const timezone of timezones) {
        const window = scheduledWindow(ctx.now(), timezone, config.USAGE_RECOLLECT_DAYS);
        const key = `scheduled:${timezone}`;
        const through = await ctx.checkpoints.get('models', key);
        const from = through && through < window.from ? parseLocalDate(through, timezone, 'checkpoint').startOf('month').toISODate()! : window.from;
        earliestMs = Math.min(earliestMs, parseLocalDate(from, timezone, 'from').toMillis());
        for (const c of monthChunks(from, window.to, timezone)) {
          ctx.signal.throwIfAborted();
          const result = await collectModelUsageChunk(ctx, { timezone, ...c });
          for (const e of result.endpoints) seen.add(e);
          await ctx.checkpoints.save('models', key, c.to);
        }
      }
    }
    await collectModelCatalogue(ctx);
    for (const r of await modelEndpointsWithUsage(ctx.runtime.store, {})) seen.add(r.endpoint_id);
    const endpoints = [...seen].sort();
    if (endpoints.length === 0) return;
    await collectModelPricesWhenServed(ctx, endpoints);
    const toMs = ctx.range ? Math.min(ctx.now().getTime(), Math.max(...timezones.map((tz) => parseLocalDate(ctx.range!.to, tz, '--to').toMillis()))) : ctx.now().getTime();
    if (Number.isFinite(earliestMs) && toMs > earliestMs) await collectModelBillingEvents(ctx, endpoints, earliestMs, toMs);
  },
});

async function backfill(ctx: JobContext, timezone: string, from: string, to: string, seen: Set<string>): Promise<void> {
  await runResumable(ctx, {
    job: 'models',
    key: `backfill:${timezone}:${from}:${to}`,
    chunks: monthChunks(from, to, timezone),
    label: `models ${timezone} ${from}..${to}`,
    position: (c) => c.from,
    logFields: { timezone },
    work: async (c) => {
      const result = await collectModelUsageChunk(ctx, { timezone, ...c });
      for (const e of result.endpoints) seen.add(e);
      return `${c.from}: ${result.bucketRows} daily rows`;
    },
  });
}
