-- Per-runner resource metrics (GET /metrics/runners/{runner_id}), one row per scrape, runner and GPU; the
-- runner-level values (CPU, memory) are on the row of GPU 0, or on a row with gpu = -1 for a machine without a GPU.
-- Scraped by the runner-metrics job while the runner lives (404 once it is gone). A scrape stored twice (a retried
-- run at the same instant) has the same key and collapses.
CREATE TABLE IF NOT EXISTS runner_metrics
(
    runner_id String,
    owner String,
    name String,
    endpoint_id LowCardinality(String),          -- the exposition's `application` label, `owner/name`
    machine_type LowCardinality(String),
    ts DateTime64(3, 'UTC'),                     -- scrape time (the platform's clock in demo mode)
    gpu Int16,                                   -- GPU index; -1: a machine without GPU
    cpu_seconds_total Nullable(Float64),         -- CPU seconds since the runner started (counter)
    memory_bytes Nullable(Float64),              -- bytes in use
    gpu_utilization Nullable(Float64),           -- 0-1
    vram_used_bytes Nullable(Float64),           -- bytes in use on this GPU
    vram_total_bytes Nullable(Float64),          -- bytes on this GPU
    collected_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(ts)
ORDER BY (endpoint_id, runner_id, ts, gpu)
TTL toDateTime(ts) + INTERVAL 90 DAY
SETTINGS non_replicated_deduplication_window = 1000;
