// When the replayer inserts: a full batch (maxBatchBytes of records, or maxBatchRows) at once, anything less after
// lingerMs. Rows that arrive while an insert runs wait for company too, rather than going as an insert of their own:
// each insert is a part the store writes and later merges again, and in a 1M-line bench run the inserts of whatever
// arrived during the previous one were 20,000 lines each (49 inserts) where full batches were 45,000.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { openSpool } from '../../../src/ingest/drain/spool/open-spool.js';
import type { Spool, StagedData } from '../../../src/ingest/drain/spool/spool.js';
import { SpoolReplayer } from '../../../src/ingest/drain/replay.js';
import type { Store } from '../../../src/store/client.js';
import type { BatchWriter } from '../../../src/store/writer.js';

const staged = (text: string): StagedData => ({ count: text.split('\n').length - 1, bytes: Buffer.byteLength(text), crc: 0, file: undefined, memory: [Buffer.from(text)] });

/** `bytes` bytes of JSONEachRow rows named `tag` (one row per 100 bytes, newline included). */
function rowsOf(tag: string, bytes: number): string {
  const row = (i: number) => {
    const head = `{"tag":"${tag}","i":${i},"pad":"`;
    return `${head}${'x'.repeat(100 - head.length - 3)}"}\n`;
  };
  return Array.from({ length: bytes / 100 }, (_, i) => row(i)).join('');
}

async function append(spool: Spool, tag: string, bytes: number): Promise<void> {
  // wall-clock: the spool's dedup window counts from the machine's clock
  const result = await spool.append({ id: tag.padEnd(64, '0'), receivedAtMs: Date.now(), rowFormat: { format: 'JSONEachRow' }, rows: staged(rowsOf(tag, bytes)), rejects: staged('') });
  expect(result).toEqual({ status: 'appended' });
}

/** A store whose inserts are recorded (the tags of their rows, in order) and held until the test lets them go. */
function heldStore() {
  const inserts: string[][] = [];
  const waiting: Array<() => void> = [];
  let insertSeen: (() => void) | undefined;
  const store = {
    mode: 'server',
    client: {
      async exec(params: { values: Readable }) {
        let text = '';
        for await (const chunk of params.values) text += chunk.toString();
        const tags = [...new Set(text.split('\n').filter(Boolean).map((r) => (JSON.parse(r) as { tag: string }).tag))];
        inserts.push(tags);
        insertSeen?.();
        await new Promise<void>((resolve) => waiting.push(resolve));
        const { Readable: R } = await import('node:stream');
        return { stream: R.from([]) };
      },
    },
  } as unknown as Pick<Store, 'client' | 'mode'>;
  return {
    store,
    inserts,
    /** Resolves once the store has received `n` inserts. */
    async untilInserts(n: number) {
      while (inserts.length < n) await new Promise<void>((resolve) => (insertSeen = resolve));
    },
    releaseAll: () => waiting.splice(0).forEach((r) => r()),
  };
}

// Nothing here is refused by the store: the writer (for refused rows) is never called.
const noWriter = { reject: async () => ({ rows: 0 }) } as unknown as Pick<BatchWriter, 'reject'>;

const running: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of running.splice(0)) await stop();
});

describe('replay batching', () => {
  it('rows that arrive during an insert wait for a full batch rather than go alone: A, then B with C', async () => {
    const spool = await openSpool({ dir: mkdtempSync(join(tmpdir(), 'replay-batching-')), maxBytes: 1 << 30 });
    const held = heldStore();
    // The linger is far beyond the test: only a full batch (1,000 bytes) makes an insert here.
    const replayer = new SpoolReplayer({ spool, store: held.store, writer: noWriter, lingerMs: 600_000, maxBatchBytes: 1_000 });
    running.push(async () => {
      held.releaseAll();
      await replayer.stop();
      await spool.close();
    });
    replayer.start();
    await append(spool, 'A', 1_000); // a full batch: goes at once
    await held.untilInserts(1);
    await append(spool, 'B', 300); // arrives while A's insert runs
    held.releaseAll();
    await append(spool, 'C', 700); // B and C together make a full batch
    await held.untilInserts(2);
    // The old rule sent B alone as soon as A was stored (then C waited for the linger).
    expect(held.inserts).toEqual([['A'], ['B', 'C']]);
    held.releaseAll();
    await replayer.whenReplayed();
    expect([spool.bytes, spool.pendingRows]).toEqual([0, 0]);
  });

  it('records a full batch left behind (the store is behind) go at once, full batches first', async () => {
    const spool = await openSpool({ dir: mkdtempSync(join(tmpdir(), 'replay-batching-')), maxBytes: 1 << 30 });
    // Appended before the replayer starts: 2,500 bytes, more than two full batches.
    await append(spool, 'D', 600);
    await append(spool, 'E', 400);
    await append(spool, 'F', 1_000);
    await append(spool, 'G', 500);
    const held = heldStore();
    const replayer = new SpoolReplayer({ spool, store: held.store, writer: noWriter, lingerMs: 600_000, maxBatchBytes: 1_000 });
    running.push(async () => {
      held.releaseAll();
      await replayer.stop();
      await spool.close();
    });
    replayer.start();
    await held.untilInserts(1);
    held.releaseAll();
    await held.untilInserts(2);
    held.releaseAll();
    // G alone is less than a full batch but was waiting before the inserts began: it goes without the linger.
    await held.untilInserts(3);
    held.releaseAll();
    await replayer.whenReplayed();
    expect(held.inserts).toEqual([['D', 'E'], ['F'], ['G']]);
  });
  it('a memory budget of 3,000 bytes: batches of at most 1,000 bytes of records, as with maxBatchBytes 1,000', async () => {
    const spool = await openSpool({ dir: mkdtempSync(join(tmpdir(), 'replay-batching-')), maxBytes: 1 << 30 });
    // 2,700 bytes waiting: H+I (900) fit in a third of the budget, J (600) with K (400) makes 1,000, L (800) alone.
    for (const [tag, bytes] of [['H', 500], ['I', 400], ['J', 600], ['K', 400], ['L', 800]] as const) await append(spool, tag, bytes);
    const held = heldStore();
    const replayer = new SpoolReplayer({ spool, store: held.store, writer: noWriter, lingerMs: 600_000, memoryBudgetBytes: 3_000 });
    running.push(async () => {
      held.releaseAll();
      await replayer.stop();
      await spool.close();
    });
    replayer.start();
    // Each insert is let go as it comes, until everything is stored.
    let replayed = false;
    const done = replayer.whenReplayed().then(() => (replayed = true));
    while (!replayed) {
      await Promise.race([held.untilInserts(held.inserts.length + 1), done]);
      held.releaseAll();
    }
    // Without the budget (16 MiB batches) all five went as one insert.
    expect(held.inserts).toEqual([['H', 'I'], ['J', 'K'], ['L']]);
    expect([spool.bytes, spool.pendingRows]).toEqual([0, 0]);
  });
});
