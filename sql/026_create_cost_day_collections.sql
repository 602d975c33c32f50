-- Final or provisional (issue 32.4). One row per local day each time a collection of cost read that day whole:
-- what it read (a fingerprint of the day's rows and their total), and when (the platform's clock). A day is final
-- once the late-billing window after its end has passed and a collection made after the window agreed with the one
-- before it (src/api/finality.ts). Append-only: the history of collections is the evidence.
CREATE TABLE IF NOT EXISTS cost_day_collections
(
    product LowCardinality(String),         -- serverless | model_api
    timezone LowCardinality(String),        -- IANA zone of the day
    day Date,                               -- local day in timezone
    collected_at DateTime64(3, 'UTC'),      -- when the collection read the day (the platform's clock)
    row_count UInt32,                       -- rows the platform answered for the day
    cost_total Decimal(38, 12),             -- their cost_total summed, in currency units (one figure per currency is in the fingerprint)
    fingerprint String                      -- sha256 hex of the day's rows (keys, quantity, cost_total), sorted
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (product, timezone, day, collected_at)
SETTINGS non_replicated_deduplication_window = 1000;
