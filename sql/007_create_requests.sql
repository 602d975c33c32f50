-- Serverless requests with their billable units (GET /v1/serverless/requests/by-endpoint?expand=billing), one
-- row per request, columns named as the platform names the fields. A request is collected again while its
-- billing may still be missing (the REQUESTS_RECOLLECT_HOURS window), so the same request arrives several times.
--
-- "Billed wins" is structural: version = (billable_units IS NOT NULL) * 2^52 + collection time in ms, so any
-- copy with billable units outranks every copy without, whatever order they were collected or merged in, and
-- among copies of the same kind the latest wins. (2^52 rather than 2^62: the version stays an exact JavaScript
-- number; collection times stay below 2^52 ms for another 140,000 years.) Read with FINAL: the named queries in
-- src/store/tables/requests.ts do.
--
-- Key: (endpoint_id, ended_at, request_id). Every reader asks for endpoints over an ended_at range, the platform
-- pages in ended_at order (so inserts are nearly sorted), and a request's ended_at never changes, so each copy of
-- a request lands on the same key. Monthly partitions keep FINAL's merge work per partition and let a range
-- prune whole months.
CREATE TABLE IF NOT EXISTS requests
(
    request_id String,                           -- the queue request id
    gateway_request_id Nullable(String),         -- id of the last tried attempt (= request_id unless retried); NULL when absent
    endpoint_id LowCardinality(String),          -- the concrete endpoint: `owner/app` or `owner/app/<route>`
    started_at Nullable(DateTime64(3, 'UTC')),   -- request received
    sent_at Nullable(DateTime64(3, 'UTC')),      -- handed to a runner
    ended_at DateTime64(3, 'UTC'),               -- finished; the request belongs to the hour/day of this time
    status_code UInt16,                          -- HTTP status the caller got
    duration Float64,                            -- seconds (ended_at - sent_at); a measurement, not money
    runner_id Nullable(String),                  -- NULL when no runner served it (scheduling failure, startup timeout)
    billable_units Nullable(Decimal(38, 9)),     -- units billed (seconds or outputs); NULL until the platform records billing
    raw String CODEC(ZSTD(3)),                   -- JSON of the fields that have no column ('' when none): unknown fields kept
    version UInt64,                              -- (billable_units IS NOT NULL) * 2^52 + collection time in ms
    collected_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(ended_at)
ORDER BY (endpoint_id, ended_at, request_id)
SETTINGS non_replicated_deduplication_window = 1000;
