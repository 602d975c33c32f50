import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/runtime.js';
import type { PlatformClient } from '../../src/platform/index.js';
import { Scheduler } from '../../src/jobs/scheduler.js';
import { parseJobArgs } from '../../src/jobs/options.js';
import { anomaliesJob } from '../../jobs/anomalies.js';
import { usageBuckets, type UsageBucketRow } from '../../src/store/tables/usage-buckets.js';
import { analyticsBuckets, type AnalyticsBucketRow } from '../../src/store/tables/analytics-buckets.js';
import { closeRuntime, openTestRuntime, queryRows } from '../support/store.js';

// A store seeded by hand with five weeks of one app's daily usage and one endpoint's hourly analytics, and two
// injected anomalies whose figures are worked out here: on 2026-11-09 (a Monday) the unit price of acme/flux's
// A100 goes from 0.001 to 0.0015 USD per machine-second at the same 100,000 machine-seconds (cost 100 -> 150 USD,
// price effect +50 USD); at 2026-11-09 14:00 UTC acme/flux/infer answers 60 of 200 requests with a 5xx (30%)
// where every other hour had 2 of 200 (1%). The day's error rate, 106 / 4,800 = 2.2% against 1%, scores
// (0.022 - 0.01) / 0.01 (the absolute floor) = 1.2: not a finding. Hours after the last collected one (here from
// 2026-11-10 00:00) are not collected yet, and not judged as empty.
const DAY = 86_400_000;
const HOUR = 3_600_000;
const judged = Date.parse('2026-11-09T00:00:00Z');
const now = new Date('2026-11-10T06:00:00Z');

function usageRow(dayMs: number, unitPrice: string, cost: string, version = 1): UsageBucketRow {
  const iso = new Date(dayMs).toISOString();
  return {
    timezone: 'UTC', timeframe: 'day', bucket: `${iso.slice(0, 10)} 00:00:00.000`, bucket_offset_minutes: 0, bucket_date: iso.slice(0, 10),
    app: 'acme/flux', environment: 'main', machine_type: 'GPU-A100', is_surge: false, unit: 'second', quantity: '100000', unit_price: unitPrice,
    percent_discount: null, cost_subtotal: cost, cost_discount: '0', cost_total: cost, currency: 'USD', raw: '{}', version, is_deleted: 0, collected_at: '2026-11-10 00:00:00.000',
  };
}

function analyticsRow(hourMs: number, errors: number): AnalyticsBucketRow {
  const text = new Date(hourMs).toISOString().replace('T', ' ').slice(0, 23);
  return {
    kind: 'serverless', timezone: 'UTC', timeframe: 'hour', bucket: text, bucket_offset_minutes: 0, endpoint_id: 'acme/flux/infer', endpoint_scope: 'route',
    request_count: 200, success_count: 200 - errors, user_error_count: 0, error_count: errors, p95_duration: 1.5, raw: '{}', version: 1, collected_at: '2026-11-10 00:00:00.000',
  } as AnalyticsBucketRow;
}

let rt: Runtime;

async function runAnomalies(args: Record<string, string> = {}) {
  const scheduler = new Scheduler({ runtime: rt, platform: {} as PlatformClient, jobs: [anomaliesJob], now: () => now });
  const result = await scheduler.run('anomalies', 'manual', parseJobArgs(anomaliesJob, args));
  expect(result.status, JSON.stringify(result)).toBe('ok');
}

async function currentFindings() {
  return queryRows<{ series_id: string; measure: string; grain: string; bucket: string; expected: number; actual: number; direction: string; explanation: string }>(
    rt,
    `SELECT series_id, measure, grain, toString(bucket) AS bucket, expected, actual, direction, explanation FROM anomalies FINAL WHERE is_deleted = 0 ORDER BY measure, grain, bucket`,
  );
}

beforeAll(async () => {
  rt = await openTestRuntime();
  const usage: UsageBucketRow[] = [];
  for (let d = judged - 35 * DAY; d < judged; d += DAY) usage.push(usageRow(d, '0.001', '100'));
  usage.push(usageRow(judged, '0.0015', '150'));
  const hours: AnalyticsBucketRow[] = [];
  for (let h = judged - 35 * DAY; h < judged + DAY; h += HOUR) hours.push(analyticsRow(h, h === judged + 14 * HOUR ? 60 : 2));
  const written = Promise.all([rt.writer.insert(usageBuckets, usage), rt.writer.insert(analyticsBuckets, hours)]);
  await rt.writer.flush();
  await written;
}, 120_000);

afterAll(async () => {
  if (rt) await closeRuntime(rt);
});

describe('the anomalies job on a seeded store', () => {
  it('finds the price change with its attribution and the error-rate hour, and nothing else', async () => {
    await runAnomalies();
    const findings = await currentFindings();
    // expected: the baseline's level, through log and exp (100 within 1e-9)
    expect(findings.map((f) => [f.series_id, f.measure, f.grain, f.bucket, Number(f.expected.toFixed(9)), f.actual, f.direction])).toEqual([
      ['acme/flux', 'cost', 'day', '2026-11-09 00:00:00.000', 100, 150, 'up'],
      ['acme/flux/infer', 'error_rate', 'hour', '2026-11-09 14:00:00.000', 0.01, 0.3, 'up'],
    ]);
    // (p1 - p0) x q1 = 0.0005 x 100,000 = 50 USD of price effect, no volume effect.
    expect(findings[0].explanation).toMatch(/^price effect \+50(\.0+)? USD on acme\/flux: unit price GPU-A100 0\.001(0*) -> 0\.0015(0*) \(against 2026-11-02\)$/);
  });

  it('a re-evaluation replaces the findings (one row each), and drops one whose data was corrected', async () => {
    await runAnomalies();
    expect(await currentFindings()).toHaveLength(2);
    // The platform's corrected figure for the day: the old price after all.
    const corrected = rt.writer.insert(usageBuckets, [usageRow(judged, '0.001', '100', 2)]);
    await rt.writer.flush();
    await corrected;
    await runAnomalies({ from: '2026-11-08', to: '2026-11-10' });
    const findings = await currentFindings();
    expect(findings.map((f) => [f.series_id, f.measure, f.grain])).toEqual([['acme/flux/infer', 'error_rate', 'hour']]);
  });
});
