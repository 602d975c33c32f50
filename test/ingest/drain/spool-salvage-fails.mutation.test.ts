// The salvage of a damaged spool file itself failing (a disk error while copying it): the spool still opens, empty,
// says where the records stayed, and counts the file as damaged (sqlite-spool.ts recover). The salvage is replaced
// by one that throws: nothing in a test's reach makes the real one fail (the tests run as root).
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { SqliteSpool } from '../../../src/ingest/drain/spool/sqlite-spool.js';
import { captureLog } from '../../support/log-capture.js';

vi.mock('../../../src/ingest/drain/spool/salvage.js', () => ({
  salvageSpool: () => {
    throw Object.assign(new Error('EIO: i/o error, copyfile'), { code: 'EIO' });
  },
}));

describe('a salvage that fails', () => {
  it('the spool opens empty and works; the damage is counted, nothing salvaged or counted lost; the log names the file kept aside', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'spool-salvage-fails-')), 'logs');
    mkdirSync(dir);
    writeFileSync(join(dir, 'spool.sqlite'), Buffer.alloc(4096, 0x5a));
    const registry = new Registry();
    const { logger, lines } = captureLog('info');
    const spool = await SqliteSpool.open({ dir, maxBytes: 1 << 20, commitThread: false, registry, logger });
    try {
      const aside = readdirSync(dir).filter((f) => f.startsWith('spool.sqlite.corrupt-'));
      expect(aside).toHaveLength(1);
      expect(readFileSync(join(dir, aside[0]!)).equals(Buffer.alloc(4096, 0x5a))).toBe(true);
      expect(lines[0]).toMatchObject({
        level: 50,
        spool: 'logs',
        movedTo: join(dir, aside[0]!),
        err: expect.objectContaining({ message: 'EIO: i/o error, copyfile' }),
        msg: `salvaging the damaged logs spool failed; its records stay in ${aside[0]}`,
      });
      // Nothing could be read: how many records were lost is unknown, never "0" (issue 44.5).
      expect(lines[1]).toMatchObject({ level: 50, salvagedRecords: 0, lostRecords: 'unknown', lostExact: false, headerRebuilt: false });
      expect(lines[1].msg).toMatch(/0 record\(s\) salvaged and replayed, an unknown number lost/);
      const values = async (name: string) => (await registry.getSingleMetric(name)!.get()).values.map((v) => v.value);
      expect([await values('tallyhouse_spool_damaged_total'), await values('tallyhouse_spool_salvaged_records_total'), await values('tallyhouse_spool_lost_records_total')]).toEqual([[1], [0], [0]]);
      const staged = { count: 1, bytes: 3, crc: 0, file: undefined, memory: [Buffer.from('{}\n')] };
      expect(await spool.append({ id: 'after', receivedAtMs: 1, rowFormat: { format: 'JSONEachRow' }, rows: staged, rejects: { ...staged, count: 0, bytes: 0, memory: [] } })).toEqual({ status: 'appended' });
      expect((await spool.nextBatch({ maxRows: 10, maxBytes: 1 << 20 }))!.records.map((r) => r.id)).toEqual(['after']);
    } finally {
      await spool.close();
    }
  });

  it('without a logger too', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'spool-salvage-fails-')), 'logs');
    mkdirSync(dir);
    writeFileSync(join(dir, 'spool.sqlite'), Buffer.alloc(4096, 0x5a));
    const spool = await SqliteSpool.open({ dir, maxBytes: 1 << 20, commitThread: false });
    try {
      expect([spool.bytes, spool.appendedRecords]).toEqual([0, 0]);
    } finally {
      await spool.close();
    }
  });
});
