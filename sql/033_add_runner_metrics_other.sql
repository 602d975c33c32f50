-- Per-runner metric families beyond the five Tallyhouse reads into columns (issue 50.4: the platform notes say to
-- treat family names and labels as data): kept as delivered, a JSON array of {name, labels, value}, on the runner's
-- first row of the scrape (GPU 0, or -1 without GPU). Empty when the exposition held only the known families.
ALTER TABLE runner_metrics ADD COLUMN IF NOT EXISTS other String DEFAULT '' CODEC(ZSTD(3)) AFTER vram_total_bytes;
