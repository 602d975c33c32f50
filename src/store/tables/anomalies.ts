// Anomaly findings and the notifications sent for them (sql/027_create_anomalies.sql), written by the anomalies job.
import { z } from 'zod';
import { chNumber, defineTable, namedQuery } from './table.js';

export const AnomalyRow = z.object({
  series_kind: z.string(),
  series_id: z.string(),
  measure: z.string(),
  grain: z.string(),
  unit: z.string(),
  bucket: z.string(), // DateTime64(3) UTC text
  finding_id: z.string(),
  expected: z.number(),
  expected_low: z.number(),
  expected_high: z.number(),
  actual: z.number(),
  score: z.number(),
  direction: z.string(),
  summary: z.string(),
  explanation: z.string(),
  version: z.number().int(),
  is_deleted: z.number().int().min(0).max(1),
  evaluated_at: z.string(),
});
export type AnomalyRow = z.input<typeof AnomalyRow>;
export const anomalies = defineTable('anomalies', AnomalyRow);

export const AnomalyNotificationRow = z.object({
  finding_id: z.string(),
  target: z.string(),
  status: z.number().int(),
  attempts: z.number().int(),
  sent_at: z.string(),
});
export type AnomalyNotificationRow = z.input<typeof AnomalyNotificationRow>;
export const anomalyNotifications = defineTable('anomaly_notifications', AnomalyNotificationRow);

const StoredFinding = z.object({
  finding_id: z.string(),
  series_kind: z.string(),
  series_id: z.string(),
  measure: z.string(),
  grain: z.string(),
  unit: z.string(),
  bucket_utc: z.string(),
  expected: chNumber,
  expected_low: chNumber,
  expected_high: chNumber,
  actual: chNumber,
  score: chNumber,
  direction: z.string(),
  summary: z.string(),
  explanation: z.string(),
  evaluated_at: z.string(),
});
export type StoredFinding = z.output<typeof StoredFinding>;

const FINDING_COLUMNS = `finding_id, series_kind, series_id, measure, grain, unit, toString(bucket) AS bucket_utc, expected, expected_low,
          expected_high, actual, score, direction, summary, explanation, toString(evaluated_at) AS evaluated_at`;

/**
 * Current findings whose bucket starts in [from, to), newest first (FINAL: the latest evaluation of each bucket;
 * tombstoned ones are gone). Empty filters match everything.
 */
export const findingsInRange = namedQuery<
  { from: string; to: string; series_kind: string; measure: string; series_id: string; limit: number },
  typeof StoredFinding
>(
  'anomaly_findings_in_range',
  `SELECT ${FINDING_COLUMNS}
   FROM anomalies FINAL
   WHERE is_deleted = 0 AND bucket >= parseDateTime64BestEffort({from:String}, 3, 'UTC') AND bucket < parseDateTime64BestEffort({to:String}, 3, 'UTC')
     AND ({series_kind:String} = '' OR series_kind = {series_kind:String})
     AND ({measure:String} = '' OR measure = {measure:String})
     AND ({series_id:String} = '' OR series_id = {series_id:String})
   ORDER BY bucket DESC, abs(score) DESC, finding_id
   LIMIT {limit:UInt32}`,
  StoredFinding,
);

/** Current findings of [from, to) never delivered to `target` (oldest first): what the notifier posts. */
export const undeliveredFindings = namedQuery<{ from: string; to: string; target: string; limit: number }, typeof StoredFinding>(
  'anomaly_undelivered_findings',
  `SELECT ${FINDING_COLUMNS}
   FROM anomalies FINAL
   WHERE is_deleted = 0 AND bucket >= parseDateTime64BestEffort({from:String}, 3, 'UTC') AND bucket < parseDateTime64BestEffort({to:String}, 3, 'UTC')
     AND finding_id NOT IN (SELECT finding_id FROM anomaly_notifications WHERE target = {target:String})
   ORDER BY bucket, finding_id
   LIMIT {limit:UInt32}`,
  StoredFinding,
);

/** Open findings per measure: those whose bucket starts at or after `since` (the gauge and its alert). */
export const openFindingsByMeasure = namedQuery<{ since: string }, z.ZodObject<{ measure: z.ZodString; findings: typeof chNumber }>>(
  'anomaly_open_findings_by_measure',
  `SELECT measure, count() AS findings
   FROM anomalies FINAL
   WHERE is_deleted = 0 AND bucket >= parseDateTime64BestEffort({since:String}, 3, 'UTC')
   GROUP BY measure
   ORDER BY measure`,
  z.object({ measure: z.string(), findings: chNumber }),
);
