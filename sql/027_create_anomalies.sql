-- Anomaly findings of the `anomalies` job (src/api/anomalies.ts): one row per series and bucket judged anomalous.
-- A re-evaluation of a bucket writes a newer version (the latest wins), or a tombstone (is_deleted = 1) when the
-- bucket is no longer anomalous; read with FINAL. finding_id is stable for a series and bucket.
CREATE TABLE IF NOT EXISTS anomalies
(
    series_kind LowCardinality(String),       -- 'app', 'endpoint', 'model_endpoint', 'api_key'
    series_id String,                         -- app (owner/name), endpoint id, model endpoint id or API key id
    measure LowCardinality(String),           -- 'cost', 'volume', 'error_rate', 'p95_latency'
    grain LowCardinality(String),             -- 'day' or 'hour'
    unit LowCardinality(String),              -- currency (cost), 'requests', 'ratio' (error rate), 'seconds'
    bucket DateTime64(3, 'UTC'),              -- bucket start, as a UTC instant
    finding_id String,                        -- stable id of (series, bucket): notifications carry it
    expected Float64,                         -- baseline median, in `unit`
    expected_low Float64,                     -- the ordinary range: median -+ threshold x spread (low floored at 0)
    expected_high Float64,
    actual Float64,                           -- the bucket's value, in `unit`
    score Float64,                            -- (actual - expected) / spread
    direction LowCardinality(String),         -- 'up' or 'down'
    summary String,                           -- the finding in one line
    explanation String,                       -- cost findings: the change attribution against the same weekday a week before; '' otherwise
    version UInt64,                           -- evaluation time, ms since epoch: the latest wins
    is_deleted UInt8 DEFAULT 0,               -- 1: re-evaluated and no longer anomalous
    evaluated_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(version, is_deleted)
PARTITION BY toYYYYMM(bucket)
ORDER BY (series_kind, series_id, measure, grain, unit, bucket)
SETTINGS non_replicated_deduplication_window = 1000;

-- Findings posted to NOTIFY_WEBHOOK_URL: written only after the receiver answered 2xx, so a finding is never
-- posted again once recorded (a crash between the 2xx and this row re-posts it once; the payload's finding_id
-- lets the receiver drop the copy).
CREATE TABLE IF NOT EXISTS anomaly_notifications
(
    finding_id String,
    target String,                            -- the webhook URL's origin and path (no query, no credentials)
    status UInt16,                            -- the receiver's HTTP status (2xx)
    attempts UInt16,                          -- attempts the delivery took
    sent_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(sent_at)
ORDER BY (finding_id, target)
SETTINGS non_replicated_deduplication_window = 1000;
