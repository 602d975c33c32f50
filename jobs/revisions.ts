import { defineJob } from '../src/collectors/job.js';
import { listApps } from '../src/collectors/endpoints.js';
import { collectRevisions } from '../src/collectors/revisions.js';

/**
 * Revision history per app (deployment status, deployer, message, annotations), all of it each run: it is
 * short, and `is_current` moves with each deployment. --from/--to do not apply (the list has no window).
 */
export const revisionsJob = defineJob({
  name: 'revisions',
  description: 'revision history per app (status, deployer, message, annotations, which one is current)',
  defaultCron: '0 * * * *',
  scope: 'api',
  sharded: true,
  label: 'the revisions collector',
  async run(ctx) {
    if (ctx.range) ctx.log.warn('the revisions list has no time window; --from/--to are ignored');
    const apps = await listApps(ctx);
    const result = await collectRevisions(ctx, apps);
    if (result.refused.size > 0) {
      const ids = [...result.refused.keys()].sort();
      ctx.log.warn({ apps: ids }, `revisions skipped ${ids.length} app(s) the platform refused (403/404): ${ids.join(', ')}`);
    }
    ctx.log[ctx.summaryLevel ?? 'info']({ rows: result.rows, rejected: result.rejected }, 'revisions collected');
  },
});
