-- One row per run of a scheduled or manual job.
CREATE TABLE IF NOT EXISTS job_runs
(
    job LowCardinality(String),
    run_id UUID,
    trigger LowCardinality(String),          -- 'schedule', 'startup', 'manual'
    started_at DateTime64(3, 'UTC'),
    finished_at DateTime64(3, 'UTC'),
    status LowCardinality(String),           -- 'ok', 'failed', 'skipped' (a tick found the previous run still going)
    rows UInt64,                             -- rows written by the run
    retries UInt32,                          -- Platform API calls retried during the run
    error String                             -- why it failed; empty when ok
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(started_at)
ORDER BY (job, started_at)
SETTINGS non_replicated_deduplication_window = 1000;
