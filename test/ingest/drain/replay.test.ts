// The spool replayer on both store backends: a batch the store took but whose commit was lost (the process
// died in between) is stored once when replayed from the saved plan; a row the store refuses goes to
// ingest_rejects while its neighbours are stored.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../src/store/client.js';
import { migrate } from '../../../src/store/migrate.js';
import { BatchWriter } from '../../../src/store/writer.js';
import { openSpool } from '../../../src/ingest/drain/spool/open-spool.js';
import type { Spool } from '../../../src/ingest/drain/spool/spool.js';
import { SpoolReplayer } from '../../../src/ingest/drain/replay.js';
import { DataStage, StagingBudget } from '../../../src/ingest/drain/stage-body.js';
import { LOG_ROW_COLUMNS, mapLine } from '../../../src/collectors/log-line.js';
import { processDataDir, queryRows } from '../../support/store.js';
import { startClickHouseHttp, type ClickHouseHttp } from '../../support/clickhouse-http.js';

let http: ClickHouseHttp;
beforeAll(async () => {
  http = await startClickHouseHttp({ dataDir: processDataDir() });
});
afterAll(async () => {
  await http.close();
});

const FORMAT = { format: 'TabSeparated', columns: LOG_ROW_COLUMNS };

async function appendBatch(spool: Spool, tag: string, lines: number, extraRows: string[] = []): Promise<void> {
  const budget = new StagingBudget(1 << 30);
  const rows = new DataStage(budget, 1 << 30, () => spool.stagingPath());
  const rejects = new DataStage(budget, 1 << 30, () => spool.stagingPath());
  const ctx = { receivedAt: '2026-11-21 12:00:00.000', batchId: '0b8e7a6c-1f7e-4d64-9a54-3c1b7d1f2e11' };
  for (let i = 0; i < lines; i++) {
    const r = mapLine(JSON.stringify({ timestamp: `2026-11-${10 + (i % 5)}T10:00:00Z`, level: 'INFO', message: `${tag} ${i}`, svc_app_name: tag }), i + 1, ctx);
    if (r.ok) rows.add(r.row);
  }
  for (const row of extraRows) rows.add(row);
  rejects.add(JSON.stringify({ source: 'log_drain', reason: 'not_json: test', raw: `${tag} bad`, line: 0, batch_id: ctx.batchId }));
  // wall-clock: the spool's dedup window counts from the machine's clock
  await spool.append({ id: `${tag}`.padEnd(64, '0'), receivedAtMs: Date.now(), rowFormat: FORMAT, rows: await rows.finish(), rejects: await rejects.finish() });
  await Promise.all([rows.release(), rejects.release()]);
}

const backends: Array<[string, () => Promise<Store>]> = [
  ['embedded chDB (batch file)', () => openStore({ dataDir: processDataDir(), database: 'replay_embedded' })],
  ['ClickHouse over HTTP', () => openStore({ url: http.url, dataDir: processDataDir(), database: 'replay_http', connectTimeoutMs: 5_000 })],
];

describe.each(backends)('spool replayer on %s', (_name, open) => {
  let store: Store;
  let writer: BatchWriter;
  beforeAll(async () => {
    store = await open();
    await migrate(store);
    writer = new BatchWriter(store, { flushIntervalMs: 20 });
  });
  afterAll(async () => {
    await writer.close();
    await store.close();
  });

  const count = async (tag: string) => {
    const [r] = await queryRows<{ n: string; rejects: string }>(
      { store },
      "SELECT (SELECT count() FROM logs WHERE app = {tag:String}) AS n, (SELECT count() FROM ingest_rejects WHERE raw = concat({tag:String}, ' bad')) AS rejects",
      { tag },
    );
    return [Number(r.n), Number(r.rejects)];
  };

  async function replay(dir: string): Promise<void> {
    const spool = await openSpool({ dir, maxBytes: 1 << 30 });
    const replayer = new SpoolReplayer({ spool, store, writer, lingerMs: 0, infileDir: spool.stagingDir });
    replayer.start();
    await replayer.whenReplayed();
    await replayer.stop();
    await spool.close();
  }

  it('a batch that reached the store before its commit was saved is stored once when replayed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'replay-'));
    const tag = `once-${_name.length}`;
    let spool = await openSpool({ dir, maxBytes: 1 << 30 });
    await appendBatch(spool, tag, 300);
    await appendBatch(spool, `${tag}-b`, 200);
    // Handed out for insertion (and so saved), never committed: the process died during the insert.
    const batch = (await spool.nextBatch({ maxRows: Infinity, maxBytes: Infinity }))!;
    await spool.close();
    // The state as the process left it when it died during the insert.
    const snapshot = mkdtempSync(join(tmpdir(), 'replay-snapshot-'));
    cpSync(dir, snapshot, { recursive: true });

    await replay(dir);
    expect(await count(tag)).toEqual([300, 1]);
    expect(await count(`${tag}-b`)).toEqual([200, 1]);

    rmSync(dir, { recursive: true });
    cpSync(snapshot, dir, { recursive: true });
    spool = await openSpool({ dir, maxBytes: 1 << 30 });
    const resumed = await spool.nextBatch({ maxRows: Infinity, maxBytes: Infinity });
    expect(resumed?.resumed).toBe(true);
    expect(resumed?.records.map((r) => r.id)).toEqual(batch.records.map((r) => r.id));
    await spool.close();
    await replay(dir);
    expect(await count(tag)).toEqual([300, 1]);
    expect(await count(`${tag}-b`)).toEqual([200, 1]);
  });

  it('a row the store refuses is kept in ingest_rejects; its neighbours are stored', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'replay-'));
    const tag = `refused-${_name.length}`;
    const spool = await openSpool({ dir, maxBytes: 1 << 30 });
    const bad = ['not a date', 'INFO', tag, '', '', '', '', '', '', '', '', 'refused row', '{}', '2026-11-21 12:00:00.000', '0b8e7a6c-1f7e-4d64-9a54-3c1b7d1f2e11', '9'].join('\t');
    await appendBatch(spool, tag, 50, [bad]);
    await spool.close();
    await replay(dir);
    await writer.flush();
    expect(await count(tag)).toEqual([50, 1]);
    const [refused] = await queryRows<{ source: string; raw: string }>({ store }, "SELECT source, raw FROM ingest_rejects WHERE source = 'writer:logs' AND raw = {raw:String}", { raw: bad });
    expect(refused).toEqual({ source: 'writer:logs', raw: bad });
  });
});
