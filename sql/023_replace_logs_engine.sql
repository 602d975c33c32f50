-- One log record, one row, whoever writes it and however many at once (issue 28). `logs` was a plain MergeTree
-- keyed by (app, timestamp): two history fills of one span (two `collect logs`, the scheduled job beside a CLI fill,
-- two instances given one COLLECTOR_SHARD) each checked what was stored, then inserted, and both copies stayed.
-- Now the table is a ReplacingMergeTree whose sorting key is the record's identity (timestamp, app, request id,
-- worker, message: the platform notes' match, plus the worker, see src/collectors/logs.ts), so the engine
-- collapses copies: every read of `logs` says FINAL (src/store/tables/logs.ts, dashboards/) and sees one row per
-- record even before the background merges. Of two copies a merge keeps the drain's (then the tail's, then
-- history's) and, among equals, the one stored first (the live feed has shown it already): `copy_rank`.
-- The primary key stays (app, timestamp), the index the reads walk; the rest of the sorting key only orders rows.
--
-- The engine of a table cannot change in place: the rows are copied into a new table that takes the name `logs`.
-- Each statement is safe to run again from the top whatever point an interrupted run reached:
-- a partial copy is dropped and made again. The copy reads `logs` and, when a run stopped between the two
-- renames, the old table (`logs_022`), whose rows it takes before that is dropped (copies of a row collapse),
-- and an empty `logs` stands in for the renamed one so that the first rename finds a table.
DROP TABLE IF EXISTS logs_023_copy;

CREATE TABLE IF NOT EXISTS logs_023_copy
(
    timestamp DateTime64(3, 'UTC'),                 -- when the line was logged (the line's `timestamp`), UTC, ms
    level LowCardinality(String),                   -- as sent: DEBUG, INFO, WARNING, ERROR, ...
    app LowCardinality(String),                     -- svc_app_name ('' when the line has none)
    app_id LowCardinality(String),                  -- svc_app_id
    request_id String,                              -- svc_request_id
    job_id String,                                  -- svc_job_id
    endpoint LowCardinality(String),                -- svc_endpoint (<owner>/<app>[/route])
    node LowCardinality(String),                    -- svc_node_id
    worker String,                                  -- svc_worker_id (the runner)
    source LowCardinality(String),                  -- svc_source: gateway, runner, ...
    isolate_source LowCardinality(String),          -- svc_isolate_source: stdout, stderr, ...
    message String CODEC(ZSTD(3)),
    attributes Map(LowCardinality(String), String), -- every other key; non-string values as JSON text
    received_at DateTime64(3, 'UTC'),               -- when Tallyhouse accepted the batch, UTC, ms
    batch_id UUID,                                  -- the delivery (answered as batch_id; its rejects carry it too)
    line UInt32,                                    -- 1-based line (or array element) number within the batch
    origin LowCardinality(String) DEFAULT 'drain',  -- how the row arrived: drain, history or tail
    stored_at DateTime64(3, 'UTC') DEFAULT now64(3), -- when the store took the row, UTC, ms
    -- Which copy of a record a merge keeps (the highest): drain 2, tail 1, history 0, times 10^13, plus 10^13 - 1
    -- less stored_at in ms (the earliest stored of equals). A number, not a unit.
    copy_rank UInt64 MATERIALIZED multiIf(origin = 'drain', 2, origin = 'tail', 1, 0) * 10000000000000
        + (9999999999999 - toUnixTimestamp64Milli(stored_at)),
    INDEX request_id_bloom request_id TYPE bloom_filter(0.01) GRANULARITY 1,
    -- The live feed reads what was stored since its last poll: an insert is a part of one stored_at, so this skips
    -- every older part.
    INDEX stored_at_minmax stored_at TYPE minmax GRANULARITY 1
)
ENGINE = ReplacingMergeTree(copy_rank)
PARTITION BY toDate(timestamp)
PRIMARY KEY (app, timestamp)
ORDER BY (app, timestamp, request_id, worker, message)
TTL toDateTime(timestamp) + INTERVAL 30 DAY
SETTINGS non_replicated_deduplication_window = 10000, ttl_only_drop_parts = 1
AS SELECT timestamp, level, app, app_id, request_id, job_id, endpoint, node, worker, source, isolate_source, message,
          attributes, received_at, batch_id, line, origin, stored_at
   FROM merge(currentDatabase(), '^logs(_022)?$');

CREATE TABLE IF NOT EXISTS logs
(
    timestamp DateTime64(3, 'UTC'),
    level LowCardinality(String),
    app LowCardinality(String),
    app_id LowCardinality(String),
    request_id String,
    job_id String,
    endpoint LowCardinality(String),
    node LowCardinality(String),
    worker String,
    source LowCardinality(String),
    isolate_source LowCardinality(String),
    message String,
    attributes Map(LowCardinality(String), String),
    received_at DateTime64(3, 'UTC'),
    batch_id UUID,
    line UInt32,
    origin LowCardinality(String) DEFAULT 'drain',
    stored_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = MergeTree
ORDER BY (app, timestamp);

DROP TABLE IF EXISTS logs_022;

RENAME TABLE logs TO logs_022;

RENAME TABLE logs_023_copy TO logs;

DROP TABLE IF EXISTS logs_022;
