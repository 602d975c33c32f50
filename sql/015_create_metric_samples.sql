-- Scraped samples. Retention: METRICS_RETENTION_DAYS (the service re-applies the TTL at start-up when it differs).
CREATE TABLE IF NOT EXISTS metric_samples
(
    metric LowCardinality(String),
    fingerprint UInt64,                               -- see metric_series
    ts DateTime64(3, 'UTC') CODEC(DoubleDelta, ZSTD(1)),  -- the exposition's timestamp, else the scrape time
    value Float64 CODEC(Gorilla, ZSTD(1))             -- NaN and +/-Inf kept as delivered
)
ENGINE = MergeTree
PARTITION BY toDate(ts)
ORDER BY (metric, fingerprint, ts)
TTL toDateTime(ts) + INTERVAL 30 DAY
SETTINGS non_replicated_deduplication_window = 1000;
