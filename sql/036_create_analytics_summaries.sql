-- The platform's own whole-range analytics (expand=summary) per endpoint, for each local day and calendar month
-- collected (issue 50.2): a period's percentiles are the platform's, computed over every request of the range,
-- which no merge of bucket percentiles gives. One row per (kind, timezone, period, range_start, endpoint id);
-- re-collecting a range (the current day or month fills in) writes a newer version that replaces it; read with
-- FINAL. Columns are the platform's metric names, as in analytics_buckets; a metric added later is in `raw`.
CREATE TABLE IF NOT EXISTS analytics_summaries
(
    kind LowCardinality(String),                 -- 'serverless' or 'models'
    timezone LowCardinality(String),             -- IANA zone the range was asked in
    period LowCardinality(String),               -- 'day' (a local day) or 'month' (a local calendar month)
    range_start DateTime64(3, 'UTC'),            -- first instant of the range, inclusive
    range_end DateTime64(3, 'UTC'),              -- last instant of the range, exclusive
    range_offset_minutes Int16,                  -- UTC offset of range_start in `timezone`
    covered_until DateTime64(3, 'UTC'),          -- the service's clock when collected, or range_end if earlier: the summary covers [range_start, covered_until)
    endpoint_id String,
    endpoint_scope LowCardinality(String),       -- 'app' (with its routes), 'route' or 'model'
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
    success_rate Nullable(Float64),              -- share of requests answered 2xx, 0-1 (the interface's rate)
    error_rate Nullable(Float64),                -- share of requests answered 5xx, 0-1 (the interface's rate)
    raw String CODEC(ZSTD(3)),                   -- the summary row JSON as delivered
    version UInt64,                              -- collection time, ms since epoch: the latest wins
    collected_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(range_start)
ORDER BY (kind, timezone, period, range_start, endpoint_id)
SETTINGS non_replicated_deduplication_window = 1000;
