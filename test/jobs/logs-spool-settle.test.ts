// The logs job leaves gap filling to a later run while the drain's spool holds lines the store has not taken (a
// fill now would store them twice). The spool also holds every batch for the moment between its acknowledgement
// and its replay: a run that met such a batch skipped its fill and logged "the spool still holds 6 line(s)", every
// five minutes in the demo (issue 30.13). It now waits a moment for a batch in flight; a spool that stays full
// (the store down) still makes it skip.
import { Gauge } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { spoolDrained } from '../../jobs/logs.js';
import { createRegistry } from '../../src/metrics.js';
import type { JobContext } from '../../src/collectors/job.js';

function contextWithSpool(lines: number): { ctx: Pick<JobContext, 'runtime'>; gauge: Gauge } {
  const registry = createRegistry({ defaultMetrics: false });
  const gauge = new Gauge({ name: 'tallyhouse_drain_spool_lines', help: 'lines in the spool', registers: [registry] });
  gauge.set(lines);
  return { ctx: { runtime: { registry } } as unknown as Pick<JobContext, 'runtime'>, gauge };
}

describe('logs job and the drain spool', () => {
  it('a batch in flight (replayed while the run waits) does not make the run skip: nothing is left held', async () => {
    const { ctx, gauge } = contextWithSpool(6);
    const replayed = new Promise<void>((resolve) =>
      setImmediate(() => {
        gauge.set(0);
        resolve();
      }),
    );
    // A settle time far longer than the batch takes, so a busy machine cannot make the test race.
    const held = await spoolDrained(ctx, 60_000);
    await replayed;
    expect(held).toBe(0);
  });

  it('a spool that keeps its lines (the store unreachable) is reported held once the settle time is over', async () => {
    const { ctx } = contextWithSpool(6);
    expect(await spoolDrained(ctx, 300)).toBe(6);
  });

  it('no drain spool gauge (no drain in this process): nothing held', async () => {
    const ctx = { runtime: { registry: createRegistry({ defaultMetrics: false }) } } as unknown as Pick<JobContext, 'runtime'>;
    expect(await spoolDrained(ctx, 300)).toBe(0);
  });
});
