import { defineJob } from '../src/collectors/job.js';
import { evaluateAnomalies } from '../src/collectors/anomalies.js';
import { notifyFindings } from '../src/collectors/notify-webhook.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const FIRST_RUN_DAYS = 14;
const MAX_CATCH_UP_DAYS = 31;

/**
 * Anomaly detection (issue 32.2): judges the buckets of the last two days (a scheduled run; since the previous run
 * after downtime, the last 14 days on the first run) or of --from/--to (a re-evaluation) of every app, endpoint, model endpoint and API key against the same weekday and hour of the four
 * weeks before (src/insights/anomalies.ts), in the first TIMEZONES zone, and stores the findings (a re-evaluation replaces
 * them); then, with NOTIFY_WEBHOOK_URL, posts each finding not yet delivered. Reads only the store: runs after the
 * collectors on the hour.
 */
export const anomaliesJob = defineJob({
  name: 'anomalies',
  description: 'anomaly findings per app, endpoint, model endpoint and API key (cost, volume, error rate, p95 latency), and their notifications',
  defaultCron: '20 * * * *',
  scope: 'api',
  label: 'the anomalies job',
  range: 'times',
  async run(ctx) {
    const config = ctx.runtime.config;
    const timezone = ctx.timezone ?? config.TIMEZONES[0];
    const nowMs = ctx.now().getTime();
    // A scheduled run judges the last two days (recent buckets are re-collected, so re-judged), and back to the
    // previous run when that is earlier (after downtime), at most MAX_CATCH_UP_DAYS; the first run the last 14 days.
    const checkpointKey = `scheduled:${timezone}`;
    const saved = ctx.range ? undefined : await ctx.checkpoints.get('anomalies', checkpointKey);
    const recent = Math.floor(nowMs / HOUR_MS) * HOUR_MS - 2 * DAY_MS;
    const scheduledFrom = Math.max(saved ? Math.min(Date.parse(saved), recent) : nowMs - FIRST_RUN_DAYS * DAY_MS, nowMs - MAX_CATCH_UP_DAYS * DAY_MS);
    const { fromMs, toMs } = ctx.range ? ctx.range.instants(timezone) : { fromMs: Math.floor(scheduledFrom / HOUR_MS) * HOUR_MS, toMs: nowMs };
    if (config.ANALYTICS_TIMEFRAME !== 'hour') {
      ctx.log.warn(`anomalies: volume, error rate and latency are judged from hourly analytics; ANALYTICS_TIMEFRAME is ${config.ANALYTICS_TIMEFRAME}, so only cost is judged`);
    }
    const result = await evaluateAnomalies(ctx, { timezone, fromMs, toMs, nowMs });
    ctx.log[ctx.summaryLevel ?? 'info'](result, `anomalies: ${result.findings} finding(s) over ${result.series} series`);
    if (!ctx.range) await ctx.checkpoints.save('anomalies', checkpointKey, new Date(Math.floor(nowMs / HOUR_MS) * HOUR_MS).toISOString());
    if (config.NOTIFY_WEBHOOK_URL && config.NOTIFY_WEBHOOK_SECRET) {
      const sent = await notifyFindings(
        ctx.runtime,
        {
          url: config.NOTIFY_WEBHOOK_URL,
          secret: config.NOTIFY_WEBHOOK_SECRET,
          timeoutMs: config.NOTIFY_TIMEOUT_MS,
          maxAttempts: config.NOTIFY_MAX_ATTEMPTS,
          backoffMs: config.NOTIFY_BACKOFF_MS,
          maxAgeHours: config.NOTIFY_MAX_AGE_HOURS,
        },
        { nowMs, log: ctx.log, signal: ctx.signal },
      );
      ctx.log.info(sent, `anomaly notifications: ${sent.sent} sent, ${sent.failed} not delivered`);
    }
  },
});
