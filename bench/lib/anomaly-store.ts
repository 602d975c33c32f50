// Writes an anomaly world (bench/lib/anomaly-world.ts) into a store as the collectors would have stored it, in UTC:
// app cost as daily usage_buckets rows (GPU-A100 at 0.001 USD per machine-second), endpoints as hourly
// analytics_buckets rows ('route' scope; requests, 5xx, and the day's p95 on each hour with requests), model
// endpoints as daily model_usage_buckets rows without a caller, and API keys as rows of the model endpoint
// `svc-ai/keyed` with their key id (that endpoint is one more series the job judges).
import type { Runtime } from '../../src/runtime.js';
import { usageBuckets, type UsageBucketRow } from '../../src/store/tables/usage-buckets.js';
import { modelUsageBuckets, type ModelUsageBucketRow } from '../../src/store/tables/model-usage.js';
import { analyticsBuckets, type AnalyticsBucketRow } from '../../src/store/tables/analytics-buckets.js';
import type { AnomalyWorld } from './anomaly-world.js';

const DAY = 86_400_000;
const text = (ms: number) => new Date(ms).toISOString().replace('T', ' ').slice(0, 23);
const COLLECTED = '2026-11-01 00:00:00.000';

export async function writeWorld(rt: Pick<Runtime, 'writer'>, world: AnomalyWorld): Promise<number> {
  let rows = 0;
  const pending: Promise<unknown>[] = [];
  const usage: UsageBucketRow[] = [];
  const models: ModelUsageBucketRow[] = [];
  const latencyByDay = new Map<string, number>();
  for (const s of world.series) if (s.key.measure === 'p95_latency') for (const p of s.points) latencyByDay.set(`${s.key.id}|${p.startMs}`, p.value);
  const errorsByHour = new Map<string, number>();
  for (const s of world.series) if (s.key.measure === 'error_rate' && s.key.grain === 'hour') for (const p of s.points) errorsByHour.set(`${s.key.id}|${p.startMs}`, Math.round(p.value * (p.requests ?? 0)));
  for (const s of world.series) {
    if (s.key.measure === 'cost' && s.key.kind === 'app') {
      for (const p of s.points) {
        const cost = p.value.toFixed(6);
        usage.push({
          timezone: 'UTC', timeframe: 'day', bucket: text(p.startMs), bucket_offset_minutes: 0, bucket_date: text(p.startMs).slice(0, 10), app: s.key.id, environment: 'main',
          machine_type: 'GPU-A100', is_surge: false, unit: 'second', quantity: (p.value * 1000).toFixed(3), unit_price: '0.001', percent_discount: null,
          cost_subtotal: cost, cost_discount: '0', cost_total: cost, currency: 'USD', raw: '{}', version: 1, is_deleted: 0, collected_at: COLLECTED,
        });
      }
    } else if (s.key.measure === 'cost') {
      const keyed = s.key.kind === 'api_key';
      for (const p of s.points) {
        const cost = p.value.toFixed(6);
        models.push({
          timezone: 'UTC', timeframe: 'day', bucket: text(p.startMs), bucket_offset_minutes: 0, bucket_date: text(p.startMs).slice(0, 10),
          endpoint_id: keyed ? 'svc-ai/keyed' : s.key.id, unit: 'image', currency: 'USD', api_key_id: keyed ? s.key.id : '', login_username: '', api_key_label: '',
          price_key: '0.01|0', unit_price: '0.01', percent_discount: '0', quantity: (p.value * 100).toFixed(4), cost_subtotal: cost, cost_discount: '0', cost_total: cost,
          platform_rows: 1, raw: '{}', version: 1, is_deleted: 0, collected_at: COLLECTED,
        });
      }
    } else if (s.key.measure === 'volume' && s.key.grain === 'hour') {
      const hours: AnalyticsBucketRow[] = [];
      for (const p of s.points) {
        const errors = errorsByHour.get(`${s.key.id}|${p.startMs}`) ?? 0;
        hours.push({
          kind: 'serverless', timezone: 'UTC', timeframe: 'hour', bucket: text(p.startMs), bucket_offset_minutes: 0, endpoint_id: s.key.id, endpoint_scope: 'route',
          request_count: p.value, success_count: p.value - errors, error_count: errors, p95_duration: latencyByDay.get(`${s.key.id}|${Math.floor(p.startMs / DAY) * DAY}`) ?? null,
          raw: '{}', version: 1, collected_at: COLLECTED,
        } as AnalyticsBucketRow);
      }
      rows += hours.length;
      pending.push(rt.writer.insert(analyticsBuckets, hours));
    }
  }
  rows += usage.length + models.length;
  pending.push(rt.writer.insert(usageBuckets, usage), rt.writer.insert(modelUsageBuckets, models));
  await rt.writer.flush();
  await Promise.all(pending);
  return rows;
}
