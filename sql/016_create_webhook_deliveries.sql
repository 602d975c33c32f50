-- Queue-completion webhooks received at POST /v1/webhooks/queue, verified (Ed25519) before they are stored.
-- The platform retries and repeats deliveries: one logical row per request_id, the latest delivery wins
-- (read with FINAL). Not partitioned, so a repeat can never land in another partition than its first copy.
CREATE TABLE IF NOT EXISTS webhook_deliveries
(
    request_id String,                               -- X-Svc-Webhook-Request-Id (the queue request id)
    gateway_request_id String,                       -- body: the id of the last tried request
    user_id String,                                  -- X-Svc-Webhook-User-Id
    status LowCardinality(String),                   -- body: 'OK' or 'ERROR' ('' when the body has none)
    error String,                                    -- body `error` ('' when absent)
    error_types Array(LowCardinality(String)),       -- distinct payload.detail[].type values, in order
    payload_error String,                            -- body `payload_error` ('' when absent)
    signed_at DateTime('UTC'),                       -- X-Svc-Webhook-Timestamp, UTC, s
    received_at DateTime64(3, 'UTC'),                -- when Tallyhouse verified the delivery, UTC, ms
    raw String CODEC(ZSTD(3))                        -- the body as delivered (what the signature covers)
)
ENGINE = ReplacingMergeTree(received_at)
ORDER BY request_id
SETTINGS non_replicated_deduplication_window = 1000;
