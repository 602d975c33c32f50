import { z } from 'zod';
import { defineTable, namedQuery } from './table.js';
import type { Store } from '../client.js';
import type { BatchWriter } from '../writer.js';
import { nextVersionMs, toDateTime64 } from '../../values.js';

export const CheckpointRow = z.object({
  job: z.string(),
  key: z.string(),
  value: z.string(),
  updated_at: z.string(),
});
export type CheckpointRow = z.input<typeof CheckpointRow>;

export const checkpoints = defineTable('checkpoints', CheckpointRow);

const readCheckpoint = namedQuery(
  'read_checkpoint',
  `SELECT argMax(value, updated_at) AS value FROM checkpoints WHERE job = {job:String} AND key = {key:String} GROUP BY job, key`,
  z.object({ value: z.string() }),
);

/**
 * Checkpoints per job and key. `save()` resolves once the checkpoint is committed; callers save one only
 * after the data it covers is committed (CONTRIBUTING.md rule 8), so a restarted job resumes without a gap.
 */
export class Checkpoints {
  /** `scope` (a collector shard, "shard 1/2") is added to every key, so instances sharing a store keep their own. */
  constructor(
    private readonly store: Pick<Store, 'client'>,
    private readonly writer: BatchWriter,
    private readonly scope?: string,
  ) {}

  private scoped(key: string): string {
    return this.scope ? `${key} @${this.scope}` : key;
  }

  async get(job: string, key: string): Promise<string | undefined> {
    const [row] = await readCheckpoint(this.store, { job, key: this.scoped(key) });
    return row?.value;
  }

  async save(job: string, key: string, value: string): Promise<void> {
    // Strictly increasing timestamps, so two saves within a millisecond still order correctly.
    const saved = this.writer.insert(checkpoints, [
      { job, key: this.scoped(key), value, updated_at: toDateTime64(nextVersionMs()) } satisfies CheckpointRow,
    ]);
    await this.writer.flush(checkpoints);
    await saved;
  }
}
