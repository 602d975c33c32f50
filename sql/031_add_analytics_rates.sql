-- The interface's base analytics carry success and error *rates* (platform-interface.md, "Analytics metric
-- names"); a platform serving only the interface gives no success/error counts, so the rates are stored as
-- delivered (issue 50.2). A platform that gives counts leaves them NULL.
-- success_rate: share of requests answered 2xx, 0-1
ALTER TABLE analytics_buckets ADD COLUMN IF NOT EXISTS success_rate Nullable(Float64) AFTER total_billable_duration;
-- error_rate: share of requests answered 5xx, 0-1
ALTER TABLE analytics_buckets ADD COLUMN IF NOT EXISTS error_rate Nullable(Float64) AFTER success_rate;
