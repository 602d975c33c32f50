// Issue 28.3: a damaged spool.sqlite (a header or a page overwritten) kept the whole service down ("file is not a
// database" / "database disk image is malformed", exit 1 on every start). Now the service starts, the damaged file
// is moved aside, the records on undamaged pages reach the store, and the damage is counted.
// The oracle is independent of the salvage: SQLite's dbstat, on the undamaged file, lists the leaves of `records`
// in key order with their cell counts, which gives the page each body's record lives on (bodies are small: one cell
// each); garbage is then written over chosen pages, and exactly the bodies on the other pages must be stored.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startClickHouseHttp, type ClickHouseHttp } from '../../support/clickhouse-http.js';
import { processDataDir, queryRows, tempDataDir } from '../../support/store.js';
import { mulberry32 } from '../../../src/sim/prng.js';
import { postSigned, startDrainService } from './helpers.js';
import { openSpool } from '../../../src/ingest/drain/spool/open-spool.js';
import { createRegistry } from '../../../src/metrics.js';

let ch: ClickHouseHttp;
beforeAll(async () => {
  ch = await startClickHouseHttp({ dataDir: processDataDir() });
});
afterAll(async () => {
  await ch?.close();
});

const BODIES = 60;
const LINES = 3;
const message = (point: string, body: number, l: number) => `dmg-${point}-${body}-${l}`;

/** A spool holding BODIES acknowledged bodies the store has not taken (the replayer stopped), the service closed. */
async function spoolWithUnreplayedBodies(point: string): Promise<string> {
  const dataDir = tempDataDir();
  const d = await startDrainService({ CLICKHOUSE_URL: ch.url, DATA_DIR: dataDir });
  try {
    await d.replayer.stop();
    for (let b = 0; b < BODIES; b++) {
      const lines = Array.from({ length: LINES }, (_, l) =>
        JSON.stringify({ timestamp: `2026-11-21T10:${String(b % 60).padStart(2, '0')}:0${l}.000Z`, level: 'INFO', message: message(point, b, l), svc_app_name: 'damage' }),
      );
      const res = await postSigned(d.drainUrl, lines.join('\n'));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    expect(d.spool.pendingRows).toBe(BODIES * LINES);
  } finally {
    await d.close();
  }
  return dataDir;
}

interface Layout {
  pageSize: number;
  /** Page (1-based) of each body's record. */
  pageOfBody: number[];
  recordLeaves: number[];
  seenPages: number[];
}

function layoutOf(file: string, point: string): Layout {
  const db = new Database(file, { readonly: true });
  try {
    const pageSize = Number(db.pragma('page_size', { simple: true }));
    const pages = db.prepare('SELECT name, path, pageno, pagetype, ncell FROM dbstat').all() as Array<{ name: string; path: string; pageno: number; pagetype: string; ncell: number }>;
    // The leaves of `records` in key order (dbstat's path walks the b-tree in order): the k-th body's record (seqs
    // are given in the order the bodies were acknowledged, one record each) is on the leaf whose cells reach k.
    const leaves = pages.filter((p) => p.name === 'records' && p.pagetype === 'leaf').sort((a, b) => (a.path < b.path ? -1 : 1));
    expect(leaves.reduce((n, l) => n + l.ncell, 0)).toBe(BODIES);
    const pageOfBody = leaves.flatMap((l) => Array.from({ length: l.ncell }, () => l.pageno));
    const recordLeaves = leaves.map((l) => l.pageno);
    const seenPages = pages.filter((p) => p.name === 'seen').map((p) => p.pageno);
    return { pageSize, pageOfBody, recordLeaves, seenPages };
  } finally {
    db.close();
  }
}

function writeGarbage(file: string, offset: number, length: number, seed: number): void {
  const bytes = readFileSync(file);
  const next = mulberry32(seed);
  for (let i = 0; i < length; i++) bytes[offset + i] = Math.floor(next() * 256);
  writeFileSync(file, bytes);
}

/** The damage points: byte ranges of the file, chosen from its layout. */
const POINTS: Array<{ name: string; range: (l: Layout) => { offset: number; length: number } }> = [
  { name: 'magic', range: () => ({ offset: 0, length: 16 }) },
  { name: 'header', range: () => ({ offset: 16, length: 84 }) },
  { name: 'first-leaf', range: (l) => ({ offset: (l.recordLeaves[0] - 1) * l.pageSize, length: l.pageSize }) },
  { name: 'middle-leaf', range: (l) => ({ offset: (l.recordLeaves[l.recordLeaves.length >> 1] - 1) * l.pageSize, length: l.pageSize }) },
  { name: 'last-leaf', range: (l) => ({ offset: (l.recordLeaves[l.recordLeaves.length - 1] - 1) * l.pageSize, length: l.pageSize }) },
  { name: 'seen-index', range: (l) => ({ offset: (l.seenPages[0] - 1) * l.pageSize + 8, length: l.pageSize - 8 }) },
];

const metric = (text: string, name: string) => Number(new RegExp(`^${name}\\{spool="logs"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);

describe('a damaged drain spool', () => {
  it.each(POINTS.map((p, i) => [p.name, p, i] as const))('garbage over the %s: the service starts, the bodies on undamaged pages reach the store, the damage is counted', async (name, point, i) => {
    const dataDir = await spoolWithUnreplayedBodies(name);
    const file = join(dataDir, 'spool', 'logs', 'spool.sqlite');
    const layout = layoutOf(file, name);
    expect(layout.recordLeaves.length).toBeGreaterThan(3);
    const { offset, length } = point.range(layout);
    const damagedPages = new Set<number>();
    for (let p = Math.floor(offset / layout.pageSize); p <= Math.floor((offset + length - 1) / layout.pageSize); p++) damagedPages.add(p + 1);
    const intact = Array.from({ length: BODIES }, (_, b) => b).filter((b) => !damagedPages.has(layout.pageOfBody[b]));
    const lost = BODIES - intact.length;
    if (name.endsWith('leaf')) expect(lost).toBeGreaterThan(0);
    else expect(lost).toBe(0);
    writeGarbage(file, offset, length, 1000 + i);

    const d = await startDrainService({ CLICKHOUSE_URL: ch.url, DATA_DIR: dataDir });
    try {
      await d.replayer.whenReplayed();
      const stored = await queryRows<{ message: string; n: string }>(
        d.service,
        'SELECT message, count() AS n FROM logs FINAL WHERE startsWith(message, {prefix:String}) GROUP BY message ORDER BY message',
        { prefix: `dmg-${name}-` },
      );
      const expected = intact.flatMap((b) => Array.from({ length: LINES }, (_, l) => message(name, b, l))).sort();
      expect(stored.map((r) => r.message)).toEqual(expected);
      expect(stored.every((r) => r.n === '1')).toBe(true);

      const metrics = await (await fetch(`${d.url}/metrics`)).text();
      expect(metric(metrics, 'tallyhouse_spool_damaged_total')).toBe(1);
      expect(metric(metrics, 'tallyhouse_spool_salvaged_records_total')).toBe(intact.length);
      // Every lost record is counted, a lost first one too (issue 44.5: the replay watermark bounds the live seqs).
      expect(metric(metrics, 'tallyhouse_spool_lost_records_total')).toBe(lost);

      // The damaged file is kept aside for a post-mortem; the new one is the owner's only.
      const dir = join(dataDir, 'spool', 'logs');
      expect(readdirSync(dir).filter((f) => /^spool\.sqlite\.corrupt-[0-9TZ]+$/.test(f))).toHaveLength(1);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(statSync(dir).mode & 0o777).toBe(0o700);
    } finally {
      await d.close();
    }
  });

  it('the Faro spool (the same storage): a damaged header, every record still replayed, counted under spool="faro"', async () => {
    const dir = join(tempDataDir(), 'spool', 'faro');
    const staged = (text: string) => ({ count: 1, bytes: Buffer.byteLength(text), crc: 0, file: undefined, memory: [Buffer.from(text)] });
    const ids = Array.from({ length: 20 }, (_, i) => String(i).padStart(64, 'f'));
    const first = await openSpool({ dir, maxBytes: 1 << 30 });
    for (const [i, id] of ids.entries()) {
      await first.append({ id, receivedAtMs: 1_700_000_000_000 + i, rowFormat: { format: 'JSONEachRow' }, rows: staged(`{"item":${i}}\n`), rejects: staged('') });
    }
    await first.close();
    writeGarbage(join(dir, 'spool.sqlite'), 0, 100, 7);

    const registry = createRegistry({ defaultMetrics: false });
    const spool = await openSpool({ dir, maxBytes: 1 << 30, registry });
    try {
      const batch = await spool.nextBatch({ maxRows: 1000, maxBytes: 1 << 30 });
      expect(batch?.records.map((r) => r.rowData.toString())).toEqual(ids.map((_, i) => `{"item":${i}}\n`));
      const text = await registry.metrics();
      expect(/^tallyhouse_spool_damaged_total\{spool="faro"\} (\d+)$/m.exec(text)?.[1]).toBe('1');
      expect(/^tallyhouse_spool_salvaged_records_total\{spool="faro"\} (\d+)$/m.exec(text)?.[1]).toBe('20');
      // A body acknowledged before the damage is still recognised when it comes again.
      expect(await spool.append({ id: ids[3], receivedAtMs: 0, rowFormat: { format: 'JSONEachRow' }, rows: staged('{}\n'), rejects: staged('') })).toEqual({ status: 'duplicate' });
    } finally {
      await spool.close();
    }
  });

  it('damage found at replay (a read fails SQLITE_CORRUPT after a clean open): recovered in place, every body stored, counted', async () => {
    const d = await startDrainService({ CLICKHOUSE_URL: ch.url, DATA_DIR: tempDataDir() });
    try {
      await d.replayer.stop();
      for (let b = 0; b < 10; b++) {
        const res = await postSigned(d.drainUrl, JSON.stringify({ timestamp: `2026-11-21T11:00:0${b}.000Z`, level: 'INFO', message: message('replay', b, 0), svc_app_name: 'damage' }));
        expect(res.status).toBe(200);
      }
      // SQLite reports a page it cannot parse the next time the replayer reads the spool (as it would for a page
      // damaged on disk after the open: the open's check had passed). The file itself reads back whole.
      const statements = (d.spool as unknown as { sql: { oldest: { iterate: () => unknown } } }).sql;
      statements.oldest.iterate = () => {
        throw Object.assign(new Error('database disk image is malformed'), { code: 'SQLITE_CORRUPT' });
      };
      d.replayer.start();
      await d.replayer.whenReplayed();
      const stored = await queryRows<{ message: string }>(d.service, "SELECT message FROM logs FINAL WHERE startsWith(message, 'dmg-replay-') ORDER BY message");
      expect(stored.map((r) => r.message)).toEqual(Array.from({ length: 10 }, (_, b) => message('replay', b, 0)));
      const metrics = await (await fetch(`${d.url}/metrics`)).text();
      expect(metric(metrics, 'tallyhouse_spool_damaged_total')).toBe(1);
      expect(metric(metrics, 'tallyhouse_spool_salvaged_records_total')).toBe(10);
      expect(metric(metrics, 'tallyhouse_spool_lost_records_total')).toBe(0);
      // The drain goes on taking bodies into the recovered file.
      const after = await postSigned(d.drainUrl, JSON.stringify({ timestamp: '2026-11-21T11:01:00.000Z', level: 'INFO', message: 'dmg-replay-after', svc_app_name: 'damage' }));
      expect(after.status).toBe(200);
      await d.replayer.whenReplayed();
      expect(await queryRows(d.service, "SELECT message FROM logs FINAL WHERE message = 'dmg-replay-after'")).toHaveLength(1);
    } finally {
      await d.close();
    }
  });
});
