// Issue 44.6 (left from earlier rounds): the Faro spool's salvage could double the items of an incomplete plan.
// The replayer inserts a batch (its token made of the batch's record ids), and the process dies before the spool
// lets go of it: the saved plan replays the same records under the same token, so the store keeps them once. But when
// the file is then damaged and some of the plan's records are lost, the salvage dropped the plan, and the records it
// read went again in a batch of other ids: a new token, so every item the store already had was stored a second
// time, for good (`faro_items` is a plain MergeTree; FINAL does not apply). The spool now keeps the plan's ids with
// the plan, and the salvaged rest of the batch replays under the tokens of all of them.
// Oracle: the items appended, each once (raw count); the leaves damaged are chosen from SQLite's dbstat.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteSpool } from '../../src/ingest/drain/spool/sqlite-spool.js';
import { SpoolReplayer } from '../../src/ingest/drain/replay.js';
import type { StagedData } from '../../src/ingest/drain/spool/spool.js';
import type { Runtime } from '../../src/runtime.js';
import { closeRuntime } from '../../src/service.js';
import { openTestRuntime, queryRows } from '../support/store.js';
import { SPOOL_SQLITE_DRIVER } from '../support/sqlite-error.js';

let rt: Runtime;
beforeAll(async () => {
  rt = await openTestRuntime();
});
afterAll(async () => {
  await closeRuntime(rt);
});

const ITEMS = 12;
const staged = (text: string): StagedData => ({ count: text.split('\n').length - 1, bytes: Buffer.byteLength(text), crc: 0, file: undefined, memory: text ? [Buffer.from(text)] : [] });
/** One Faro item as the receiver spools it (a faro_items row), large enough that a leaf holds a few. */
const item = (i: number) =>
  `${JSON.stringify({ received_at: '2026-11-20 10:00:00.000', timestamp: `2026-11-20 10:00:${String(i).padStart(2, '0')}.000`, kind: 'log', app: 'web', session_id: 's-1', message: `item-${i}`, raw: 'r'.repeat(1200) })}\n`;

// dbstat through better-sqlite3, as the spool's salvage tests (better-sqlite3 aborts Node 24 processes).
const suite = describe.skipIf(SPOOL_SQLITE_DRIVER !== 'better-sqlite3');

suite('the Faro spool: a batch stored, then its file damaged before the spool let go of it', () => {
  it('the salvaged rest of the batch is not stored again: every item once in faro_items (raw rows)', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'faro-plan-')), 'faro');
    let spool = await SqliteSpool.open({ dir, maxBytes: 64 << 20, commitThread: false });
    for (let i = 0; i < ITEMS; i++) {
      await spool.append({ id: String(i).padStart(64, 'f'), receivedAtMs: 1_795_000_000_000 + i, rowFormat: { format: 'JSONEachRow' }, rows: staged(item(i)), rejects: staged('') });
    }
    // The batch reaches the store; the process dies before the spool lets go of it (the plan stays saved).
    let inserted!: () => void;
    const insertedOnce = new Promise<void>((resolve) => (inserted = resolve));
    const dying = new SpoolReplayer({
      spool,
      table: 'faro_items',
      store: rt.store,
      writer: rt.writer,
      lingerMs: 0,
      backoffMaxMs: 60_000,
      afterInsert: async () => {
        inserted();
        throw new Error('killed after the insert');
      },
    });
    dying.start();
    await insertedOnce;
    await dying.stop();
    await spool.close();
    const count = async () => Number((await queryRows<{ n: string }>(rt, "SELECT count() AS n FROM faro_items WHERE app = 'web'"))[0].n);
    expect(await count()).toBe(ITEMS);

    // A leaf of the batch's records damaged: its items are lost with it.
    const file = join(dir, 'spool.sqlite');
    const db = new Database(file, { readonly: true });
    const pageSize = Number(db.pragma('page_size', { simple: true }));
    const leaves = (db.prepare("SELECT path, pageno, ncell FROM dbstat WHERE name = 'records' AND pagetype = 'leaf'").all() as Array<{ path: string; pageno: number; ncell: number }>).sort((a, b) => (a.path < b.path ? -1 : 1));
    db.close();
    expect(leaves.length).toBeGreaterThan(2);
    const bytes = readFileSync(file);
    bytes.fill(0xa5, (leaves[1].pageno - 1) * pageSize, leaves[1].pageno * pageSize);
    writeFileSync(file, bytes);

    spool = await SqliteSpool.open({ dir, maxBytes: 64 << 20, commitThread: false });
    try {
      expect(spool.appendedRecords).toBe(ITEMS - leaves[1].ncell);
      const replayer = new SpoolReplayer({ spool, table: 'faro_items', store: rt.store, writer: rt.writer, lingerMs: 0 });
      replayer.start();
      await replayer.whenReplayed();
      await replayer.stop();
      expect(spool.bytes).toBe(0);
    } finally {
      await spool.close();
    }
    const rows = await queryRows<{ message: string; n: string }>(rt, "SELECT message, count() AS n FROM faro_items WHERE app = 'web' GROUP BY message ORDER BY message");
    expect(rows).toEqual(Array.from({ length: ITEMS }, (_, i) => `item-${i}`).sort().map((message) => ({ message, n: '1' })));
  });
});
