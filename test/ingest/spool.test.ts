import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, statSync, truncateSync, appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Spool, SpoolCorruptError, SpoolFullError, type SpoolOptions, type SpoolRecord } from '../../src/ingest/spool.js';
import { DataStage, StagingBudget } from '../../src/ingest/stage.js';

const opened: Spool[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close().catch(() => undefined);
});

async function openSpool(dir: string, opts: Partial<SpoolOptions> = {}): Promise<Spool> {
  const s = await Spool.open({ dir, maxBytes: 64 * 1024 * 1024, ...opts });
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

async function readAll(spool: Spool): Promise<SpoolRecord[]> {
  const out: SpoolRecord[] = [];
  let from = spool.committed;
  for (;;) {
    const batch = await spool.read(from, { maxRows: Infinity, maxBytes: Infinity });
    if (batch.records.length === 0) return out;
    out.push(...batch.records);
    from = batch.to;
  }
}

describe('spool', () => {
  it('appends records that read back intact and in order; concurrent appends share a commit', async () => {
    const spool = await openSpool(tempDir());
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => append(spool, [`{"n":${i},"a":1}`, `{"n":${i},"a":2}`], i % 3 === 0 ? [`{"bad":${i}}`] : [])));
    expect(results.every((r) => r.status === 'appended')).toBe(true);
    const records = await readAll(spool);
    expect(records).toHaveLength(20);
    expect(rowsOf(records)).toEqual(Array.from({ length: 20 }, (_, i) => [`{"n":${i},"a":1}`, `{"n":${i},"a":2}`]).flat());
    expect(records.filter((r) => r.rejects === 1).map((r) => r.rejectData.toString())).toEqual([0, 3, 6, 9, 12, 15, 18].map((i) => `{"bad":${i}}\n`));
    expect(spool.pendingRows).toBe(40);
    expect(spool.bytes).toBe(records[19].end.offset);
    // Positions answered by append match where the reader found the records.
    expect(results.map((r) => (r.status === 'appended' ? r.position.offset : -1))).toEqual(records.map((r) => r.start.offset));
    // Group commit: the 19 appends queued behind the first share fsyncs.
    expect(spool.syncs).toBeLessThan(20);
  });

  it('recognises a body it already holds, also a concurrent copy, also after a restart and after replay', async () => {
    const dir = tempDir();
    let spool = await openSpool(dir);
    const [a, b] = await Promise.all([append(spool, ['{"x":1}']), append(spool, ['{"x":1}'])]);
    expect([a.status, b.status].sort()).toEqual(['appended', 'duplicate']);
    expect((await append(spool, ['{"x":1}'])).status).toBe('duplicate');
    await spool.close();

    // Known from the segment that holds it.
    spool = await openSpool(dir, { segmentBytes: 1 });
    expect((await append(spool, ['{"x":1}'])).status).toBe('duplicate');
    expect(await readAll(spool)).toHaveLength(1);
    // Replayed and its segment deleted: seen.log still knows it.
    await append(spool, ['{"x":2}']);
    await append(spool, ['{"x":3}']);
    const all = await readAll(spool);
    await spool.commit(all[all.length - 1].end, all);
    expect(readdirSync(join(dir, 'segments')).filter((f) => f.endsWith('.seg'))).toHaveLength(1);
    await spool.close();
    spool = await openSpool(dir, { segmentBytes: 1 });
    expect((await append(spool, ['{"x":1}'])).status).toBe('duplicate');
    expect((await append(spool, ['{"x":2}'])).status).toBe('duplicate');
    expect((await append(spool, ['{"x":4}'])).status).toBe('appended');
    expect(rowsOf(await readAll(spool))).toEqual(['{"x":4}']);
  });

  it('ignores a torn tail on open, and appends to a new segment', async () => {
    const dir = tempDir();
    let spool = await openSpool(dir, { preallocate: false });
    for (let i = 0; i < 3; i++) await append(spool, [`{"i":${i}}`]);
    await spool.close();
    const segment = join(dir, 'segments', readdirSync(join(dir, 'segments'))[0]);
    // A record half written when the process was killed.
    truncateSync(segment, statSync(segment).size - 5);
    spool = await openSpool(dir);
    expect(rowsOf(await readAll(spool))).toEqual(['{"i":0}', '{"i":1}']);
    await append(spool, ['{"i":3}']);
    expect(readdirSync(join(dir, 'segments')).filter((f) => f.endsWith('.seg'))).toHaveLength(2);
    await spool.close();
    // Garbage after the last record (a torn frame) ends the segment as well.
    const second = join(dir, 'segments', readdirSync(join(dir, 'segments')).filter((f) => f.endsWith('.seg')).sort()[1]);
    const bytes = readFileSync(second);
    const end = bytes.length - bytes.reverse().findIndex((b) => b !== 0); // the preallocated rest is zeros
    const garbage = Buffer.from([0x31, 0x53, 0x48, 0x54, 9, 9, 9]);
    const withGarbage = readFileSync(second);
    garbage.copy(withGarbage, end);
    writeFileSync(second, withGarbage);
    spool = await openSpool(dir);
    expect(rowsOf(await readAll(spool))).toEqual(['{"i":0}', '{"i":1}', '{"i":3}']);
    // The torn record was never acknowledged, so the same body is accepted again.
    expect((await append(spool, ['{"i":2}'])).status).toBe('appended');
    expect(rowsOf(await readAll(spool))).toEqual(['{"i":0}', '{"i":1}', '{"i":3}', '{"i":2}']);
  });

  it('preallocates segments (zeros), so appends do not grow the file', async () => {
    const dir = tempDir();
    const spool = await openSpool(dir, { segmentBytes: 64 * 1024 });
    const files = () => readdirSync(join(dir, 'segments')).sort();
    expect(files()).toEqual(['000000000001.seg', 'spare.tmp']);
    expect(statSync(join(dir, 'segments', '000000000001.seg')).size).toBe(64 * 1024);
    for (let i = 0; i < 40; i++) await append(spool, [`{"i":${i},"pad":"${'p'.repeat(2000)}"}`]);
    expect(files().filter((f) => f.endsWith('.seg')).length).toBeGreaterThan(1);
    expect(rowsOf(await readAll(spool)).map((r) => JSON.parse(r).i)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    await spool.close();
    const reopened = await openSpool(dir, { segmentBytes: 64 * 1024 });
    expect(rowsOf(await readAll(reopened)).map((r) => JSON.parse(r).i)).toEqual(Array.from({ length: 40 }, (_, i) => i));
  });

  it('detects a damaged record before the end when it is read', async () => {
    const dir = tempDir();
    const spool = await openSpool(dir, { preallocate: false });
    await append(spool, ['{"i":0}']);
    await append(spool, ['{"i":1}']);
    const segment = join(dir, 'segments', readdirSync(join(dir, 'segments'))[0]);
    const bytes = readFileSync(segment);
    bytes[bytes.length - 3] ^= 0xff;
    writeFileSync(segment, bytes);
    await expect(readAll(spool)).rejects.toBeInstanceOf(SpoolCorruptError);
  });

  it('keeps the plan of the batch being inserted across a restart, and replays exactly it', async () => {
    const dir = tempDir();
    let spool = await openSpool(dir);
    for (let i = 0; i < 4; i++) await append(spool, [`{"i":${i}}`]);
    const first = await spool.read(spool.committed, { maxRows: 2, maxBytes: Infinity });
    expect(first.records).toHaveLength(2);
    await spool.savePlan({ from: first.from, to: first.to });
    await spool.close();

    spool = await openSpool(dir);
    await append(spool, ['{"i":4}']);
    const plan = spool.inflight!;
    expect(plan).toEqual({ from: first.from, to: first.to });
    const again = await spool.read(plan.from, { maxRows: Infinity, maxBytes: Infinity, until: plan.to });
    expect(again.records.map((r) => r.id)).toEqual(first.records.map((r) => r.id));
    await spool.commit(again.to, again.records);
    expect(spool.inflight).toBeNull();
    expect(spool.pendingRows).toBe(3);
    expect(rowsOf(await readAll(spool))).toEqual(['{"i":2}', '{"i":3}', '{"i":4}']);
  });

  it('rolls segments, never reads across one in a batch, and deletes replayed ones', async () => {
    const dir = tempDir();
    const spool = await openSpool(dir, { segmentBytes: 200 });
    for (let i = 0; i < 10; i++) await append(spool, [`{"i":${i},"pad":"${'p'.repeat(60)}"}`]);
    const segments = () => readdirSync(join(dir, 'segments')).filter((f) => f.endsWith('.seg')).length;
    expect(segments()).toBeGreaterThan(3);
    const seen: string[] = [];
    for (;;) {
      const batch = await spool.read(spool.committed, { maxRows: Infinity, maxBytes: Infinity });
      if (batch.records.length === 0) break;
      expect(new Set(batch.records.map((r) => r.start.segment)).size).toBe(1);
      seen.push(...rowsOf(batch.records));
      await spool.commit(batch.to, batch.records);
    }
    expect(seen.map((r) => JSON.parse(r).i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(spool.bytes).toBe(0);
    expect(spool.pendingRows).toBe(0);
    expect(segments()).toBe(1);
  });

  it('refuses a record that would pass the size limit, and takes it once the store caught up', async () => {
    const spool = await openSpool(tempDir(), { maxBytes: 400, retryAfterSeconds: 7 });
    await append(spool, [`{"pad":"${'p'.repeat(200)}"}`]);
    const err = await append(spool, [`{"pad":"${'q'.repeat(200)}"}`]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SpoolFullError);
    expect((err as SpoolFullError).retryAfterSeconds).toBe(7);
    expect(spool.isFull()).toBe(false);
    const batch = await spool.read(spool.committed, { maxRows: Infinity, maxBytes: Infinity });
    await spool.commit(batch.to, batch.records);
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
    expect(rowsOf(await readAll(spool))).toEqual(rows);
  });
});
