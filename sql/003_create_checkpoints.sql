-- Where each job got to, per key (a timezone, an endpoint, a backfill). Saved only after the data it
-- covers is committed; the latest row per (job, key) wins.
CREATE TABLE IF NOT EXISTS checkpoints
(
    job LowCardinality(String),
    key String,
    value String,                            -- job-specific: a date, a timestamp, a cursor, JSON
    updated_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(updated_at)
ORDER BY (job, key)
SETTINGS non_replicated_deduplication_window = 1000;
