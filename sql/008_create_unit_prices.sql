-- Price per billable unit of each endpoint, from PRICES_FILE, as a history: an entry applies from its
-- effective_from until the endpoint's next entry, so a price change adds a row and never reprices earlier
-- requests. Loaded at the start of each requests run; an entry no longer in the file is kept (a file that only
-- lists the current price must not erase what earlier requests cost); an entry whose price or currency changed
-- under the same (endpoint_id, effective_from) is a correction: a newer version replaces it.
-- Cost of a request = billable_units x the price whose effective_from is the latest at or before its ended_at
-- (ASOF JOIN in src/store/tables/requests.ts).
CREATE TABLE IF NOT EXISTS unit_prices
(
    endpoint_id LowCardinality(String),          -- concrete endpoint id, as in requests.endpoint_id
    effective_from DateTime64(3, 'UTC'),         -- the price applies to requests that ended at or after this instant
    unit_price Decimal(38, 12),                  -- currency per billable unit
    currency LowCardinality(String),             -- ISO 4217 code, e.g. 'USD'; one currency per endpoint
    source String,                               -- where the entry came from (the PRICES_FILE path)
    version UInt64,                              -- load time, ms since epoch: the latest load of an entry wins
    loaded_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (endpoint_id, effective_from)
SETTINGS non_replicated_deduplication_window = 1000;
