-- Serverless and models analytics time series, as delivered: one row per (kind, timezone, timeframe, bucket,
-- endpoint id), also for buckets without requests (counts 0, percentiles NULL). Columns are the platform's
-- metric names. Percentiles are stored as delivered and never averaged: a percentile of a longer period or
-- of several endpoints is not derivable from these rows (ask the platform for that bucket size or id).
-- A metric the platform adds later is in `raw`. Re-collection writes a newer version; read with FINAL.
CREATE TABLE IF NOT EXISTS analytics_buckets
(
    kind LowCardinality(String),                 -- 'serverless' (/v1/serverless/analytics) or 'models' (/v1/models/analytics)
    timezone LowCardinality(String),             -- IANA zone the buckets were requested in
    timeframe LowCardinality(String),            -- 'minute', 'hour', 'day', ...
    bucket DateTime64(3, 'UTC'),                 -- bucket start, as a UTC instant
    bucket_offset_minutes Int16,                 -- UTC offset of the bucket start in `timezone`
    endpoint_id String,
    endpoint_scope LowCardinality(String),       -- 'app': a bare owner/name, which the platform reads as the app with all of its routes; 'route'; 'model'
    request_count Nullable(UInt64),              -- requests
    success_count Nullable(UInt64),              -- 2xx
    user_error_count Nullable(UInt64),           -- 4xx
    error_count Nullable(UInt64),                -- 5xx
    startup_error_count Nullable(UInt64),
    connection_error_count Nullable(UInt64),
    timeout_error_count Nullable(UInt64),
    runtime_error_count Nullable(UInt64),
    cold_boot_count Nullable(UInt64),
    p50_cold_boot_duration Nullable(Float64),    -- seconds
    p75_cold_boot_duration Nullable(Float64),    -- seconds
    p90_cold_boot_duration Nullable(Float64),    -- seconds
    p25_duration Nullable(Float64),              -- seconds
    p50_duration Nullable(Float64),              -- seconds
    p75_duration Nullable(Float64),              -- seconds
    p90_duration Nullable(Float64),              -- seconds
    p95_duration Nullable(Float64),              -- seconds
    p99_duration Nullable(Float64),              -- seconds
    p50_prepare_duration Nullable(Float64),      -- seconds
    p75_prepare_duration Nullable(Float64),      -- seconds
    p90_prepare_duration Nullable(Float64),      -- seconds
    p95_prepare_duration Nullable(Float64),      -- seconds
    p99_prepare_duration Nullable(Float64),      -- seconds
    total_billable_duration Nullable(Float64),   -- seconds: sum of request execution durations
    raw String CODEC(ZSTD(3)),                   -- the row JSON as delivered (metrics added later are kept here)
    version UInt64,                              -- collection time, ms since epoch: the latest wins
    collected_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(bucket)
ORDER BY (kind, timezone, timeframe, endpoint_id, bucket)
SETTINGS non_replicated_deduplication_window = 1000;
