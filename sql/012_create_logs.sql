-- App log lines received by the log drain (POST /v1/drains/logs), one row per accepted line.
-- Reads: "this app's logs in this time range" walks the primary key (app, timestamp); "all lines of this
-- request id" uses the bloom filter on request_id. Retention: LOG_RETENTION_DAYS (the service re-applies the
-- TTL at start-up when the variable differs from the 30 days written here). A batch is replayed from the
-- drain spool with a stable insert_deduplication_token, hence the large deduplication window.
CREATE TABLE IF NOT EXISTS logs
(
    timestamp DateTime64(3, 'UTC'),                 -- when the line was logged (the line's `timestamp`), UTC, ms
    level LowCardinality(String),                   -- as sent: DEBUG, INFO, WARNING, ERROR, ...
    app LowCardinality(String),                     -- svc_app_name ('' when the line has none)
    app_id LowCardinality(String),                  -- svc_app_id
    request_id String,                              -- svc_request_id
    job_id String,                                  -- svc_job_id
    endpoint LowCardinality(String),                -- svc_endpoint (<owner>/<app>[/route])
    node LowCardinality(String),                    -- svc_node_id
    worker String,                                  -- svc_worker_id (the runner)
    source LowCardinality(String),                  -- svc_source: gateway, runner, ...
    isolate_source LowCardinality(String),          -- svc_isolate_source: stdout, stderr, ...
    message String CODEC(ZSTD(3)),
    attributes Map(LowCardinality(String), String), -- every other key; non-string values as JSON text
    received_at DateTime64(3, 'UTC'),               -- when Tallyhouse accepted the batch, UTC, ms
    batch_id UUID,                                  -- the delivery (answered as batch_id; its rejects carry it too)
    line UInt32,                                    -- 1-based line (or array element) number within the batch
    INDEX request_id_bloom request_id TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = MergeTree
PARTITION BY toDate(timestamp)
ORDER BY (app, timestamp)
TTL toDateTime(timestamp) + INTERVAL 30 DAY
SETTINGS non_replicated_deduplication_window = 10000, ttl_only_drop_parts = 1;
