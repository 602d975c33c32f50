-- What each collection read, per source and zone (issue 45.1): one row per committed chunk of a time-series source
-- (runner history, analytics), written in the same commit as the chunk's rows. Coverage (src/insights/coverage.ts)
-- reads these beside cost_day_collections (usage, model usage), so an answer can say which of its ranges were never
-- collected instead of reading their absence as zero or idle. Append-only: the history of collections is the evidence.
CREATE TABLE IF NOT EXISTS collected_ranges
(
    source LowCardinality(String),          -- runner_history | analytics
    zone LowCardinality(String),            -- IANA zone the chunk was asked in
    range_start DateTime64(3, 'UTC'),       -- first instant asked for, inclusive
    range_end DateTime64(3, 'UTC'),         -- last instant asked for, exclusive
    collected_at DateTime64(3, 'UTC')       -- when (the service's clock): nothing after it was there to read
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(range_start)
ORDER BY (source, zone, range_start, collected_at)
SETTINGS non_replicated_deduplication_window = 1000;
