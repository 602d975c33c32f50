-- Logs without gaps (issue 16). A `logs` row now says how it arrived: by the drain (every row before this
-- migration), by logs history (the `logs` collector fills what the drain missed) or by the live tail
-- (`tallyhouse logs tail --store`). `stored_at` is stamped by the store when the row is inserted, so the live
-- feed (GET /api/v1/logs/stream) can follow what was stored, whichever way it came and whenever a spool replayed it.
ALTER TABLE logs ADD COLUMN IF NOT EXISTS origin LowCardinality(String) DEFAULT 'drain' AFTER line;
ALTER TABLE logs ADD COLUMN IF NOT EXISTS stored_at DateTime64(3, 'UTC') DEFAULT now64(3) AFTER origin;

-- The queue backlog of each app (GET /v1/serverless/apps/{owner}/{name}/queue), sampled by the apps job: the
-- first number an on-call engineer wants when latency climbs. One row per app and sample.
CREATE TABLE IF NOT EXISTS queue_samples
(
    endpoint_id LowCardinality(String),   -- owner/app
    sampled_at DateTime64(3, 'UTC'),      -- when the job read it (the platform's clock in demo mode)
    queue_size UInt32                     -- requests waiting in the app's queue
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(sampled_at)
ORDER BY (endpoint_id, sampled_at)
TTL toDateTime(sampled_at) + INTERVAL 90 DAY
SETTINGS non_replicated_deduplication_window = 1000;
