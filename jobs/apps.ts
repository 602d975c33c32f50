import { defineJob } from '../src/collectors/job.js';
import { collectApps } from '../src/collectors/apps.js';

/**
 * Serverless apps and their endpoints (latest state: machine types, environment, auth mode, concurrency,
 * active runners, the listing's queue size; the queue job samples the queue itself). The endpoint ids it stores feed the requests, analytics, runners, events
 * and revisions collectors (unless ENDPOINT_IDS is set). The listing has no history: --from/--to do not apply.
 */
export const appsJob = defineJob({
  name: 'apps',
  description: 'serverless apps (latest state) and their endpoint ids',
  defaultCron: '0 * * * *',
  scope: 'api',
  label: 'the apps collector',
  async run(ctx) {
    if (ctx.range) ctx.log.warn('the apps listing is the current state only; --from/--to are ignored');
    const result = await collectApps(ctx);
    ctx.log[ctx.summaryLevel ?? 'info'](result, 'apps collected');
  },
});
