-- Dead-letter table: every row or line that could not be ingested, with the reason. Nothing is dropped silently.
CREATE TABLE IF NOT EXISTS ingest_rejects
(
    rejected_at DateTime64(3, 'UTC') DEFAULT now64(3),
    source LowCardinality(String),   -- 'log_drain', 'writer:<table>', 'collector:<name>', ...
    reason String,                   -- why it was refused, for a human
    line Nullable(UInt32),           -- line number within its batch, where there is one
    batch_id String DEFAULT '',      -- groups the rejects of one request or batch
    raw String CODEC(ZSTD(3))        -- the refused text, truncated to 64 KiB
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(rejected_at)
ORDER BY (source, rejected_at)
SETTINGS non_replicated_deduplication_window = 1000;
