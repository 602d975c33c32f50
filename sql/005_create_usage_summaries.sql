-- Serverless usage summary view, as delivered, per collected timezone and date range (the platform's own
-- total for the range; the finance report reconciles it with the sum of daily buckets).
CREATE TABLE IF NOT EXISTS usage_summaries
(
    timezone LowCardinality(String),
    range_start Date,                        -- local date in `timezone`, inclusive
    range_end Date,                          -- local date in `timezone`, exclusive
    app String,
    environment String,
    machine_type LowCardinality(String),
    is_surge Bool,
    unit LowCardinality(String),
    quantity Decimal(38, 9),                 -- machine-seconds
    unit_price Decimal(38, 12),              -- currency per machine-second
    percent_discount Nullable(Decimal(9, 4)),
    cost_subtotal Nullable(Decimal(38, 12)), -- currency
    cost_discount Nullable(Decimal(38, 12)), -- currency
    cost_total Decimal(38, 12),              -- currency, net of discounts
    currency LowCardinality(String),
    raw String CODEC(ZSTD(3)),
    version UInt64,                          -- collection time, ms since epoch
    is_deleted UInt8 DEFAULT 0,
    collected_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(version, is_deleted)
PARTITION BY toYYYYMM(range_start)
ORDER BY (timezone, range_start, range_end, app, environment, machine_type, is_surge)
SETTINGS non_replicated_deduplication_window = 1000;
