-- One row per scrape: whether the target was up, how long it took, how many samples it gave, and why it failed.
CREATE TABLE IF NOT EXISTS scrapes
(
    scraped_at DateTime64(3, 'UTC'),
    job LowCardinality(String),
    instance LowCardinality(String),                  -- host:port of the target
    target String,                                    -- the URL, without credentials
    up UInt8,                                         -- 1 = every sample stored; 0 = none stored
    duration_seconds Float64,                         -- seconds
    samples UInt32,                                   -- samples stored (as Prometheus' scrape_samples_scraped)
    bytes UInt64,                                     -- size of the body, bytes
    error String                                      -- why the scrape failed; empty when up
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(scraped_at)
ORDER BY (job, instance, scraped_at)
TTL toDateTime(scraped_at) + INTERVAL 90 DAY
SETTINGS non_replicated_deduplication_window = 1000;
