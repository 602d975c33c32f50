import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export type DrainMetrics = ReturnType<typeof createDrainMetrics>;

/** The log drain's metrics; the spool gauges read the spool when scraped. */
export function createDrainMetrics(registry: Registry, spool: () => { bytes: number; pendingRows: number } | undefined) {
  const registers = [registry];
  return {
    lines: new Counter({
      name: 'tallyhouse_drain_lines_total',
      help: 'Drain lines answered: accepted (spooled for the store) or rejected (kept in ingest_rejects with the reason).',
      labelNames: ['outcome'],
      registers,
    }),
    bytes: new Counter({
      name: 'tallyhouse_drain_bytes_total',
      help: 'Drain request body bytes received, as sent (compressed when the body is gzip).',
      registers,
    }),
    requests: new Counter({
      name: 'tallyhouse_drain_requests_total',
      help: 'Drain requests by answer status (aborted: the sender went away before the answer).',
      labelNames: ['status'],
      registers,
    }),
    requestSeconds: new Histogram({
      name: 'tallyhouse_drain_request_duration_seconds',
      help: 'Time from a drain request to its answer (the platform gives up after 10 s).',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
      registers,
    }),
    spoolBytes: new Gauge({
      name: 'tallyhouse_drain_spool_bytes',
      help: 'Bytes in the drain spool not yet confirmed by the store (503 at LOG_DRAIN_SPOOL_MAX_BYTES).',
      registers,
      collect() {
        const s = spool();
        if (s) this.set(s.bytes);
      },
    }),
    spoolLines: new Gauge({
      name: 'tallyhouse_drain_spool_lines',
      help: 'Accepted lines in the drain spool not yet confirmed by the store.',
      registers,
      collect() {
        const s = spool();
        if (s) this.set(s.pendingRows);
      },
    }),
    replayedLines: new Counter({
      name: 'tallyhouse_drain_replayed_lines_total',
      help: 'Lines the store confirmed from the drain spool.',
      registers,
    }),
    replayBatchSeconds: new Histogram({
      name: 'tallyhouse_drain_replay_batch_duration_seconds',
      help: 'Time to move one batch of spool records into the store (read, insert, commit).',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    replayBatchLines: new Histogram({
      name: 'tallyhouse_drain_replay_batch_lines',
      help: 'Lines per batch moved from the spool into the store.',
      buckets: [100, 1000, 5000, 10_000, 25_000, 50_000, 100_000],
      registers,
    }),
    replayFailures: new Counter({
      name: 'tallyhouse_drain_replay_failures_total',
      help: 'Failed spool replay inserts, by kind (transient: retried with the same token; data: rows isolated).',
      labelNames: ['kind'],
      registers,
    }),
    copiesKept: new Counter({
      name: 'tallyhouse_drain_history_copies_kept_total',
      help: 'Replayed batches whose history copies the store refused to delete (e.g. a user without ALTER DELETE): those records may be stored twice.',
      registers,
    }),
    duplicates: new Counter({
      name: 'tallyhouse_drain_duplicate_batches_total',
      help: 'Drain bodies received again within the dedup window (answered 200, not stored again).',
      registers,
    }),
  };
}
