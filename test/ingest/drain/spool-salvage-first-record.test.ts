// Issue 44.5: the salvage counted lost records from the first record it could read to the last, so a lost first
// record was not counted: a spool whose one acknowledged 2,000-line batch was on a damaged page said "at least 0
// lost". The spool now keeps a replay watermark (every seq up to it is in the store), so its live records are the
// seqs from the watermark to the last seq given, and each one not read is counted. Oracle: SQLite's dbstat on the
// undamaged file says which leaf holds which record (as spool-salvage.mutation.test.ts does).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { leavesOf } from './spool-pages.js';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { salvageSpool } from '../../../src/ingest/drain/spool/salvage.js';
import { SqliteSpool } from '../../../src/ingest/drain/spool/sqlite-spool.js';
import type { StagedData } from '../../../src/ingest/drain/spool/spool.js';
import { captureLog } from '../../support/log-capture.js';
import { SPOOL_SQLITE_DRIVER } from '../../support/sqlite-error.js';

// better-sqlite3 (for dbstat) aborts Node 24 processes when V8 collects a statement: as spool-salvage.mutation.test.ts.
const suite = describe.skipIf(SPOOL_SQLITE_DRIVER !== 'better-sqlite3');

const staged = (text: string): StagedData => ({ count: text.split('\n').length - 1, bytes: Buffer.byteLength(text), crc: 0, file: undefined, memory: [Buffer.from(text)] });
const body = (id: string, lines: number) =>
  Array.from({ length: lines }, (_, l) => `{"b":"${id}","l":${l},"pad":"${'p'.repeat(40)}"}\n`).join('');
const rec = (id: string, lines = 1) => ({ id, receivedAtMs: 1_795_000_000_000, rowFormat: { format: 'JSONEachRow' }, rows: staged(body(id, lines)), rejects: staged('') });


function garbageOver(file: string, pageno: number, pageSize: number): void {
  const bytes = readFileSync(file);
  bytes.fill(0xa5, (pageno - 1) * pageSize, pageno * pageSize);
  writeFileSync(file, bytes);
}

/** A spool in a new folder, its file checkpointed (closed), holding what `fill` left. */
async function spoolFile(fill: (s: SqliteSpool) => Promise<void>): Promise<{ dir: string; file: string }> {
  const dir = join(mkdtempSync(join(tmpdir(), 'spool-first-')), 'logs');
  const spool = await SqliteSpool.open({ dir, maxBytes: 64 << 20, commitThread: false });
  try {
    await fill(spool);
  } finally {
    await spool.close();
  }
  return { dir, file: join(dir, 'spool.sqlite') };
}

suite('salvage counts the records it could not read, the first ones included', () => {
  it('the one acknowledged 2,000-line batch on a damaged page: 1 lost, exactly (was "at least 0")', async () => {
    const { dir, file } = await spoolFile(async (s) => {
      // Earlier batches replayed into the store: the live seqs start above 1.
      for (const id of ['old-0', 'old-1', 'old-2']) await s.append(rec(id));
      await s.commit((await s.nextBatch({ maxRows: Infinity, maxBytes: Infinity }))!);
      await s.append(rec('big', 2000));
    });
    const { pageSize, leaves } = leavesOf(file);
    expect(leaves.map((l) => l.ncell)).toEqual([1]);
    garbageOver(file, leaves[0].pageno, pageSize);

    const salvage = salvageSpool(file, join(dir, 'salvage'));
    expect([salvage.records.length, salvage.lostRecords, salvage.lostExact]).toEqual([0, 1, true]);

    // The spool's own recovery says so, in the log and the counter.
    const registry = new Registry();
    const { logger, lines } = captureLog('info');
    const spool = await SqliteSpool.open({ dir, maxBytes: 64 << 20, commitThread: false, registry, logger });
    try {
      expect(lines[0]).toMatchObject({ level: 50, salvagedRecords: 0, lostRecords: 1, lostExact: true });
      expect(String(lines[0].msg)).toContain('0 record(s) salvaged and replayed, 1 lost;');
      expect((await registry.getSingleMetric('tallyhouse_spool_lost_records_total')!.get()).values.map((v) => v.value)).toEqual([1]);
    } finally {
      await spool.close();
    }
  });

  it('the first leaf of live records damaged: each record on it counted lost, the rest salvaged', async () => {
    const { dir, file } = await spoolFile(async (s) => {
      for (let i = 0; i < 20; i++) await s.append(rec(`gone-${i}`, 3));
      await s.commit((await s.nextBatch({ maxRows: Infinity, maxBytes: Infinity }))!);
      for (let i = 0; i < 120; i++) await s.append(rec(`live-${i}`, 3));
    });
    const { pageSize, leaves } = leavesOf(file);
    expect(leaves.length).toBeGreaterThan(3);
    expect(leaves.reduce((n, l) => n + l.ncell, 0)).toBe(120);
    const onFirst = leaves[0].ncell;
    garbageOver(file, leaves[0].pageno, pageSize);

    const salvage = salvageSpool(file, join(dir, 'salvage'));
    expect(salvage.records.map((r) => r.id)).toEqual(Array.from({ length: 120 - onFirst }, (_, k) => `live-${onFirst + k}`));
    expect([salvage.lostRecords, salvage.lostExact]).toEqual([onFirst, true]);
  });
});
