-- The model catalogue (GET /v1/models), the caller's model prices as observed (GET /v1/models/pricing) and
-- the per-call billing events (GET /v1/models/billing-events, admin).
CREATE TABLE IF NOT EXISTS models
(
    endpoint_id String,
    display_name String,
    category LowCardinality(String),
    description String,
    status LowCardinality(String),            -- active, deprecated, ... ('' when not sent)
    tags Array(String),
    updated_at Nullable(DateTime64(3, 'UTC')),
    raw String CODEC(ZSTD(3)),
    version UInt64,                           -- collection time, ms since epoch: the latest wins
    collected_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(version)
ORDER BY endpoint_id
SETTINGS non_replicated_deduplication_window = 1000;

-- One row per observation: a price's history is its first and last observation (named query modelPriceHistory).
CREATE TABLE IF NOT EXISTS model_prices
(
    endpoint_id String,
    unit_price Decimal(38, 12),               -- currency per unit, the caller's effective price
    unit LowCardinality(String),
    currency LowCardinality(String),
    observed_at DateTime64(3, 'UTC')
)
ENGINE = MergeTree
ORDER BY (endpoint_id, observed_at)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS model_billing_events
(
    request_id String,
    endpoint_id String,
    timestamp DateTime64(3, 'UTC'),
    output_units Nullable(Decimal(38, 9)),
    unit_price Nullable(Decimal(38, 12)),     -- currency per unit
    percent_discount Nullable(Decimal(9, 4)),
    cost_subtotal Nullable(Decimal(38, 12)),
    cost_discount Nullable(Decimal(38, 12)),
    cost_total Nullable(Decimal(38, 12)),
    cost_estimate_nano_usd Nullable(Int64),
    raw String CODEC(ZSTD(3)),
    version UInt64,
    collected_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(timestamp)
ORDER BY (request_id, endpoint_id)
SETTINGS non_replicated_deduplication_window = 1000;
