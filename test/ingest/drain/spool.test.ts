// The spool through its interface (spool/spool.ts), then what is particular to its SQLite storage.
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSpool as openAnySpool } from '../../../src/ingest/drain/spool/open-spool.js';
import { SqliteSpool } from '../../../src/ingest/drain/spool/sqlite-spool.js';
import { SpoolFullError, type Spool, type SpoolOptions, type SpoolRecord } from '../../../src/ingest/drain/spool/spool.js';
import { DataStage, StagingBudget } from '../../../src/ingest/drain/stage-body.js';

const opened: Spool[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close().catch(() => undefined);
});

const tempDir = () => mkdtempSync(join(tmpdir(), 'spool-test-'));

async function record(spool: Spool, rows: string[], rejects: string[] = [], budget = new StagingBudget(1 << 30), memory = 1 << 30) {
  const r = new DataStage(budget, memory, () => spool.stagingPath());
  const j = new DataStage(budget, memory, () => spool.stagingPath());
  for (const row of rows) r.add(row);
  for (const row of rejects) j.add(row);
  const id = createHash('sha256').update(JSON.stringify([rows, rejects])).digest('hex');
  // wall-clock: the spool's dedup window counts from the machine's clock
  return { id, receivedAtMs: Date.now(), rowFormat: { format: 'JSONEachRow' }, rows: await r.finish(), rejects: await j.finish(), release: () => Promise.all([r.release(), j.release()]) };
}

async function append(spool: Spool, rows: string[], rejects: string[] = []) {
  const rec = await record(spool, rows, rejects);
  try {
    return await spool.append(rec);
  } finally {
    await rec.release();
  }
}

const rowsOf = (records: SpoolRecord[]) => records.flatMap((r) => r.rowData.toString().split('\n').filter(Boolean));
const ALL = { maxRows: Infinity, maxBytes: Infinity };

/** Takes every batch out of the spool, as the replayer does once the store confirmed each. */
async function drain(spool: Spool, limits = ALL): Promise<SpoolRecord[]> {
  const out: SpoolRecord[] = [];
  for (let batch = await spool.nextBatch(limits); batch; batch = await spool.nextBatch(limits)) {
    out.push(...batch.records);
    await spool.commit(batch);
  }
  return out;
}

describe('spool', () => {
  const openSpool = async (dir: string, opts: Partial<SpoolOptions> = {}) => {
    const s = await openAnySpool({ dir, maxBytes: 64 * 1024 * 1024, ...opts });
    opened.push(s);
    return s;
  };

  it('appends records that read back intact and in order', async () => {
    const spool = await openSpool(tempDir());
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => append(spool, [`{"n":${i},"a":1}`, `{"n":${i},"a":2}`], i % 3 === 0 ? [`{"bad":${i}}`] : [])));
    expect(results.every((r) => r.status === 'appended')).toBe(true);
    expect(spool.pendingRows).toBe(40);
    expect(spool.appendedRecords).toBe(20);
    const records = await drain(spool);
    expect(records).toHaveLength(20);
    expect(rowsOf(records)).toEqual(Array.from({ length: 20 }, (_, i) => [`{"n":${i},"a":1}`, `{"n":${i},"a":2}`]).flat());
    expect(records.filter((r) => r.rejects === 1).map((r) => r.rejectData.toString())).toEqual([0, 3, 6, 9, 12, 15, 18].map((i) => `{"bad":${i}}\n`));
    expect([spool.bytes, spool.pendingRows, spool.replayedRecords]).toEqual([0, 0, 20]);
  });

  it('recognises a body it already holds, also a concurrent copy, also after a restart and after replay', async () => {
    const dir = tempDir();
    let spool = await openSpool(dir);
    const [a, b] = await Promise.all([append(spool, ['{"x":1}']), append(spool, ['{"x":1}'])]);
    expect([a.status, b.status].sort()).toEqual(['appended', 'duplicate']);
    expect((await append(spool, ['{"x":1}'])).status).toBe('duplicate');
    await spool.close();

    // Known from the spool that holds it.
    spool = await openSpool(dir);
    expect((await append(spool, ['{"x":1}'])).status).toBe('duplicate');
    await append(spool, ['{"x":2}']);
    await append(spool, ['{"x":3}']);
    // Replayed and gone from the spool: still known.
    expect(rowsOf(await drain(spool))).toEqual(['{"x":1}', '{"x":2}', '{"x":3}']);
    await spool.close();
    spool = await openSpool(dir);
    expect((await append(spool, ['{"x":1}'])).status).toBe('duplicate');
    expect((await append(spool, ['{"x":2}'])).status).toBe('duplicate');
    expect((await append(spool, ['{"x":4}'])).status).toBe('appended');
    expect(rowsOf(await drain(spool))).toEqual(['{"x":4}']);
  });

  it('keeps the batch being inserted across a restart, and hands out exactly it again', async () => {
    const dir = tempDir();
    let spool = await openSpool(dir);
    for (let i = 0; i < 4; i++) await append(spool, [`{"i":${i}}`]);
    const first = (await spool.nextBatch({ maxRows: 2, maxBytes: Infinity }))!;
    expect(first.records).toHaveLength(2);
    expect(first.resumed).toBe(false);
    await spool.close();

    spool = await openSpool(dir);
    await append(spool, ['{"i":4}']);
    const again = (await spool.nextBatch(ALL))!;
    expect(again.resumed).toBe(true);
    expect(again.records.map((r) => r.id)).toEqual(first.records.map((r) => r.id));
    await spool.commit(again);
    expect(spool.pendingRows).toBe(3);
    expect(rowsOf(await drain(spool))).toEqual(['{"i":2}', '{"i":3}', '{"i":4}']);
  });

  it('refuses a record that would pass the size limit, and takes it once the store caught up', async () => {
    const spool = await openSpool(tempDir(), { maxBytes: 400, retryAfterSeconds: 7 });
    await append(spool, [`{"pad":"${'p'.repeat(200)}"}`]);
    const err = await append(spool, [`{"pad":"${'q'.repeat(200)}"}`]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SpoolFullError);
    expect((err as SpoolFullError).retryAfterSeconds).toBe(7);
    expect(spool.isFull()).toBe(false);
    await drain(spool);
    expect((await append(spool, [`{"pad":"${'q'.repeat(200)}"}`])).status).toBe('appended');
  });

  it('takes rows spilled to a staging file, and the staging budget makes requests spill', async () => {
    const spool = await openSpool(tempDir());
    const budget = new StagingBudget(1000);
    const stage = new DataStage(budget, 1 << 20, () => spool.stagingPath());
    const rows = Array.from({ length: 5000 }, (_, i) => `{"i":${i},"m":"${'m'.repeat(i % 50)}"}`);
    let spills = 0;
    for (const row of rows) {
      stage.add(row);
      if (stage.shouldSpill) {
        await stage.spill();
        spills++;
      }
    }
    expect(spills).toBeGreaterThan(1);
    expect(budget.used).toBeLessThanOrEqual(1000 + 70 * 1024);
    const staged = await stage.finish();
    expect(staged.file).toBeDefined();
    const rejects = await new DataStage(budget, 1 << 20, () => spool.stagingPath()).finish();
    // wall-clock: the spool's dedup window counts from the machine's clock
    await spool.append({ id: 'f'.repeat(64), receivedAtMs: Date.now(), rowFormat: { format: 'JSONEachRow' }, rows: staged, rejects });
    await stage.release();
    expect(budget.used).toBe(0);
    expect(readdirSync(spool.stagingDir)).toEqual([]);
    expect(rowsOf(await drain(spool))).toEqual(rows);
  });
});

describe('SQLite spool', () => {
  it('commits concurrent appends together (group commit)', async () => {
    const spool = (await SqliteSpool.open({ dir: tempDir(), maxBytes: 64 * 1024 * 1024 })) as SqliteSpool;
    opened.push(spool);
    await Promise.all(Array.from({ length: 20 }, (_, i) => append(spool, [`{"n":${i}}`])));
    // The first append commits alone; the other 19 queue meanwhile and share the next transaction(s).
    expect(spool.commits).toBeGreaterThanOrEqual(2);
    expect(spool.commits).toBeLessThan(20);
    expect(rowsOf(await drain(spool)).map((r) => JSON.parse(r).n)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });
});
