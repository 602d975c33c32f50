// The spool through its interface (spool/spool.ts), then what is particular to the segment files it keeps.
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, statSync, truncateSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSpool as openAnySpool } from '../../../src/ingest/drain/spool/open-spool.js';
import { SegmentSpool, type SegmentSpoolOptions } from '../../../src/ingest/drain/spool/segment-spool.js';
import { SpoolFullError, type Spool, type SpoolOptions, type SpoolRecord } from '../../../src/ingest/drain/spool/spool.js';
import { DataStage, StagingBudget } from '../../../src/ingest/drain/stage-body.js';

const opened: Spool[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close().catch(() => undefined);
});

async function openSegments(dir: string, opts: Partial<SegmentSpoolOptions> = {}): Promise<SegmentSpool> {
  const s = await SegmentSpool.open({ dir, maxBytes: 64 * 1024 * 1024, ...opts });
  opened.push(s);
  return s;
}

const tempDir = () => mkdtempSync(join(tmpdir(), 'spool-test-'));

async function record(spool: Spool, rows: string[], rejects: string[] = [], budget = new StagingBudget(1 << 30), memory = 1 << 30) {
  const r = new DataStage(budget, memory, () => spool.stagingPath());
  const j = new DataStage(budget, memory, () => spool.stagingPath());
  for (const row of rows) r.add(row);
  for (const row of rejects) j.add(row);
  const id = createHash('sha256').update(JSON.stringify([rows, rejects])).digest('hex');
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

describe.each(['sqlite', 'segments'] as const)('spool on %s', (backend) => {
  const openSpool = async (dir: string, opts: Partial<SpoolOptions> = {}) => {
    const s = await openAnySpool({ dir, maxBytes: 64 * 1024 * 1024, ...opts }, backend);
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
    await spool.append({ id: 'f'.repeat(64), receivedAtMs: Date.now(), rowFormat: { format: 'JSONEachRow' }, rows: staged, rejects });
    await stage.release();
    expect(budget.used).toBe(0);
    expect(readdirSync(spool.stagingDir)).toEqual([]);
    expect(rowsOf(await drain(spool))).toEqual(rows);
  });
});

describe('segment spool files', () => {
  const segmentFiles = (dir: string) => readdirSync(join(dir, 'segments')).filter((f) => f.endsWith('.seg')).sort();

  it('shares one fdatasync among concurrent appends (group commit)', async () => {
    const spool = await openSegments(tempDir());
    await Promise.all(Array.from({ length: 20 }, (_, i) => append(spool, [`{"n":${i}}`])));
    expect(spool.syncs).toBeLessThan(20);
  });

  it('ignores a torn tail on open, and appends to a new segment', async () => {
    const dir = tempDir();
    let spool: Spool = await openSegments(dir, { preallocate: false });
    for (let i = 0; i < 3; i++) await append(spool, [`{"i":${i}}`]);
    await spool.close();
    const segment = join(dir, 'segments', segmentFiles(dir)[0]);
    // A record half written when the process was killed.
    truncateSync(segment, statSync(segment).size - 5);
    spool = await openSegments(dir);
    await append(spool, ['{"i":3}']);
    expect(segmentFiles(dir)).toHaveLength(2);
    await spool.close();
    // Garbage after the last record (a torn frame) ends the segment as well.
    const second = join(dir, 'segments', segmentFiles(dir)[1]);
    const bytes = readFileSync(second);
    const end = bytes.length - bytes.reverse().findIndex((b) => b !== 0); // the preallocated rest is zeros
    const withGarbage = readFileSync(second);
    Buffer.from([0x31, 0x53, 0x48, 0x54, 9, 9, 9]).copy(withGarbage, end);
    writeFileSync(second, withGarbage);
    spool = await openSegments(dir);
    // The torn record was never acknowledged, so the same body is accepted again.
    expect((await append(spool, ['{"i":2}'])).status).toBe('appended');
    expect(rowsOf(await drain(spool))).toEqual(['{"i":0}', '{"i":1}', '{"i":3}', '{"i":2}']);
  });

  it('preallocates segments (zeros), so appends do not grow the file', async () => {
    const dir = tempDir();
    const spool = await openSegments(dir, { segmentBytes: 64 * 1024 });
    expect(readdirSync(join(dir, 'segments')).sort()).toEqual(['000000000001.seg', 'spare.tmp']);
    expect(statSync(join(dir, 'segments', '000000000001.seg')).size).toBe(64 * 1024);
    for (let i = 0; i < 40; i++) await append(spool, [`{"i":${i},"pad":"${'p'.repeat(2000)}"}`]);
    expect(segmentFiles(dir).length).toBeGreaterThan(1);
    await spool.close();
    const reopened = await openSegments(dir, { segmentBytes: 64 * 1024 });
    expect(rowsOf(await drain(reopened)).map((r) => JSON.parse(r).i)).toEqual(Array.from({ length: 40 }, (_, i) => i));
  });

  it('skips the rest of a segment damaged before its end, and goes on with the next', async () => {
    const dir = tempDir();
    const spool = await openSegments(dir, { preallocate: false, segmentBytes: 100 });
    await append(spool, [`{"i":0,"pad":"${'p'.repeat(100)}"}`]);
    await append(spool, ['{"i":1}']);
    const segment = join(dir, 'segments', segmentFiles(dir)[0]);
    const bytes = readFileSync(segment);
    bytes[bytes.length - 3] ^= 0xff;
    writeFileSync(segment, bytes);
    expect(rowsOf(await drain(spool))).toEqual(['{"i":1}']);
    expect(spool.bytes).toBe(0);
  });

  it('rolls segments, and deletes replayed ones', async () => {
    const dir = tempDir();
    const spool = await openSegments(dir, { segmentBytes: 200 });
    for (let i = 0; i < 10; i++) await append(spool, [`{"i":${i},"pad":"${'p'.repeat(60)}"}`]);
    expect(segmentFiles(dir).length).toBeGreaterThan(3);
    const records = await drain(spool);
    expect(rowsOf(records).map((r) => JSON.parse(r).i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(spool.bytes).toBe(0);
    expect(spool.pendingRows).toBe(0);
    expect(segmentFiles(dir)).toHaveLength(1);
  });
});
