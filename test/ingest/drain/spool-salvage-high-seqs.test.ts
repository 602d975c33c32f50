// A spool's seqs only grow (AUTOINCREMENT): after months of bodies taken and replayed, the records waiting in it
// have seqs in the millions. The salvage of a damaged file used to read seq 1, 2, 3... and skip one seq per failed
// read, giving up after 100,000: with the first leaf of `records` damaged, it never reached the next readable leaf,
// so every record was thrown away (and none counted lost). Oracle: SQLite's dbstat on the undamaged file says which
// leaf each record is on (records are small: one cell each); exactly those on the other leaves must come back.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { salvageSpool } from '../../../src/ingest/drain/spool/salvage.js';
import { SPOOL_SCHEMA } from '../../support/spool-file.js';


const FIRST_SEQ = 5_000_001;
const RECORDS = 200;

describe('salvage of a long-running spool', () => {
  it('a damaged first leaf costs its records only, though the live seqs start at 5,000,001', () => {
    const dir = mkdtempSync(join(tmpdir(), 'th-salvage-'));
    const file = join(dir, 'spool.sqlite');
    const db = new Database(file);
    db.exec(SPOOL_SCHEMA);
    // What five million bodies taken and replayed leave: the seq counter far up, the records table holding the rest.
    db.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES ('records', ?)").run(FIRST_SEQ - 1);
    const insert = db.prepare("INSERT INTO records (id, received_at_ms, row_format, rows, rejects, row_data, reject_data) VALUES (?, ?, '{\"format\":\"JSONEachRow\"}', 1, 0, ?, x'')");
    db.transaction(() => {
      for (let i = 0; i < RECORDS; i++) insert.run(`body-${i}`, 1_764_000_000_000 + i, Buffer.from(`{"message":"line ${i}"}\n${'x'.repeat(120)}`));
    })();
    const pageSize = Number(db.pragma('page_size', { simple: true }));
    const leaves = (db.prepare("SELECT path, pageno, ncell FROM dbstat WHERE name = 'records' AND pagetype = 'leaf'").all() as Array<{ path: string; pageno: number; ncell: number }>)
      .sort((a, b) => (a.path < b.path ? -1 : 1));
    db.close();
    expect(leaves.reduce((n, l) => n + l.ncell, 0)).toBe(RECORDS);
    expect(leaves.length).toBeGreaterThan(3);
    const onFirstLeaf = leaves[0].ncell;
    // Garbage over the first leaf of records.
    const bytes = readFileSync(file);
    bytes.fill(0xa5, (leaves[0].pageno - 1) * pageSize, leaves[0].pageno * pageSize);
    writeFileSync(file, bytes);

    const salvage = salvageSpool(file, join(dir, 'salvage'));
    const expected = Array.from({ length: RECORDS - onFirstLeaf }, (_, k) => `body-${onFirstLeaf + k}`);
    expect(salvage.records.map((r) => r.id)).toEqual(expected);
    expect(salvage.records[0].seq).toBe(FIRST_SEQ + onFirstLeaf);
  });
});
