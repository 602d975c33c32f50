-- Serverless apps, latest state per app (GET /v1/serverless/apps?expand=endpoints), and their route-level
-- endpoint ids. Each apps run writes a newer version of every listed app and a tombstone (is_deleted = 1) for
-- an app no longer listed, so `FINAL` is the state at the last run. Columns keep the platform's field names.
CREATE TABLE IF NOT EXISTS apps
(
    owner String,
    name String,
    endpoint_id String,                          -- the app's own endpoint id, `owner/name`
    app_id Nullable(String),
    environment LowCardinality(Nullable(String)),
    machine_type LowCardinality(Nullable(String)),
    machine_types Array(String),
    auth_mode LowCardinality(Nullable(String)),  -- 'public' | 'private' | as delivered
    keep_alive Nullable(Float64),                -- seconds
    min_concurrency Nullable(Float64),           -- runners
    max_concurrency Nullable(Float64),           -- runners
    request_timeout Nullable(Float64),           -- seconds
    startup_timeout Nullable(Float64),           -- seconds
    valid_regions Array(String),
    updated_at Nullable(DateTime64(3, 'UTC')),
    active_runners Nullable(Float64),            -- runners, as listed
    queue_size Nullable(Float64),                -- requests waiting: the queue read, else the listing's value
    queue_size_source LowCardinality(String),    -- 'queue' (GET .../queue), 'listing', or '' (neither)
    observed_at DateTime64(3, 'UTC'),            -- the platform's "now" when read (live values refer to it)
    raw String CODEC(ZSTD(3)),                   -- the app JSON as listed (unknown fields kept)
    version UInt64,                              -- collection time, ms since epoch: the latest wins
    is_deleted UInt8 DEFAULT 0,
    collected_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(version, is_deleted)
ORDER BY (owner, name)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS app_endpoints
(
    owner String,
    name String,
    endpoint_id String,                          -- `owner/name` or `owner/name/<route>`, as the listing gives it
    route Nullable(String),                      -- the part after `owner/name/`; NULL for the app's own id
    version UInt64,                              -- collection time, ms since epoch
    is_deleted UInt8 DEFAULT 0,
    collected_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(version, is_deleted)
ORDER BY (owner, name, endpoint_id)
SETTINGS non_replicated_deduplication_window = 1000;
