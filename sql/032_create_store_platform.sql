-- Which platform filled this store (issue 44.1): recorded at the first collection, and again on a deliberate move
-- (ALLOW_PLATFORM_CHANGE). A command or the service that would write from another platform (the built-in simulator
-- included) into a store filled from a real one refuses, naming both. The latest row is the store's platform.
CREATE TABLE IF NOT EXISTS store_platform
(
    recorded_at DateTime64(3, 'UTC'),       -- when it was recorded (the machine's clock)
    kind LowCardinality(String),            -- platform | simulator (the built-in one of demo mode)
    base_url String,                        -- SVC_BASE_URL, without credentials or trailing slash; '' for the built-in simulator
    key_fingerprint String,                 -- first 16 hex of sha256 of the ADMIN (else API) key: which key, never the key
    recorded_by LowCardinality(String)      -- the command or service that recorded it
)
ENGINE = MergeTree
ORDER BY recorded_at
SETTINGS non_replicated_deduplication_window = 1000;
