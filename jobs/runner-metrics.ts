import { z } from 'zod';
import { defineJob } from '../src/collectors/job.js';
import { listApps } from '../src/collectors/endpoints.js';
import { collectRunnerMetrics, runnersToScrape } from '../src/collectors/runner-metrics.js';

const HOUR_MS = 3_600_000;

/**
 * Per-runner resource metrics (GPU utilisation, VRAM used and total per GPU, CPU, memory) of the runners alive
 * now, every few minutes: ids from the `runner_started` events and the requests of the last --lookback-hours
 * (a runner lives at most a day plus its keep-alive and draining), less those whose end event is stored. No
 * history on the platform side: --from/--to do not apply. Depends on the events (and requests) jobs for ids.
 */
export const runnerMetricsJob = defineJob({
  name: 'runner-metrics',
  description: 'per-runner GPU, VRAM, CPU and memory of live runners (GET /metrics/runners/{id}) into runner_metrics',
  defaultCron: '*/5 * * * *',
  scope: 'api',
  sharded: true,
  label: 'the runner metrics collector',
  options: z.object({
    'lookback-hours': z.coerce.number().int().min(1).max(72).default(30).describe('hours of events and requests to take runner ids from (default 30)'),
    concurrency: z.coerce.number().int().min(1).max(64).default(4).describe('runners scraped at once, at most PLATFORM_MAX_IN_FLIGHT (default 4)'),
    'max-runners': z.coerce.number().int().min(1).max(100_000).default(5000).describe('most runners scraped in one run (default 5000); the rest wait for the next run, with a warning'),
  }),
  async run(ctx, options) {
    if (ctx.range) ctx.log.warn('runner metrics are read as they are now; --from/--to are ignored');
    const apps = await listApps(ctx);
    if (apps.length === 0) return;
    const since = ctx.now().getTime() - options['lookback-hours'] * HOUR_MS;
    const ids = await runnersToScrape(ctx, since, apps.map((a) => a.endpoint_id));
    const concurrency = Math.min(options.concurrency, ctx.runtime.config.PLATFORM_MAX_IN_FLIGHT);
    // Bounded per run: beyond --max-runners, a rotating window (by the minute) so every runner is reached in turn.
    let chosen = ids.map((r) => r.runner_id);
    if (chosen.length > options['max-runners']) {
      const start = (Math.floor(ctx.now().getTime() / 60_000) * options['max-runners']) % chosen.length;
      chosen = [...chosen.slice(start), ...chosen.slice(0, start)].slice(0, options['max-runners']);
      ctx.log.warn({ runners: ids.length, scraped: chosen.length }, `runner metrics: ${ids.length} runners to scrape, over --max-runners; ${chosen.length} this run, the others in later runs`);
    }
    const result = await collectRunnerMetrics(ctx, chosen, concurrency);
    ctx.log[ctx.summaryLevel ?? 'info']({ ...result }, `runner metrics: ${result.scraped} of ${result.runners} runner(s) scraped, ${result.gone} gone (404)`);
  },
});
