-- The cost queries read a range of local days (bucket_date), which is in neither the partition key (the month of
-- the UTC bucket) nor the sorting key, so every one of them read the whole usage table: GET /reports/finance of one
-- month read all 230,221 rows (19.8 MB) of a 500-app year (issue 34.4). A minmax index per granule on bucket_date
-- skips the granules outside the range. A local day and its UTC bucket are one row's columns and a row's copies
-- share their sorting key, so skipping granules never separates the copies FINAL merges; where the engine does not
-- use skip indexes with FINAL it reads as before. The second statement builds the index of the parts written before
-- this migration (a background mutation; re-running it rebuilds the same index).
ALTER TABLE usage_buckets ADD INDEX IF NOT EXISTS bucket_date_minmax bucket_date TYPE minmax GRANULARITY 1;
ALTER TABLE usage_buckets MATERIALIZE INDEX bucket_date_minmax;
ALTER TABLE model_usage_buckets ADD INDEX IF NOT EXISTS bucket_date_minmax bucket_date TYPE minmax GRANULARITY 1;
ALTER TABLE model_usage_buckets MATERIALIZE INDEX bucket_date_minmax;
