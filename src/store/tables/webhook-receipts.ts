import { z } from 'zod';
import { defineTable } from './table.js';

/**
 * One verified webhook delivery, append-only (sql/035): filled by the materialized view from every insert into
 * webhook_deliveries, never written directly. Read beside the collapsed delivery (webhookOutcomes in
 * webhook-deliveries.ts) for the number of deliveries received per request.
 */
export const WebhookReceiptRow = z.object({
  request_id: z.string(),
  status: z.string(),
  signed_at: z.string(), // DateTime text, UTC
  received_at: z.string(), // DateTime64(3) text, UTC
});
export type WebhookReceiptRow = z.input<typeof WebhookReceiptRow>;

export const webhookReceipts = defineTable('webhook_receipts', WebhookReceiptRow);
