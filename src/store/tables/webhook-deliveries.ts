import { z } from 'zod';
import { chNumber, defineTable, namedQuery } from './table.js';

/** One verified queue-completion webhook (src/ingest/webhooks.ts); the latest delivery per request_id wins. */
export const WebhookDeliveryRow = z.object({
  request_id: z.string(),
  gateway_request_id: z.string(),
  user_id: z.string(),
  status: z.string(), // 'OK' | 'ERROR' as delivered ('' when the body has none)
  error: z.string(),
  error_types: z.array(z.string()), // distinct payload.detail[].type
  payload_error: z.string(),
  signed_at: z.string(), // DateTime text, UTC (X-Svc-Webhook-Timestamp)
  received_at: z.string(), // DateTime64(3) text, UTC
  raw: z.string(),
});
export type WebhookDeliveryRow = z.input<typeof WebhookDeliveryRow>;

export const webhookDeliveries = defineTable('webhook_deliveries', WebhookDeliveryRow);

/** The stored delivery of one request (collapsed over repeats). */
export const webhookDelivery = namedQuery(
  'webhook_delivery',
  `SELECT request_id, gateway_request_id, user_id, status, error, error_types, payload_error,
          toString(signed_at) AS signed_at, toString(received_at) AS received_at, raw
   FROM webhook_deliveries FINAL
   WHERE request_id = {request_id:String}`,
  WebhookDeliveryRow,
);

/** Error types of failed deliveries received in a time range (payload detail types), most frequent first. */
export const webhookErrorCounts = namedQuery(
  'webhook_error_counts',
  `SELECT error_type, count() AS deliveries FROM webhook_deliveries FINAL ARRAY JOIN error_types AS error_type
   WHERE status = 'ERROR' AND received_at >= parseDateTime64BestEffort({from:String}, 3, 'UTC')
     AND received_at < parseDateTime64BestEffort({to:String}, 3, 'UTC')
   GROUP BY error_type ORDER BY deliveries DESC, error_type`,
  z.object({ error_type: z.string(), deliveries: chNumber }),
);

const SchedulingFailuresRow = z.object({
  /** `owner/app` (a route's requests count for its app). */
  app: z.string(),
  /** Requests of the app that ended in the range with a stored webhook delivery: their error type is known. */
  requests: chNumber,
  /** Of those, failed with runner_scheduling_failure (payload detail type). */
  scheduling_failures: chNumber,
  /** DateTime64(3) UTC text: when the latest of them ended; null when none. */
  last_seen: z.string().nullable(),
});

/**
 * Per app, the queued requests that ended in [{from}, {to}) whose webhook delivery is stored, and how many of them
 * failed with `runner_scheduling_failure` (issue 50.7): the interface's advice "frequent runner_scheduling_failure
 * suggests raising max_concurrency" rests on these counts. Requests without a delivery are left out (their error
 * type is not known), so the share is of the requests whose outcome is.
 */
export const schedulingFailuresByApp = namedQuery<{ from: string; to: string }, typeof SchedulingFailuresRow>(
  'scheduling_failures_by_app',
  `SELECT arrayStringConcat(arraySlice(splitByChar('/', r.endpoint_id), 1, 2), '/') AS app,
          count() AS requests,
          countIf(has(w.error_types, 'runner_scheduling_failure')) AS scheduling_failures,
          if(scheduling_failures = 0, NULL, toString(maxIf(r.ended_at, has(w.error_types, 'runner_scheduling_failure')))) AS last_seen
   FROM
   (
     SELECT request_id, endpoint_id, ended_at
     FROM requests FINAL
     WHERE ended_at >= {from:DateTime64(3, 'UTC')} AND ended_at < {to:DateTime64(3, 'UTC')}
   ) AS r
   INNER JOIN
   (
     -- Only the deliveries of the range's requests: the whole table's history is not held for the join.
     SELECT request_id, error_types FROM webhook_deliveries FINAL
     WHERE request_id IN (
       SELECT request_id FROM requests
       WHERE ended_at >= {from:DateTime64(3, 'UTC')} AND ended_at < {to:DateTime64(3, 'UTC')}
     )
   ) AS w ON w.request_id = r.request_id
   GROUP BY app
   ORDER BY app`,
  SchedulingFailuresRow,
);

const WebhookOutcomeRow = z.object({
  request_id: z.string(),
  status: z.string(),
  error: z.string(),
  error_types: z.array(z.string()),
  payload_error: z.string(),
  /** Verified deliveries received for the request (repeats and retries that reached the receiver), at least 1. */
  attempts: chNumber,
  /** DateTime64(3) UTC text. */
  first_received_at: z.string(),
  last_received_at: z.string(),
});

/**
 * The webhook outcome of each request id that has a stored delivery (issue 50.8): the latest delivery's status and
 * error (FINAL) beside the number of deliveries received (webhook_receipts, sql/035). A delivery stored before
 * sql/035 has no earlier receipts: it counts once.
 */
export const webhookOutcomes = namedQuery<{ ids: string[] }, typeof WebhookOutcomeRow>(
  'webhook_outcomes',
  `SELECT d.request_id AS request_id, d.status AS status, d.error AS error, d.error_types AS error_types,
          d.payload_error AS payload_error, greatest(r.attempts, 1) AS attempts,
          toString(if(r.attempts = 0, d.received_at, least(r.first_received_at, d.received_at))) AS first_received_at,
          toString(d.received_at) AS last_received_at
   FROM
   (
     SELECT request_id, status, error, error_types, payload_error, received_at
     FROM webhook_deliveries FINAL
     WHERE request_id IN {ids:Array(String)}
   ) AS d
   LEFT JOIN
   (
     -- Deliveries by their time: a receipt stored twice (a retried insert with other rows) is one attempt.
     SELECT request_id, uniqExact(received_at) AS attempts, min(received_at) AS first_received_at
     FROM webhook_receipts
     WHERE request_id IN {ids:Array(String)}
     GROUP BY request_id
   ) AS r ON r.request_id = d.request_id
   ORDER BY request_id`,
  WebhookOutcomeRow,
);
