// A damaged spool file, store-free and in this test's own process (issue 31: spool-damage.test.ts checks the same
// through the drain service and ClickHouse, too slow to run once per mutant). The salvage (spool/salvage.ts) is given
// files built by hand, so what it must return is known before it runs: which records are on a page overwritten
// with garbage (SQLite's dbstat on the undamaged file), which rows were written with the wrong types, which plan and
// dedup entries the file held. Then the spool's recovery (spool/sqlite-spool.ts): the file moved aside, the salvage
// replayed, the loss counted and logged, the saved batch kept only when all of it was read.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { leavesOf } from './spool-pages.js';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { salvageSpool } from '../../../src/ingest/drain/spool/salvage.js';
import { SqliteSpool } from '../../../src/ingest/drain/spool/sqlite-spool.js';
import { CommitThread } from '../../../src/ingest/drain/spool/commit-thread.js';
import { isDamagedFileError, openBuiltin, openSqlite, type BuiltinDatabase, type BuiltinStatement } from '../../../src/ingest/drain/spool/sqlite-db.js';
import type { SpoolOptions, StagedData } from '../../../src/ingest/drain/spool/spool.js';
import { captureLog } from '../../support/log-capture.js';
import { SPOOL_SQLITE_DRIVER } from '../../support/sqlite-error.js';
import { SPOOL_SCHEMA } from '../../support/spool-file.js';

// These files are built and read back with better-sqlite3, which aborts Node 24 processes when V8 collects one of
// its statements (src/ingest/drain/spool/sqlite-db.ts; seen here in .ci/run: "Assertion failed: (env) != nullptr"
// in Statement::~Statement, mid-file). The spool runs on node:sqlite there, tested through openSqlite by
// spool.test.ts and spool-damage.test.ts; this file runs where the spool's driver is better-sqlite3 (Node 20, 22),
// as Stryker does.
const suite = describe.skipIf(SPOOL_SQLITE_DRIVER !== 'better-sqlite3');


const FORMAT = '{"format":"JSONEachRow"}';
const tempDir = () => mkdtempSync(join(tmpdir(), 'spool-salvage-'));

/** A spool file of `n` records body-0..body-(n-1) (seq 1..n, one cell each), optionally with a page size. */
function spoolFile(dir: string, n: number, opts: { pageSize?: number; wal?: boolean; pad?: number } = {}): { file: string; db: Database.Database } {
  const file = join(dir, 'spool.sqlite');
  const db = new Database(file);
  if (opts.pageSize) db.pragma(`page_size = ${opts.pageSize}`);
  if (opts.wal) {
    db.pragma('journal_mode = WAL');
    db.pragma('wal_autocheckpoint = 0');
  }
  db.exec(SPOOL_SCHEMA);
  const insert = db.prepare('INSERT INTO records (id, received_at_ms, row_format, rows, rejects, row_data, reject_data) VALUES (?, ?, ?, 2, 1, ?, ?)');
  db.transaction(() => {
    for (let i = 0; i < n; i++) insert.run(`body-${i}`, 1_764_000_000_000 + i, FORMAT, Buffer.from(`a${i}\nb${i}\n${'x'.repeat(opts.pad ?? 0)}`), Buffer.from(`r${i}\n`));
  })();
  return { file, db };
}


function overwrite(file: string, offset: number, length: number, byte = 0xa5): void {
  const bytes = readFileSync(file);
  bytes.fill(byte, offset, offset + length);
  writeFileSync(file, bytes);
}

const ids = (records: Array<{ id: string }>) => records.map((r) => r.id);
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `body-${from + i}`);

suite('salvageSpool', () => {
  it('no file: nothing salvaged, nothing lost, and the scratch folder is gone (a leftover in it too)', () => {
    const dir = tempDir();
    const scratch = join(dir, 'salvage');
    mkdirSync(scratch);
    writeFileSync(join(scratch, 'left-over'), 'x');
    expect(salvageSpool(join(dir, 'missing.sqlite'), scratch)).toEqual({ records: [], plan: undefined, seen: [], lostRecords: 0, lostExact: false, headerRebuilt: false });
    expect(existsSync(scratch)).toBe(false);
  });

  it('a whole file: every record as written, the plan, the dedup entries; the file itself untouched, the scratch folder removed', () => {
    const dir = tempDir();
    const { file, db } = spoolFile(dir, 3);
    db.prepare('INSERT INTO plan (one, from_seq, to_seq) VALUES (1, 2, 3)').run();
    db.prepare('INSERT INTO seen (id, at_ms) VALUES (?, ?)').run('body-0', 1_764_000_000_500);
    db.prepare('INSERT INTO seen (id, at_ms) VALUES (?, ?)').run('gone-body', 1_764_000_000_400);
    db.close();
    const before = readFileSync(file);
    const s = salvageSpool(file, join(dir, 'salvage'));
    expect(s.records.map((r) => ({ ...r, row_data: Buffer.from(r.row_data).toString(), reject_data: Buffer.from(r.reject_data).toString() }))).toEqual([
      { seq: 1, id: 'body-0', received_at_ms: 1_764_000_000_000, row_format: FORMAT, rows: 2, rejects: 1, row_data: 'a0\nb0\n', reject_data: 'r0\n' },
      { seq: 2, id: 'body-1', received_at_ms: 1_764_000_000_001, row_format: FORMAT, rows: 2, rejects: 1, row_data: 'a1\nb1\n', reject_data: 'r1\n' },
      { seq: 3, id: 'body-2', received_at_ms: 1_764_000_000_002, row_format: FORMAT, rows: 2, rejects: 1, row_data: 'a2\nb2\n', reject_data: 'r2\n' },
    ]);
    expect(s.plan).toEqual({ from_seq: 2, to_seq: 3 });
    expect(s.seen.map((e) => ({ ...e })).sort((a, b) => a.at_ms - b.at_ms)).toEqual([
      { id: 'gone-body', at_ms: 1_764_000_000_400 },
      { id: 'body-0', at_ms: 1_764_000_000_500 },
    ]);
    expect([s.lostRecords, s.headerRebuilt]).toEqual([0, false]);
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(existsSync(join(dir, 'salvage'))).toBe(false);
  });

  it('records committed only in the WAL (not yet checkpointed) are salvaged with the file', () => {
    const dir = tempDir();
    const { file, db } = spoolFile(dir, 4, { wal: true });
    try {
      expect(statSync(`${file}-wal`).size).toBeGreaterThan(0);
      expect(ids(salvageSpool(file, join(dir, 'salvage')).records)).toEqual(range(0, 4));
    } finally {
      db.close();
    }
  });

  it('every record already replayed (the table empty, the seq counter at 10): nothing read, nothing counted lost', () => {
    const dir = tempDir();
    const { file, db } = spoolFile(dir, 10);
    db.exec('DELETE FROM records');
    db.close();
    overwrite(file, 0, 100);
    expect(salvageSpool(file, join(dir, 'salvage'))).toEqual({ records: [], plan: undefined, seen: [], lostRecords: 0, lostExact: false, headerRebuilt: true });
  });

  it('the scratch folder may be several levels down a folder that does not exist yet', () => {
    const dir = tempDir();
    spoolFile(dir, 2).db.close();
    expect(ids(salvageSpool(join(dir, 'spool.sqlite'), join(dir, 'not', 'yet', 'salvage')).records)).toEqual(['body-0', 'body-1']);
  });

  it('no plan saved: plan undefined', () => {
    const dir = tempDir();
    spoolFile(dir, 2).db.close();
    expect(salvageSpool(join(dir, 'spool.sqlite'), join(dir, 'salvage')).plan).toBeUndefined();
  });

  for (const [pageSize, wal] of [
    [4096, false],
    [1024, false],
    [8192, true],
    [65536, false],
    [512, true],
  ] as const) {
    it(`a header SQLite refuses (garbage over its 100 bytes), page size ${pageSize}${wal ? ', named by the WAL' : ''}: rebuilt, every record read`, () => {
      const dir = tempDir();
      const { file, db } = spoolFile(dir, 30, { pageSize, wal, pad: 200 });
      if (wal) {
        // The records reach the file (a checkpoint) and the WAL stays, its header naming the page size.
        db.pragma('wal_checkpoint(PASSIVE)');
        db.prepare("INSERT INTO seen (id, at_ms) VALUES ('late', 1)").run();
      } else db.close();
      try {
        overwrite(file, 0, 100);
        const s = salvageSpool(file, join(dir, 'salvage'));
        expect([s.headerRebuilt, s.lostRecords, ids(s.records)]).toEqual([true, 0, range(0, 30)]);
        if (wal) expect(s.seen.map((e) => e.id)).toEqual(['late']);
      } finally {
        if (wal) db.close();
      }
    });
  }

  it('a file that is no database at all: nothing read, the header rebuilt (tried), nothing counted lost', () => {
    const dir = tempDir();
    const file = join(dir, 'spool.sqlite');
    writeFileSync(file, Buffer.alloc(8192, 0x5a));
    expect(salvageSpool(file, join(dir, 'salvage'))).toEqual({ records: [], plan: undefined, seen: [], lostRecords: 0, lostExact: false, headerRebuilt: true });
  });

  it('garbage over a middle leaf of records: the records on it are lost (counted), all the others read in order', () => {
    const dir = tempDir();
    spoolFile(dir, 120, { pad: 300 }).db.close();
    const file = join(dir, 'spool.sqlite');
    const { pageSize, leaves } = leavesOf(file);
    expect(leaves.length).toBeGreaterThan(4);
    const k = 2;
    const before = leaves.slice(0, k).reduce((n, l) => n + l.ncell, 0);
    const onIt = leaves[k].ncell;
    overwrite(file, (leaves[k].pageno - 1) * pageSize, pageSize);
    const s = salvageSpool(file, join(dir, 'salvage'));
    expect(ids(s.records)).toEqual([...range(0, before), ...range(before + onIt, 120)]);
    expect(s.lostRecords).toBe(onIt);
    expect(s.headerRebuilt).toBe(false);
  });

  it('garbage over the last leaf: its records counted lost (the highest seq given is known)', () => {
    const dir = tempDir();
    spoolFile(dir, 60, { pad: 300 }).db.close();
    const file = join(dir, 'spool.sqlite');
    const { pageSize, leaves } = leavesOf(file);
    const last = leaves[leaves.length - 1];
    overwrite(file, (last.pageno - 1) * pageSize, pageSize);
    const s = salvageSpool(file, join(dir, 'salvage'));
    expect(ids(s.records)).toEqual(range(0, 60 - last.ncell));
    expect(s.lostRecords).toBe(last.ncell);
  });

  it('garbage over two neighbouring leaves: both skipped, the rest read', () => {
    const dir = tempDir();
    spoolFile(dir, 150, { pad: 300 }).db.close();
    const file = join(dir, 'spool.sqlite');
    const { pageSize, leaves } = leavesOf(file);
    const before = leaves[0].ncell;
    const lost = leaves[1].ncell + leaves[2].ncell;
    for (const l of [leaves[1], leaves[2]]) overwrite(file, (l.pageno - 1) * pageSize, pageSize);
    const s = salvageSpool(file, join(dir, 'salvage'));
    expect(ids(s.records)).toEqual([...range(0, before), ...range(before + lost, 150)]);
    expect(s.lostRecords).toBe(lost);
  });

  it('garbage over a middle leaf AND the last leaf: the readable leaves between them are read, both damaged ones counted lost', () => {
    const dir = tempDir();
    spoolFile(dir, 150, { pad: 300 }).db.close();
    const file = join(dir, 'spool.sqlite');
    const { pageSize, leaves } = leavesOf(file);
    const k = 2;
    const last = leaves.length - 1;
    // Several readable leaves between the two damaged ones.
    expect(last - k).toBeGreaterThan(3);
    const before = leaves.slice(0, k).reduce((n, l) => n + l.ncell, 0);
    const onIt = leaves[k].ncell;
    const onLast = leaves[last].ncell;
    for (const l of [leaves[k], leaves[last]]) overwrite(file, (l.pageno - 1) * pageSize, pageSize);
    const s = salvageSpool(file, join(dir, 'salvage'));
    expect(ids(s.records)).toEqual([...range(0, before), ...range(before + onIt, 150 - onLast)]);
    expect(s.lostRecords).toBe(onIt + onLast);
  });

  it('rows whose cells have the wrong types are left out and counted lost; the limits themselves pass (an id of 1024 characters)', () => {
    const dir = tempDir();
    const { file, db } = spoolFile(dir, 0);
    const insert = db.prepare('INSERT INTO records (id, received_at_ms, row_format, rows, rejects, row_data, reject_data) VALUES (?, ?, ?, ?, ?, ?, ?)');
    const blob = Buffer.from('a\n');
    const rows: Array<[string, unknown[]]> = [
      ['good-1', ['good-1', 1, FORMAT, 1, 0, blob, blob]],
      ['empty id', ['', 1, FORMAT, 1, 0, blob, blob]],
      ['long id', ['i'.repeat(1025), 1, FORMAT, 1, 0, blob, blob]],
      ['id 1024', ['i'.repeat(1024), 1, FORMAT, 1, 0, blob, blob]],
      ['time text', ['t', 'soon', FORMAT, 1, 0, blob, blob]],
      ['rows fraction', ['r', 1, FORMAT, 1.5, 0, blob, blob]],
      ['rejects text', ['j', 1, FORMAT, 1, 'none', blob, blob]],
      ['row data text', ['d', 1, FORMAT, 1, 0, 'a\n', blob]],
      ['reject data text', ['e', 1, FORMAT, 1, 0, blob, 'x']],
      ['format not JSON', ['f', 1, '{format', 1, 0, blob, blob]],
      ['format no name', ['g', 1, '{"format":7}', 1, 0, blob, blob]],
      ['good-2', ['good-2', 1, '{"format":"TabSeparated","columns":["a"]}', 1, 0, blob, blob]],
    ];
    for (const [, values] of rows) insert.run(...values);
    db.prepare("INSERT INTO records (id, received_at_ms, row_format, rows, rejects, row_data, reject_data) VALUES (x'3432', 1, ?, 1, 0, x'0a', x'')").run(FORMAT);
    db.close();
    const s = salvageSpool(file, join(dir, 'salvage'));
    expect(ids(s.records)).toEqual(['good-1', 'i'.repeat(1024), 'good-2']);
    expect(s.records.map((r) => r.seq)).toEqual([1, 4, 12]);
    // seq 1..13 given, three read: ten lost.
    expect(s.lostRecords).toBe(10);
  });

  it('dedup entries with the wrong types are left out', () => {
    const dir = tempDir();
    const { file, db } = spoolFile(dir, 1);
    db.exec("INSERT INTO seen (id, at_ms) VALUES ('ok', 5), (x'37', 6), ('late', 'x'), ('frac', 1.5)");
    db.close();
    expect(salvageSpool(file, join(dir, 'salvage')).seen.map((e) => ({ ...e }))).toEqual([{ id: 'ok', at_ms: 5 }]);
  });

  it('the first records deleted (replayed): lost counts only from the first seq read', () => {
    const dir = tempDir();
    const { file, db } = spoolFile(dir, 10);
    db.exec('DELETE FROM records WHERE seq <= 4; DELETE FROM records WHERE seq = 7');
    db.close();
    const s = salvageSpool(file, join(dir, 'salvage'));
    expect(ids(s.records)).toEqual(['body-4', 'body-5', 'body-7', 'body-8', 'body-9']);
    // seq 5..10 is the live run: 6 seqs, 5 read.
    expect(s.lostRecords).toBe(1);
  });

  it('without sqlite_sequence (a table made without AUTOINCREMENT), the table maximum bounds the scan', () => {
    const dir = tempDir();
    const file = join(dir, 'spool.sqlite');
    const db = new Database(file);
    db.exec(SPOOL_SCHEMA.replace('AUTOINCREMENT', ''));
    db.exec(`INSERT INTO records VALUES (3, 'x', 1, '${FORMAT}', 1, 0, x'0a', x''), (5, 'y', 1, '${FORMAT}', 1, 0, x'0a', x'')`);
    db.close();
    const s = salvageSpool(file, join(dir, 'salvage'));
    expect([ids(s.records), s.lostRecords]).toEqual([['x', 'y'], 1]);
  });
});

// ---------------------------------------------------------------------------------------------------------------

const opened: SqliteSpool[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const s of opened.splice(0)) await s.close().catch(() => undefined);
});

async function open(dir: string, opts: Partial<SpoolOptions> = {}): Promise<SqliteSpool> {
  const s = (await SqliteSpool.open({ dir, maxBytes: 1 << 20, commitThread: false, ...opts })) as SqliteSpool;
  opened.push(s);
  return s;
}

const staged = (text: string): StagedData => ({ count: text.split('\n').length - 1, bytes: Buffer.byteLength(text), crc: 0, file: undefined, memory: text ? [Buffer.from(text)] : [] });
const rec = (id: string, rows = `{"b":"${id}"}\n`) => ({ id, receivedAtMs: 1_795_000_000_000, rowFormat: { format: 'JSONEachRow' }, rows: staged(rows), rejects: staged('') });
const ALL = { maxRows: Infinity, maxBytes: Infinity };

async function counters(registry: Registry, name = 'spool'): Promise<number[]> {
  const out: number[] = [];
  for (const metric of ['tallyhouse_spool_damaged_total', 'tallyhouse_spool_salvaged_records_total', 'tallyhouse_spool_lost_records_total']) {
    const values = (await registry.getSingleMetric(metric)!.get()).values;
    expect(values.map((v) => v.labels)).toEqual([{ spool: name }]);
    out.push(values[0]!.value);
  }
  return out;
}

const corruptError = () => Object.assign(new Error('database disk image is malformed'), { code: 'SQLITE_CORRUPT' });
const T = Date.parse('2026-11-20T08:09:10.456Z');

suite('SQLite spool: a damaged file at open', () => {
  it('the header overwritten: moved aside under the time, salvaged, counted, logged once; the saved batch resumes; bodies still duplicates', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(T);
    const root = tempDir();
    const dir = join(root, 'spool');
    let spool = await open(dir);
    for (const id of ['k0', 'k1', 'k2']) await spool.append(rec(id));
    expect(ids((await spool.nextBatch({ maxRows: 2, maxBytes: Infinity }))!.records)).toEqual(['k0', 'k1']);
    await spool.close();
    overwrite(join(dir, 'spool.sqlite'), 0, 100);

    const registry = new Registry();
    const { logger, lines } = captureLog('info');
    spool = await open(dir, { registry, logger });
    expect(readdirSync(dir).sort()).toEqual(['spool.sqlite', 'spool.sqlite-shm', 'spool.sqlite-wal', 'spool.sqlite.corrupt-20261120T080910Z', 'staging']);
    expect(statSync(join(dir, 'spool.sqlite')).mode & 0o777).toBe(0o600);
    expect(await counters(registry)).toEqual([1, 3, 0]);
    // '{"b":"k0"}\n' is 11 bytes: three records, 33 bytes, 3 rows.
    expect([spool.bytes, spool.pendingRows, spool.appendedRecords, spool.replayedRecords]).toEqual([33, 3, 3, 0]);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 50,
        spool: 'spool',
        movedTo: join(dir, 'spool.sqlite.corrupt-20261120T080910Z'),
        salvagedRecords: 3,
        salvagedRows: 3,
        lostRecords: 0,
        lostExact: true,
        headerRebuilt: true,
        reason: expect.stringMatching(/^./),
        msg:
          'the spool spool file was damaged: moved aside to spool.sqlite.corrupt-20261120T080910Z; 3 record(s) salvaged and replayed, 0 lost; ' +
          `\`tallyhouse spool salvage ${join(dir, 'spool.sqlite.corrupt-20261120T080910Z')}\` stores the lines still readable in it that the store lacks`,
      }),
      expect.objectContaining({ level: 30, bytes: 33, rows: 3, msg: 'log drain spool holds lines not yet in the store; replaying' }),
    ]);
    const resumed = (await spool.nextBatch(ALL))!;
    expect([resumed.resumed, ...ids(resumed.records)]).toEqual([true, 'k0', 'k1']);
    expect(resumed.records[0]).toEqual({ id: 'k0', receivedAtMs: 1_795_000_000_000, rowFormat: { format: 'JSONEachRow' }, rows: 1, rejects: 0, rowData: Buffer.from('{"b":"k0"}\n'), rejectData: Buffer.alloc(0) });
    await spool.commit(resumed);
    expect([spool.bytes, spool.pendingRows, spool.replayedRecords]).toEqual([11, 1, 2]);
    // Acknowledged before the damage: still recognised.
    expect(await spool.append(rec('k0'))).toEqual({ status: 'duplicate' });
    expect(await spool.append(rec('k2'))).toEqual({ status: 'duplicate' });
    expect(await spool.append(rec('k3'))).toEqual({ status: 'appended' });
    const rest = (await spool.nextBatch(ALL))!;
    expect([rest.resumed, ...ids(rest.records)]).toEqual([false, 'k2', 'k3']);
  });

  it('damaged three times in the same second: the files aside get -1, -2; the -wal and -shm go aside with their file', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(T);
    const dir = join(tempDir(), 'logs');
    for (let round = 0; round < 3; round++) {
      const spool = await open(dir);
      await spool.append(rec(`r${round}`));
      await spool.close();
      overwrite(join(dir, 'spool.sqlite'), 0, 100);
      // A WAL and shared-memory file left by a crash go aside with their file.
      writeFileSync(join(dir, 'spool.sqlite-wal'), '');
      writeFileSync(join(dir, 'spool.sqlite-shm'), '');
    }
    const registry = new Registry();
    await open(dir, { registry, name: 'faro' });
    // r0 and r1 (salvaged in the rounds before) and r2.
    expect(await counters(registry, 'faro')).toEqual([1, 3, 0]);
    expect(readdirSync(dir).filter((f) => f.includes('corrupt')).sort()).toEqual([
      'spool.sqlite.corrupt-20261120T080910Z',
      'spool.sqlite.corrupt-20261120T080910Z-1',
      'spool.sqlite.corrupt-20261120T080910Z-1-shm',
      'spool.sqlite.corrupt-20261120T080910Z-1-wal',
      'spool.sqlite.corrupt-20261120T080910Z-2',
      'spool.sqlite.corrupt-20261120T080910Z-2-shm',
      'spool.sqlite.corrupt-20261120T080910Z-2-wal',
      'spool.sqlite.corrupt-20261120T080910Z-shm',
      'spool.sqlite.corrupt-20261120T080910Z-wal',
    ]);
  });

  it('the saved batch lost one of its records: the rest resumed as the batch under the first ids (its insert tokens), the loss counted', async () => {
    const dir = join(tempDir(), 'spool');
    let spool = await open(dir);
    for (const id of ['p0', 'p1', 'p2', 'p3']) await spool.append(rec(id));
    await spool.nextBatch({ maxRows: 3, maxBytes: Infinity });
    await spool.close();
    const db = new Database(join(dir, 'spool.sqlite'));
    db.exec('DELETE FROM records WHERE seq = 2');
    db.close();
    overwrite(join(dir, 'spool.sqlite'), 0, 100);
    const registry = new Registry();
    spool = await open(dir, { registry });
    expect(await counters(registry)).toEqual([1, 3, 1]);
    // Issue 44.6: a batch the store took before the damage is not stored again under a token of other ids.
    const b = (await spool.nextBatch(ALL))!;
    expect([b.resumed, b.tokenIds, ...ids(b.records)]).toEqual([true, 'p0\np1\np2', 'p0', 'p2']);
    await spool.commit(b);
    const next = (await spool.nextBatch(ALL))!;
    expect([next.resumed, next.tokenIds, ...ids(next.records)]).toEqual([false, undefined, 'p3']);
  });

  it('a saved batch none of whose records is left: dropped', async () => {
    const dir = join(tempDir(), 'spool');
    let spool = await open(dir);
    for (const id of ['q0', 'q1', 'q2']) await spool.append(rec(id));
    await spool.nextBatch({ maxRows: 1, maxBytes: Infinity });
    await spool.close();
    const db = new Database(join(dir, 'spool.sqlite'));
    db.exec('DELETE FROM records WHERE seq = 1');
    db.close();
    overwrite(join(dir, 'spool.sqlite'), 0, 100);
    spool = await open(dir);
    const b = (await spool.nextBatch(ALL))!;
    expect([b.resumed, ...ids(b.records)]).toEqual([false, 'q1', 'q2']);
  });

  // README: a resumed batch is replayed exactly (the same records, hence the same insert token, sha256 of its ids),
  // so that an insert the store had taken before the crash is deduplicated. A saved batch of one record (from_seq ===
  // to_seq) and one that ends at the spool's last record must survive a salvage like any other; the record appended
  // after the reopen must not join them (that would be a new token).
  it.each([
    // A saved batch of ONE record: resumed with exactly that record.
    { ids: ['o0', 'o1', 'o2'], limits: { maxRows: 1, maxBytes: Infinity }, saved: ['o0'], later: 'o3', rest: ['o1', 'o2', 'o3'] },
    // A saved batch that ends at the last record: resumed with exactly its records, not the one appended after.
    { ids: ['e0', 'e1', 'e2'], limits: ALL, saved: ['e0', 'e1', 'e2'], later: 'e3', rest: ['e3'] },
  ])('a saved batch $saved survives a salvage and is resumed exactly; $later, appended after, stays out', async ({ ids: appended, limits, saved, later, rest }) => {
    const dir = join(tempDir(), 'spool');
    let spool = await open(dir);
    for (const id of appended) await spool.append(rec(id));
    expect(ids((await spool.nextBatch(limits))!.records)).toEqual(saved);
    await spool.close();
    overwrite(join(dir, 'spool.sqlite'), 0, 100);
    spool = await open(dir);
    expect(await spool.append(rec(later))).toEqual({ status: 'appended' });
    const b = (await spool.nextBatch(ALL))!;
    expect([b.resumed, ...ids(b.records)]).toEqual([true, ...saved]);
    await spool.commit(b);
    const after = (await spool.nextBatch(ALL))!;
    expect([after.resumed, ...ids(after.records)]).toEqual([false, ...rest]);
  });

  it('a file that is no database at all and no salvage: the spool opens empty and works', async () => {
    const dir = join(tempDir(), 'spool');
    mkdirSync(dir);
    writeFileSync(join(dir, 'spool.sqlite'), Buffer.alloc(4096, 0x5a));
    const registry = new Registry();
    const spool = await open(dir, { registry });
    expect(await counters(registry)).toEqual([1, 0, 0]);
    expect([spool.bytes, spool.pendingRows, spool.appendedRecords]).toEqual([0, 0, 0]);
    expect(await spool.append(rec('new'))).toEqual({ status: 'appended' });
    expect(ids((await spool.nextBatch(ALL))!.records)).toEqual(['new']);
  });

  it('damage SQLite does not raise (the integrity check at open reports a broken index page): recovered, nothing lost, the check quoted', async () => {
    const dir = join(tempDir(), 'spool');
    let spool = await open(dir);
    for (const id of ['s0', 's1']) await spool.append(rec(id));
    await spool.close();
    const file = join(dir, 'spool.sqlite');
    const db = new Database(file);
    const insert = db.prepare('INSERT INTO seen (id, at_ms) VALUES (?, ?)');
    db.transaction(() => {
      // wall-clock: the spool's dedup window counts from the machine's clock
      for (let i = 0; i < 2000; i++) insert.run(`old-${i}`, Date.now() - i);
    })();
    db.pragma('wal_checkpoint(TRUNCATE)');
    const pageSize = Number(db.pragma('page_size', { simple: true }));
    const leaf = db.prepare("SELECT pageno FROM dbstat WHERE name = 'seen_by_age' AND pagetype = 'leaf' ORDER BY pageno LIMIT 1").get() as { pageno: number };
    db.close();
    // Zeros over the cell pointers of an index leaf: every read SQLite makes at open passes; quick_check does not.
    overwrite(file, (leaf.pageno - 1) * pageSize + 200, 400, 0);
    const registry = new Registry();
    const { logger, lines } = captureLog('info');
    spool = await open(dir, { registry, logger });
    expect(await counters(registry)).toEqual([1, 2, 0]);
    expect(lines[0]).toMatchObject({ level: 50, lostRecords: 0, headerRebuilt: false, reason: expect.stringMatching(/^\*\*\* in database main \*\*\*\nTree \d+ page \d+ cell \d+: /) });
    expect(ids((await spool.nextBatch(ALL))!.records)).toEqual(['s0', 's1']);
    expect(await spool.append(rec('old-1999'))).toEqual({ status: 'duplicate' });
  });

  it('an error that is not damage (a folder where the file should be) is thrown, nothing moved aside', async () => {
    const dir = join(tempDir(), 'spool');
    mkdirSync(join(dir, 'spool.sqlite'), { recursive: true });
    await expect(open(dir)).rejects.toMatchObject({ code: 'EISDIR' });
    expect(readdirSync(dir).sort()).toEqual(['spool.sqlite', 'staging']);
  });
});

suite('SQLite spool: batches and the commit thread', () => {
  it('maxBytes counts the rejects of the record that would be added (4 + 5 bytes after 4: 13 > 12)', async () => {
    const spool = await open(join(tempDir(), 'spool'));
    await spool.append({ ...rec('x', 'abc\n'), rejects: staged('') });
    await spool.append({ ...rec('y', 'abc\n'), rejects: staged('defg\n') });
    expect(ids((await spool.nextBatch({ maxRows: Infinity, maxBytes: 12 }))!.records)).toEqual(['x']);
  });

  it('a commit thread that cannot start: said once, and the spool commits on its own connection', async () => {
    const start = vi.spyOn(CommitThread, 'start').mockRejectedValue(new Error('no threads left'));
    try {
      const { logger, lines } = captureLog('info');
      const dir = join(tempDir(), 'spool');
      const spool = await open(dir, { commitThread: true, logger, name: 'logs' });
      expect(start).toHaveBeenCalledWith(join(dir, 'spool.sqlite'));
      expect(lines).toEqual([expect.objectContaining({ level: 50, err: 'no threads left', spool: 'logs', msg: 'the spool commit thread could not start; committing on the event loop' })]);
      expect(await spool.append(rec('own'))).toEqual({ status: 'appended' });
      expect(ids((await spool.nextBatch(ALL))!.records)).toEqual(['own']);
      // Without a logger, the same.
      const quiet = await open(join(tempDir(), 'spool'), { commitThread: true });
      expect(await quiet.append(rec('own'))).toEqual({ status: 'appended' });
    } finally {
      start.mockRestore();
    }
  });
});

suite('SQLite spool: damage found while running', () => {
  type Inner = { sql: Record<string, Record<string, (...a: unknown[]) => unknown>> };
  const statements = (s: SqliteSpool) => (s as unknown as Inner).sql;

  it('at replay (reading the oldest records fails SQLITE_CORRUPT): recovered, and the same call returns what was salvaged', async () => {
    const registry = new Registry();
    const spool = await open(join(tempDir(), 'spool'), { registry });
    for (const id of ['a', 'b']) await spool.append(rec(id));
    statements(spool).oldest.iterate = () => {
      throw corruptError();
    };
    const b = (await spool.nextBatch(ALL))!;
    expect([b.resumed, ...ids(b.records)]).toEqual([false, 'a', 'b']);
    expect(await counters(registry)).toEqual([1, 2, 0]);
  });

  it('at replay, an error that is not damage goes to the replayer and nothing is recovered', async () => {
    const registry = new Registry();
    const spool = await open(join(tempDir(), 'spool'), { registry });
    await spool.append(rec('a'));
    statements(spool).oldest.iterate = () => {
      throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
    };
    await expect(spool.nextBatch(ALL)).rejects.toThrow('disk I/O error');
    expect(await counters(registry)).toEqual([0, 0, 0]);
  });

  it('at an append (the dedup lookup fails SQLITE_CORRUPT): that append is refused, the file recovered, the next one taken', async () => {
    const registry = new Registry();
    const spool = await open(join(tempDir(), 'spool'), { registry });
    await spool.append(rec('a'));
    const { isSeen } = statements(spool);
    isSeen.get = () => {
      throw corruptError();
    };
    await expect(spool.append(rec('b'))).rejects.toMatchObject({ code: 'SQLITE_CORRUPT' });
    expect(await counters(registry)).toEqual([1, 1, 0]);
    expect(await spool.append(rec('b'))).toEqual({ status: 'appended' });
    expect(await spool.append(rec('a'))).toEqual({ status: 'duplicate' });
    expect(ids((await spool.nextBatch(ALL))!.records)).toEqual(['a', 'b']);
  });

  it('at an append, an error that is not damage refuses the append only', async () => {
    const registry = new Registry();
    const spool = await open(join(tempDir(), 'spool'), { registry });
    statements(spool).isSeen.get = () => {
      throw new Error('out of memory');
    };
    await expect(spool.append(rec('b'))).rejects.toThrow('out of memory');
    expect(await counters(registry)).toEqual([0, 0, 0]);
  });

  it('in a group commit (the insert fails SQLITE_CORRUPT): the group refused, its reservation given back, the file recovered', async () => {
    const registry = new Registry();
    const spool = await open(join(tempDir(), 'spool'), { registry, maxBytes: 30 });
    await spool.append(rec('a')); // 10 bytes
    statements(spool).insertRecord.run = () => {
      throw corruptError();
    };
    await expect(spool.append(rec('b'))).rejects.toMatchObject({ code: 'SQLITE_CORRUPT' });
    expect(await counters(registry)).toEqual([1, 1, 0]);
    expect([spool.bytes, spool.pendingRows, spool.appendedRecords, spool.commits]).toEqual([10, 1, 1, 1]);
    // 20 bytes fit: nothing of the refused group is still reserved.
    expect(spool.isFull(20)).toBe(false);
    expect(spool.isFull(21)).toBe(true);
    expect(await spool.append(rec('b'))).toEqual({ status: 'appended' });
    expect([spool.bytes, spool.pendingRows, spool.appendedRecords, spool.commits]).toEqual([20, 2, 2, 2]);
  });

  it('in a group commit, an error that is not damage refuses the group and gives back its reservation', async () => {
    const registry = new Registry();
    const spool = await open(join(tempDir(), 'spool'), { registry, maxBytes: 30 });
    statements(spool).insertRecord.run = () => {
      throw new Error('disk full');
    };
    const listener = vi.fn();
    spool.onAppend(listener);
    await expect(spool.append(rec('b'))).rejects.toThrow('disk full');
    expect(await counters(registry)).toEqual([0, 0, 0]);
    expect([spool.bytes, spool.appendedRecords, spool.commits, spool.isFull(30), spool.isFull(31)]).toEqual([0, 0, 0, false, true]);
    expect(listener).not.toHaveBeenCalled();
  });

  it('a body whose append failed is not "seen": a concurrent copy fails with it, and the sender\'s retry is appended', async () => {
    const spool = await open(join(tempDir(), 'spool'));
    const { insertRecord } = statements(spool);
    const run = insertRecord.run;
    insertRecord.run = () => {
      throw new Error('disk full');
    };
    const results = await Promise.allSettled([spool.append(rec('same')), spool.append(rec('same'))]);
    expect(results.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : r.value))).toEqual(['disk full', 'disk full']);
    insertRecord.run = run;
    expect(await spool.append(rec('same'))).toEqual({ status: 'appended' });
    expect(await spool.append(rec('same'))).toEqual({ status: 'duplicate' });
    expect(spool.appendedRecords).toBe(1);
  });

  it('at commit (the delete fails SQLITE_CORRUPT): the error goes to the replayer, and the salvaged plan is the batch again', async () => {
    const registry = new Registry();
    const spool = await open(join(tempDir(), 'spool'), { registry });
    for (const id of ['a', 'b', 'c']) await spool.append(rec(id));
    const batch = (await spool.nextBatch({ maxRows: 2, maxBytes: Infinity }))!;
    statements(spool).deleteRange.run = () => {
      throw corruptError();
    };
    await expect(spool.commit(batch)).rejects.toMatchObject({ code: 'SQLITE_CORRUPT' });
    expect(await counters(registry)).toEqual([1, 3, 0]);
    expect([spool.bytes, spool.pendingRows, spool.replayedRecords]).toEqual([30, 3, 0]);
    const again = (await spool.nextBatch(ALL))!;
    expect([again.resumed, ...ids(again.records)]).toEqual([true, 'a', 'b']);
    await spool.commit(again);
    expect([spool.bytes, spool.pendingRows, spool.replayedRecords]).toEqual([10, 1, 2]);
  });

  it('at commit, an error that is not damage leaves the batch current (nothing recovered)', async () => {
    const registry = new Registry();
    const spool = await open(join(tempDir(), 'spool'), { registry });
    await spool.append(rec('a'));
    const batch = (await spool.nextBatch(ALL))!;
    const original = statements(spool).deleteRange.run;
    statements(spool).deleteRange.run = () => {
      throw new Error('busy');
    };
    await expect(spool.commit(batch)).rejects.toThrow('busy');
    expect(await counters(registry)).toEqual([0, 0, 0]);
    expect(await spool.nextBatch(ALL)).toBe(batch);
    statements(spool).deleteRange.run = original;
    await spool.commit(batch);
    expect(await spool.nextBatch(ALL)).toBeNull();
  });
});

suite('sqlite-db', () => {
  it('isDamagedFileError: SQLITE_CORRUPT*, SQLITE_NOTADB* by name, or primary code 11 / 26 by number; nothing else', () => {
    const e = (fields: object) => Object.assign(new Error('x'), fields);
    for (const yes of [
      e({ code: 'SQLITE_CORRUPT' }),
      e({ code: 'SQLITE_CORRUPT_INDEX' }),
      e({ code: 'SQLITE_NOTADB' }),
      e({ errcode: 11 }),
      e({ errcode: 26 }),
      e({ errcode: 11 | (3 << 8) }),
      e({ code: 'ERR_SQLITE_ERROR', errcode: 26 }),
      { code: 'SQLITE_CORRUPT' },
    ]) {
      expect(isDamagedFileError(yes), JSON.stringify(yes)).toBe(true);
    }
    for (const no of [
      e({ code: 'SQLITE_IOERR' }),
      e({ code: 'XSQLITE_CORRUPT' }),
      e({ code: 'XSQLITE_NOTADB' }),
      Object.assign(() => undefined, { code: 'SQLITE_CORRUPT' }),
      e({ code: 'SQLITE_CONSTRAINT' }),
      e({ errcode: 10 }),
      e({ errcode: 1 }),
      e({ errcode: '11' }),
      e({ code: 11 }),
      e({ errcode: 27 }),
      e({ errcode: 12 }),
      e({ errcode: 25 }),
      new Error('database disk image is malformed'),
      'SQLITE_CORRUPT',
      null,
      undefined,
      11,
    ]) {
      expect(isDamagedFileError(no), JSON.stringify(no)).toBe(false);
    }
  });

  it('openSqlite: a transaction commits when its function returns and rolls back when it throws', () => {
    const db = openSqlite(join(tempDir(), 'x.sqlite'));
    try {
      expect(db.driver).toBe(Number(process.versions.node.split('.')[0]) >= 24 ? 'node:sqlite' : 'better-sqlite3');
      db.exec('CREATE TABLE t (v INTEGER)');
      const insert = db.prepare<[number]>('INSERT INTO t (v) VALUES (?)');
      db.transaction(() => insert.run(1));
      expect(() =>
        db.transaction(() => {
          insert.run(2);
          throw new Error('no');
        }),
      ).toThrow('no');
      expect(db.prepare<[], { v: number }>('SELECT v FROM t').all()).toEqual([{ v: 1 }]);
      expect(db.prepare<[number], { v: number }>('SELECT v FROM t WHERE v = ?').get(1)).toEqual({ v: 1 });
      expect(db.prepare<[number], { v: number }>('SELECT v FROM t WHERE v = ?').get(2)).toBeUndefined();
      expect([...db.prepare<[], { v: number }>('SELECT v FROM t').iterate()]).toEqual([{ v: 1 }]);
    } finally {
      db.close();
    }
  });

  it('openBuiltin (node:sqlite, Node 24 on) over a stand-in with its API: statements pass through; a transaction is BEGIN IMMEDIATE, then COMMIT or ROLLBACK', () => {
    const execs: string[] = [];
    // node:sqlite's DatabaseSync as far as the spool uses it, on better-sqlite3 (Node 20 has no node:sqlite).
    class StandIn implements BuiltinDatabase {
      private readonly db: Database.Database;
      constructor(path: string) {
        this.db = new Database(path);
      }
      exec(sql: string): void {
        execs.push(sql);
        this.db.exec(sql);
      }
      prepare(sql: string): BuiltinStatement {
        const st = this.db.prepare(sql);
        return { run: (...p) => st.run(...p), get: (...p) => st.get(...p), all: (...p) => st.all(...p), iterate: (...p) => st.iterate(...p) };
      }
      close(): void {
        // As node:sqlite's: closing a closed connection throws (better-sqlite3's does nothing).
        if (!this.db.open) throw new Error('database is not open');
        this.db.close();
      }
    }
    const path = join(tempDir(), 'builtin.sqlite');
    const db = openBuiltin(path, StandIn);
    expect(db.driver).toBe('node:sqlite');
    db.exec('CREATE TABLE t (v INTEGER)');
    const insert = db.prepare<[number]>('INSERT INTO t (v) VALUES (?)');
    expect(insert.run(1)).toBeUndefined();
    db.transaction(() => insert.run(2));
    expect(() =>
      db.transaction(() => {
        insert.run(3);
        throw new Error('no');
      }),
    ).toThrow('no');
    expect(execs).toEqual(['CREATE TABLE t (v INTEGER)', 'BEGIN IMMEDIATE', 'COMMIT', 'BEGIN IMMEDIATE', 'ROLLBACK']);
    expect(db.prepare<[], { v: number }>('SELECT v FROM t ORDER BY v').all()).toEqual([{ v: 1 }, { v: 2 }]);
    expect(db.prepare<[number], { v: number }>('SELECT v FROM t WHERE v = ?').get(2)).toEqual({ v: 2 });
    expect(db.prepare<[number], { v: number }>('SELECT v FROM t WHERE v = ?').get(3)).toBeUndefined();
    expect([...db.prepare<[number], { v: number }>('SELECT v FROM t WHERE v >= ? ORDER BY v').iterate(1)]).toEqual([{ v: 1 }, { v: 2 }]);
    db.close();
    const check = new Database(path, { readonly: true });
    expect(check.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 2 });
    check.close();
    expect(() => db.exec('SELECT 1')).toThrow('The database connection is not open');
    // A spool closed twice (its owner's stop after a failure already closed it) closes once, as on better-sqlite3.
    expect(() => db.close()).not.toThrow();
  });
});
