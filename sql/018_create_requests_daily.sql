-- Requests per endpoint and local day, pre-aggregated from `requests` (FINAL) for each zone in TIMEZONES, so
-- cost-per-request questions over months do not re-read millions of rows. Rewritten by the requests job for the
-- days it collected (and in full when prices change or a zone is added); the latest version of a day wins.
CREATE TABLE IF NOT EXISTS requests_daily
(
    timezone LowCardinality(String),             -- IANA zone the day is local to
    endpoint_id LowCardinality(String),          -- concrete endpoint id
    day Date,                                    -- local calendar day of ended_at
    request_count UInt64,
    billed_requests UInt64,
    unbilled_requests UInt64,                    -- billable_units still NULL when the day was computed
    billable_units Decimal(38, 9),               -- sum of the known billable units
    unpriced_requests UInt64,                    -- billed requests without a price in effect
    cost Nullable(Decimal(38, 21)),              -- sum of billable_units x unit price in effect at ended_at (exact); NULL when nothing was priced
    currency Nullable(String),                   -- of the prices; NULL when nothing was priced
    version UInt64,                              -- computation time, ms since epoch
    computed_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(day)
ORDER BY (timezone, endpoint_id, day)
SETTINGS non_replicated_deduplication_window = 1000;
