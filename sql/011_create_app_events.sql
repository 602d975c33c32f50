-- Operational events per app (GET /v1/serverless/apps/{owner}/{name}/events): deployments, configuration
-- changes, runner lifecycle transitions. One row per event_id: the collector skips events it already stored,
-- and a repeat (an interrupted run) collapses on the key. Runner fields are lifted out of the free-form
-- payload; runner states are stored with the legacy `DEAD` as `TERMINATED` (in `state` and in `payload`),
-- unknown states as delivered; `raw` is the event exactly as delivered.
CREATE TABLE IF NOT EXISTS app_events
(
    owner String,
    name String,
    endpoint_id String,                          -- the app's endpoint id, `owner/name`
    event_id String,
    category LowCardinality(String),             -- runner_started, deployment_ended, config_changed, ... as delivered
    created_at DateTime64(3, 'UTC'),
    runner_id Nullable(String),                  -- payload.runner_id
    state LowCardinality(Nullable(String)),      -- payload.state: PENDING, DOCKER_PULL, SETUP, running, IDLE, draining, CRASH_BACKOFF, TERMINATED, ...
    termination_reason LowCardinality(Nullable(String)), -- payload.termination_reason
    machine_type LowCardinality(Nullable(String)),-- payload.machine_type
    revision_id Nullable(String),                -- payload.revision_id
    payload String CODEC(ZSTD(3)),               -- payload JSON (runner states normalised as above)
    raw String CODEC(ZSTD(3)),                   -- the event JSON as delivered
    version UInt64,                              -- collection time, ms since epoch
    collected_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(created_at)
ORDER BY (owner, name, event_id)
SETTINGS non_replicated_deduplication_window = 1000;
