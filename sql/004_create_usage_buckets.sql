-- Serverless usage time series, as delivered, per collected timezone and timeframe.
-- Re-collection writes a newer version of each row; a row that vanished from a later collection gets a
-- tombstone (is_deleted = 1). Read with FINAL (or the named queries in src/store/tables/usage-buckets.ts).
CREATE TABLE IF NOT EXISTS usage_buckets
(
    timezone LowCardinality(String),         -- IANA zone the platform grouped the usage in
    timeframe LowCardinality(String),        -- 'day', 'hour', ...
    bucket DateTime64(3, 'UTC'),             -- bucket start, as a UTC instant
    bucket_offset_minutes Int16,             -- UTC offset of the bucket start in `timezone` (-300, +330, ...)
    bucket_date Date,                        -- local calendar date of the bucket start in `timezone`
    app String,                              -- '' when the platform sent null
    environment String,                      -- '' when the platform sent null
    machine_type LowCardinality(String),
    is_surge Bool,                           -- surge and non-surge usage are separate rows, never merged
    unit LowCardinality(String),             -- 'second'
    quantity Decimal(38, 9),                 -- machine-seconds
    unit_price Decimal(38, 12),              -- currency per machine-second
    percent_discount Nullable(Decimal(9, 4)),-- 0-100
    cost_subtotal Nullable(Decimal(38, 12)), -- currency, before discount
    cost_discount Nullable(Decimal(38, 12)), -- currency
    cost_total Decimal(38, 12),              -- currency, net of discounts (= cost)
    currency LowCardinality(String),
    raw String CODEC(ZSTD(3)),               -- the row JSON as delivered (unknown fields kept)
    version UInt64,                          -- collection time, ms since epoch: the latest wins
    is_deleted UInt8 DEFAULT 0,
    collected_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(version, is_deleted)
PARTITION BY toYYYYMM(bucket)
ORDER BY (timezone, timeframe, bucket, app, environment, machine_type, is_surge)
SETTINGS non_replicated_deduplication_window = 1000;
