import { describe, expect, it } from 'vitest';
import { runResumable } from '../../src/jobs/resumable.js';
import { silentProgress } from '../../src/progress.js';
import type { JobContext } from '../../src/collectors/job.js';
import type { Checkpoints } from '../../src/store/tables/checkpoints.js';

function fakeContext() {
  const store = new Map<string, string>();
  const saves: string[] = [];
  const checkpoints = {
    get: async (job: string, key: string) => store.get(`${job}|${key}`),
    save: async (job: string, key: string, value: string) => {
      store.set(`${job}|${key}`, value);
      saves.push(value);
    },
  } as unknown as Checkpoints;
  const logs: unknown[] = [];
  const ctx = {
    checkpoints,
    progress: silentProgress,
    signal: new AbortController().signal,
    log: { info: (fields: unknown) => logs.push(fields) } as unknown as JobContext['log'],
  };
  return { ctx, store, saves, logs };
}

const chunks = ['2026-01-01', '2026-02-01', '2026-03-01', '2026-04-01'].map((from) => ({ from }));

describe('runResumable', () => {
  it('saves the next chunk after each one, done after the last; an interrupted backfill resumes where it stopped', async () => {
    const { ctx, saves, logs } = fakeContext();
    const worked: string[] = [];
    const backfill = (failAt?: string) => ({
      job: 'usage',
      key: 'backfill:UTC:2026-01-01:2026-05-01',
      chunks,
      label: 'usage',
      position: (c: { from: string }) => c.from,
      logFields: { timezone: 'UTC' },
      work: async (c: { from: string }) => {
        if (c.from === failAt) throw new Error('interrupted');
        worked.push(c.from);
        return c.from;
      },
    });
    await expect(runResumable(ctx, backfill('2026-03-01'))).rejects.toThrow('interrupted');
    expect(saves).toEqual(['2026-02-01', '2026-03-01']);
    await runResumable(ctx, backfill());
    expect(worked).toEqual(['2026-01-01', '2026-02-01', '2026-03-01', '2026-04-01']);
    expect(saves).toEqual(['2026-02-01', '2026-03-01', '2026-04-01', 'done']);
    expect(logs).toEqual([{ timezone: 'UTC', resumeFrom: '2026-03-01' }]);
    // Finished: run again, it collects everything again.
    await runResumable(ctx, backfill());
    expect(worked).toHaveLength(8);
  });

  it('starts over when the saved position is no chunk of this run', async () => {
    const { ctx, store } = fakeContext();
    store.set('usage|k', '2026-02-15');
    const worked: string[] = [];
    await runResumable(ctx, { job: 'usage', key: 'k', chunks, label: 'usage', position: (c) => c.from, work: async (c) => (worked.push(c.from), '') });
    expect(worked).toEqual(chunks.map((c) => c.from));
    expect(store.get('usage|k')).toBe('done');
  });
});
