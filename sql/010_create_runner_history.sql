-- Runner counts by state per app and bucket (GET /v1/serverless/apps/{owner}/{name}/runners/history), as
-- delivered, per collected timezone, timeframe and aggregation. State classes as the platform reports them:
-- running; idle (IDLE); pending (PENDING, DOCKER_PULL, SETUP, CRASH_BACKOFF); draining. A class the platform
-- adds later is in `raw`. Re-collection writes a newer version; read with FINAL.
CREATE TABLE IF NOT EXISTS runner_history
(
    owner String,
    name String,
    endpoint_id String,                          -- the app's endpoint id, `owner/name`
    timezone LowCardinality(String),             -- IANA zone the buckets were requested in
    timeframe LowCardinality(String),            -- 'minute', 'hour', 'day', ...
    aggregation LowCardinality(String),          -- 'max': most runners at any moment of the bucket; 'avg': time-weighted mean
    timestamp DateTime64(3, 'UTC'),              -- bucket start, as a UTC instant
    timestamp_offset_minutes Int16,              -- UTC offset the platform gave the timestamp
    running Nullable(Float64),                   -- runners
    idle Nullable(Float64),                      -- runners
    pending Nullable(Float64),                   -- runners
    draining Nullable(Float64),                  -- runners
    raw String CODEC(ZSTD(3)),                   -- the point JSON as delivered
    version UInt64,                              -- collection time, ms since epoch: the latest wins
    collected_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(timestamp)
ORDER BY (owner, name, timezone, timeframe, aggregation, timestamp)
SETTINGS non_replicated_deduplication_window = 1000;
