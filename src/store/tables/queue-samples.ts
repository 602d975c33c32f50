// The queue backlog per app over time (sql/022_add_logs_origin_and_queue_samples.sql), sampled by the queue job.
import { z } from 'zod';
import { chNumber, defineTable, namedQuery } from './table.js';

export const QueueSampleRow = z.object({
  endpoint_id: z.string(), // owner/app
  sampled_at: z.string(), // DateTime64(3) UTC text
  queue_size: z.number().int().nonnegative(),
});
export type QueueSampleRow = z.input<typeof QueueSampleRow>;

export const queueSamples = defineTable('queue_samples', QueueSampleRow);

/**
 * Each app's latest sample, for apps sampled in the hour before the newest sample (an app no longer sampled drops
 * out). The hour is counted from the newest sample rather than the wall clock: samples carry the platform's clock.
 */
export const latestQueueSizes = namedQuery(
  'latest_queue_sizes',
  `SELECT endpoint_id, argMax(queue_size, sampled_at) AS queue_size
   FROM queue_samples
   WHERE sampled_at >= (SELECT max(sampled_at) FROM queue_samples) - INTERVAL 1 HOUR
   GROUP BY endpoint_id
   ORDER BY queue_size DESC, endpoint_id`,
  z.object({ endpoint_id: z.string(), queue_size: chNumber }),
);
