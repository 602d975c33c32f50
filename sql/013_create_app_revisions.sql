-- Revision history per app (GET /v1/serverless/apps/{owner}/{name}/revisions): deployment status, deployer,
-- message, annotations. Every run stores each revision again (is_current moves); the latest version wins.
CREATE TABLE IF NOT EXISTS app_revisions
(
    owner String,
    name String,
    endpoint_id String,                          -- the app's endpoint id, `owner/name`
    revision_id String,
    created_at DateTime64(3, 'UTC'),
    is_current Nullable(Bool),                   -- the revision serving when collected
    status LowCardinality(Nullable(String)),     -- DEPLOYED, FAILED, ... as delivered
    deployed_by Nullable(String),
    message Nullable(String),
    annotations String,                          -- JSON as delivered ('null' when absent)
    raw String CODEC(ZSTD(3)),                   -- the revision JSON as delivered
    version UInt64,                              -- collection time, ms since epoch: the latest wins
    collected_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (owner, name, revision_id)
SETTINGS non_replicated_deduplication_window = 1000;
