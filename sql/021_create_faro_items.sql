-- Front-end telemetry received from Grafana Faro SDKs (POST /v1/faro/collect): one row per item (a log, an
-- exception, a measurement, an event or a batch of traces), with the payload's meta, so a user session's items
-- line up with the platform requests they mention (request_id) and those requests' cost.
CREATE TABLE IF NOT EXISTS faro_items
(
    received_at DateTime64(3, 'UTC'),
    timestamp DateTime64(3, 'UTC'),           -- the item's own time (received_at when it had none)
    kind LowCardinality(String),              -- log, exception, measurement, event, traces
    app LowCardinality(String),               -- meta.app.name (the front-end app whose key was used)
    app_namespace String,
    release String,
    app_version String,
    environment LowCardinality(String),
    session_id String,                        -- meta.session.id, else the x-faro-session-id header
    user_id String,
    page_url String,
    level LowCardinality(String),             -- logs: debug, info, warn, error, ...
    message String,                           -- log message, "Type: value" of an exception, event name, measurement type
    domain String,                            -- events
    values Map(String, Float64),              -- measurements
    attributes Map(String, String),           -- log/exception/measurement context, event attributes, session attributes
    trace_id String,
    span_id String,
    request_id String,                        -- a platform request id the item mentions ('' when none)
    raw String CODEC(ZSTD(3))                 -- the item JSON as received
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(timestamp)
ORDER BY (app, session_id, timestamp)
TTL toDateTime(timestamp) + INTERVAL 90 DAY
SETTINGS non_replicated_deduplication_window = 10000;
