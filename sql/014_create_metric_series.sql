-- One row per scraped series: the labels behind a fingerprint, and the family's type and help.
CREATE TABLE IF NOT EXISTS metric_series
(
    metric LowCardinality(String),                    -- full sample name, e.g. svc_app_request_latency
    fingerprint UInt64,                               -- hash of the metric name and the sorted label pairs
    labels Map(LowCardinality(String), String),       -- including job and instance
    family LowCardinality(String),                    -- the HELP/TYPE family the sample belongs to
    type LowCardinality(String),                      -- counter, gauge, histogram, summary, untyped, ...
    help String,
    unit String,
    last_seen DateTime64(3, 'UTC')                   -- last time a scrape stored this series (refreshed hourly)
)
ENGINE = ReplacingMergeTree(last_seen)
ORDER BY (metric, fingerprint)
SETTINGS non_replicated_deduplication_window = 1000;
