-- Model-API usage (GET /v1/models/usage, admin), as delivered per collected timezone: the daily time series
-- per endpoint, unit, currency, unit price, discount and caller key (the auth_method expands), and the
-- platform's summary of each collected range. Versioned like usage_buckets: a re-collection writes a newer
-- version of each row, and a tombstone (is_deleted = 1) for a row the platform no longer returns.
-- Rows of the older shape (only `cost`, no price or discount fields) cannot be told apart: the collector sums
-- those of one key (price_key = 'legacy') before writing, so none overwrites another.
CREATE TABLE IF NOT EXISTS model_usage_buckets
(
    timezone LowCardinality(String),          -- IANA zone the platform grouped the usage in
    timeframe LowCardinality(String),         -- 'day'
    bucket DateTime64(3, 'UTC'),              -- bucket start, as a UTC instant
    bucket_offset_minutes Int16,              -- UTC offset of the bucket start in `timezone`
    bucket_date Date,                         -- local calendar date of the bucket start in `timezone`
    endpoint_id String,                       -- model endpoint, e.g. svc-ai/flux-dev
    unit LowCardinality(String),              -- image, megapixel, second, video, ...
    currency LowCardinality(String),
    api_key_id String,                        -- '' for a login or when not sent
    login_username String,                    -- '' for an API key or when not sent
    api_key_label String,                     -- auth_method: the key's label
    price_key String,                         -- '<unit_price>|<percent_discount>' as sent; 'legacy' for cost-only rows
    unit_price Nullable(Decimal(38, 12)),     -- currency per unit, before discount; NULL in legacy rows
    percent_discount Nullable(Decimal(9, 4)), -- 0-100
    quantity Decimal(38, 9),                  -- units
    cost_subtotal Nullable(Decimal(38, 12)),  -- currency, before discount
    cost_discount Nullable(Decimal(38, 12)),  -- currency
    cost_total Decimal(38, 12),               -- currency, net of discounts (= cost)
    platform_rows UInt32,                     -- rows of the platform's answer summed into this one (legacy rows)
    raw String CODEC(ZSTD(3)),                -- the row JSON(s) as delivered
    version UInt64,                           -- collection time, ms since epoch: the latest wins
    is_deleted UInt8 DEFAULT 0,
    collected_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(version, is_deleted)
PARTITION BY toYYYYMM(bucket)
ORDER BY (timezone, timeframe, bucket, endpoint_id, unit, currency, api_key_id, login_username, price_key)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS model_usage_summaries
(
    timezone LowCardinality(String),
    range_start Date,                         -- local, inclusive
    range_end Date,                           -- local, exclusive
    endpoint_id String,
    unit LowCardinality(String),
    currency LowCardinality(String),
    api_key_id String,
    login_username String,
    api_key_label String,
    price_key String,
    unit_price Nullable(Decimal(38, 12)),
    percent_discount Nullable(Decimal(9, 4)),
    quantity Decimal(38, 9),
    cost_subtotal Nullable(Decimal(38, 12)),
    cost_discount Nullable(Decimal(38, 12)),
    cost_total Decimal(38, 12),
    platform_rows UInt32,
    raw String CODEC(ZSTD(3)),
    version UInt64,
    is_deleted UInt8 DEFAULT 0,
    collected_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(version, is_deleted)
ORDER BY (timezone, range_start, range_end, endpoint_id, unit, currency, api_key_id, login_username, price_key)
SETTINGS non_replicated_deduplication_window = 1000;
