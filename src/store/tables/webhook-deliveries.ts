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
