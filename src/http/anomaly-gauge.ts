import type { BusinessGauge } from './business-metrics.js';
import { openFindingsByMeasure } from '../store/tables/anomalies.js';
import { MEASURES } from '../api/anomalies.js';
import { toDateTime64 } from '../store/values.js';

/** How far back a finding's bucket may start and still be open. */
export const OPEN_FINDING_HOURS = 48;

/**
 * Findings of the anomalies job whose bucket started within the last 48 hours, per measure (cost, volume,
 * error_rate, p95_latency; 0 when none), for the alert TallyhouseAnomalyFound. Re-evaluated findings count once,
 * tombstoned ones not at all.
 */
export const anomaliesOpen: BusinessGauge = {
  name: 'tallyhouse_anomalies_open',
  help: 'Anomaly findings whose bucket started in the last 48 hours, per measure (kind): cost, volume, error_rate, p95_latency.',
  labelNames: ['kind'],
  async read(rt) {
    const rows = await openFindingsByMeasure(rt.store, { since: toDateTime64(new Date(Date.now() - OPEN_FINDING_HOURS * 3_600_000)) });
    const byMeasure = new Map(rows.map((r) => [r.measure, r.findings]));
    return MEASURES.map((kind) => ({ labels: { kind }, value: byMeasure.get(kind) ?? 0 }));
  },
};
