-- Every verified webhook delivery stored, one row each (issue 50.8): webhook_deliveries keeps one row per request
-- after merges (the latest delivery), so how many deliveries the platform made before one was acknowledged is lost
-- there. The materialized view copies each insert into webhook_deliveries here, append-only, with no change to the
-- receiver; the request trace reads `attempts` = count() per request_id beside the delivery's status and error.
CREATE TABLE IF NOT EXISTS webhook_receipts
(
    request_id String,                               -- X-Svc-Webhook-Request-Id (the queue request id)
    status LowCardinality(String),                   -- body: 'OK' or 'ERROR' ('' when the body has none)
    signed_at DateTime('UTC'),                       -- X-Svc-Webhook-Timestamp, UTC, s
    received_at DateTime64(3, 'UTC')                 -- when Tallyhouse verified the delivery, UTC, ms
)
ENGINE = MergeTree
ORDER BY (request_id, received_at)
SETTINGS non_replicated_deduplication_window = 1000;

-- Deliveries stored before this migration: one receipt each (their earlier attempts were already merged away);
-- the NOT IN keeps a re-run of an interrupted migration from counting them twice.
INSERT INTO webhook_receipts (request_id, status, signed_at, received_at)
SELECT request_id, status, signed_at, received_at FROM webhook_deliveries FINAL
WHERE request_id NOT IN (SELECT request_id FROM webhook_receipts);

CREATE MATERIALIZED VIEW IF NOT EXISTS webhook_receipts_mv TO webhook_receipts AS
SELECT request_id, status, signed_at, received_at FROM webhook_deliveries;
