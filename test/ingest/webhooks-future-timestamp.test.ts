// Issue 31: a bug an audit planted that no test caught: the webhook timestamp check without `Math.abs` accepts
// deliveries from the future (a replayed or forged delivery dated ahead would pass for as long as it likes). The
// platform's "Webhook verification": the timestamp within 300 s of the current time, either way. Literals by hand.
import { describe, expect, it } from 'vitest';
import { readSignedHeaders, TIMESTAMP_LEEWAY_SECONDS } from '../../src/ingest/webhooks.js';

const NOW = 1_795_000_000;
const headers = (timestamp: number) => ({
  'x-svc-webhook-request-id': 'req-1',
  'x-svc-webhook-user-id': 'user-1',
  'x-svc-webhook-timestamp': String(timestamp),
  'x-svc-webhook-signature': 'ab'.repeat(64),
});

describe('webhook timestamps: within 300 s of now, before or after', () => {
  it('the leeway is the 300 s of the platform notes', () => {
    expect(TIMESTAMP_LEEWAY_SECONDS).toBe(300);
  });

  it.each([
    ['301 s in the future', NOW + 301],
    ['an hour in the future', NOW + 3600],
    ['a year in the future', NOW + 365 * 86_400],
    ['301 s old', NOW - 301],
  ])('refuses a delivery dated %s', (_name, timestamp) => {
    expect(readSignedHeaders(headers(timestamp), NOW)).toEqual({
      outcome: 'stale_timestamp',
      reason: 'X-Svc-Webhook-Timestamp is more than 300 s away from the current time',
    });
  });

  it.each([
    ['300 s in the future', NOW + 300],
    ['now', NOW],
    ['300 s old', NOW - 300],
  ])('accepts a delivery dated %s', (_name, timestamp) => {
    expect(readSignedHeaders(headers(timestamp), NOW)).toEqual({ requestId: 'req-1', userId: 'user-1', timestampText: String(timestamp), signatureHex: 'ab'.repeat(64) });
  });
});
