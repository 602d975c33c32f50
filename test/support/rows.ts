import type { UsageBucketRow } from '../../src/store/tables/usage-buckets.js';

/** A daily usage row as the collector writes it (USD, UTC, not surge), for tests that seed the store directly. */
export function usageDayRow(day: string, overrides: Partial<UsageBucketRow> = {}): UsageBucketRow {
  return {
    timezone: 'UTC',
    timeframe: 'day',
    bucket: `${day} 00:00:00.000`,
    bucket_offset_minutes: 0,
    bucket_date: day,
    app: 'a',
    environment: 'main',
    machine_type: 'CPU',
    is_surge: false,
    unit: 'machine-seconds',
    quantity: '10',
    unit_price: '0.1',
    percent_discount: null,
    cost_subtotal: '1',
    cost_discount: '0',
    cost_total: '1',
    currency: 'USD',
    raw: '{}',
    version: 1,
    is_deleted: 0,
    collected_at: '2026-01-01 00:00:00.000',
    ...overrides,
  };
}
