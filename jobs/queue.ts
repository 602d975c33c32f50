import { defineJob } from '../src/collectors/job.js';
import { listApps } from '../src/collectors/endpoints.js';
import { readQueueSizes } from '../src/collectors/apps.js';
import { commitRows, collectorRejects, tableWrite } from '../src/collectors/common.js';
import { queueSamples, type QueueSampleRow } from '../src/store/tables/queue-samples.js';
import { toDateTime64 } from '../src/values.js';
import { isNotServed, servedGauge } from '../src/collectors/optional-endpoint.js';

/** The queue read's path is only in the platform notes (the interface: "path and payload: not shown"). */
const QUEUE_ENDPOINT = '/v1/serverless/apps/{owner}/{name}/queue';

/**
 * Samples each app's queue backlog (GET /v1/serverless/apps/{owner}/{name}/queue) into queue_samples, every
 * minute: the number behind the queue gauge on /metrics, the Runners dashboard's backlog panel and the
 * "backlog keeps growing" alert. Never calls the queue's DELETE (it empties the queue). No history on the
 * platform side: --from/--to do not apply.
 */
export const queueJob = defineJob({
  name: 'queue',
  description: 'each app\'s queue backlog, sampled into queue_samples (the queue gauge and alert read it)',
  defaultCron: '* * * * *',
  scope: 'api',
  sharded: true,
  label: 'the queue sampler',
  async run(ctx) {
    if (ctx.range) ctx.log.warn('the queue backlog is read as it is now; --from/--to are ignored');
    const apps = await listApps(ctx);
    const sampledAt = toDateTime64(ctx.now());
    const { sizes, failures } = await readQueueSizes(ctx, apps);
    const rows: QueueSampleRow[] = [];
    apps.forEach((a, i) => {
      const size = sizes[i];
      if (size !== null) rows.push({ endpoint_id: a.endpoint_id, sampled_at: sampledAt, queue_size: size });
    });
    // Every app answered "no such route": the platform does not serve the queue read (notes rule 3). Noted, not a
    // failure; the apps listing's queue_size still feeds the gauge where the platform gives it.
    if (apps.length > 0 && failures.length === apps.length && failures.every((f) => isNotServed(f))) {
      servedGauge(ctx).set({ endpoint: QUEUE_ENDPOINT }, 0);
      const note = `${QUEUE_ENDPOINT} not served (the platform answered ${failures[0].status}): no queue samples`;
      ctx.log.info({ endpoint: QUEUE_ENDPOINT, status: failures[0].status }, note);
      ctx.note(note);
      return;
    }
    if (failures.length < apps.length) servedGauge(ctx).set({ endpoint: QUEUE_ENDPOINT }, 1);
    if (failures.length > 0) {
      const first = failures[0];
      const said = `the queue read failed for ${failures.length} app(s); no sample for them this time (${first.message})`;
      ctx.log.warn({ failed: failures.length, apps: apps.length, status: first.status }, said);
      // Kept in the run's job_runs row too: a run that sampled no app says why there, not only in the log.
      ctx.note(said);
    }
    await commitRows(ctx, [tableWrite(queueSamples, rows)], collectorRejects('queue'), { apps: apps.length });
  },
});
