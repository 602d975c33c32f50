// insertEncodedLines (issue 34.2): rows handed to the writer already encoded, as the requests collector does, go to
// the store as they are; a row the store refuses is still isolated into ingest_rejects, with its neighbours stored
// and every value (text beyond ASCII, decimals to the last digit) as it was written.
import { join } from 'node:path';
import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openStore, type Store } from '../../src/store/client.js';
import { migrate } from '../../src/store/migrate.js';
import { BatchWriter, type WriterOptions } from '../../src/store/writer.js';
import { defineTable } from '../../src/store/tables/table.js';
import { processDataDir, queryRows } from '../support/store.js';
import { startClickHouseHttp, type ClickHouseHttp } from '../support/clickhouse-http.js';

const TABLE_DDL = `CREATE TABLE IF NOT EXISTS encoded_probe
(
    id UInt32,
    name String,
    amount Decimal(38, 12)
)
ENGINE = MergeTree
ORDER BY id
SETTINGS non_replicated_deduplication_window = 1000`;

const probe = defineTable('encoded_probe', z.object({ id: z.number(), name: z.string(), amount: z.string() }));

const NAMES = ['plain', 'café', '日本語', 'tab\there', 'new\nline', 'quote"back\\slash', '€ 1,5'];
const line = (id: number) => JSON.stringify({ id, name: NAMES[id % NAMES.length], amount: `${id}.000000000007` });
const encode = (lines: string[]) => Buffer.from(`${lines.map((l) => `${l}\n`).join('')}`);

let http: ClickHouseHttp;
beforeAll(async () => {
  http = await startClickHouseHttp({ dataDir: processDataDir() });
});
afterAll(async () => {
  await http.close();
});

const infileDir = join(processDataDir(), 'tmp', 'writer-encoded');
const backends: Array<[string, () => Promise<Store>, WriterOptions]> = [
  ['embedded chDB (batch files, INSERT FROM INFILE)', () => openStore({ dataDir: processDataDir(), database: 'encoded_infile' }), { infileDir }],
  ['a ClickHouse HTTP endpoint', () => openStore({ dataDir: processDataDir(), url: http.url, database: 'encoded_http' }), {}],
];

describe.each(backends)('insertEncodedLines, %s', (_name, open, writerOpts) => {
  let store: Store;
  beforeAll(async () => {
    store = await open();
    await migrate(store);
    await store.client.command({ query: TABLE_DDL });
  });
  afterAll(async () => {
    await store.close();
  });

  it('stores the rows as written and isolates a bad one inside a chunk into ingest_rejects', async () => {
    await store.client.command({ query: 'TRUNCATE TABLE encoded_probe' });
    const writer = new BatchWriter(store, { ...writerOpts, maxRows: 1000, flushIntervalMs: 60_000 });
    const bad = JSON.stringify({ id: 'not-a-number', name: 'bad', amount: '1' });
    // Three chunks of whole lines (pages), the bad row in the middle of the second.
    const chunks = [encode([0, 1, 2, 3].map(line)), encode([line(4), line(5), bad, line(6)]), encode([7, 8, 9, 10, 11, 12, 13].map(line))];
    const pending = writer.insertEncodedLines(probe, chunks, 15);
    await writer.close();
    await expect(pending).resolves.toEqual({ written: 14, rejected: 1 });

    const stored = await queryRows<{ id: number; name: string; amount: string }>(
      { store },
      'SELECT id, name, toString(amount) AS amount FROM encoded_probe ORDER BY id',
    );
    expect(stored).toEqual(
      Array.from({ length: 14 }, (_, id) => ({ id, name: NAMES[id % NAMES.length], amount: `${id}.000000000007` })),
    );
    const rejects = await queryRows<{ raw: string; reason: string }>(
      { store },
      "SELECT raw, reason FROM ingest_rejects WHERE source = 'writer:encoded_probe'",
    );
    expect(rejects.map((r) => r.raw)).toEqual([bad]);
    expect(rejects[0].reason).toMatch(/ClickHouse \w+ \(code \d+\)/);
    if (writerOpts.infileDir) expect(readdirSync(writerOpts.infileDir)).toEqual([]);
  });

  it('encoded rows and lines handed in together go out in one insert, each caller told its own rows', async () => {
    await store.client.command({ query: 'TRUNCATE TABLE encoded_probe' });
    const writer = new BatchWriter(store, { ...writerOpts, maxRows: 1000, flushIntervalMs: 60_000 });
    const a = writer.insertEncodedLines(probe, [encode([1, 2, 3].map(line))], 3);
    const b = writer.insertLines(probe, [4, 5].map(line));
    const c = writer.insert(probe, [{ id: 6, name: 'typed', amount: '0.000000000001' }]);
    await writer.close();
    expect(await Promise.all([a, b, c])).toEqual([
      { written: 3, rejected: 0 },
      { written: 2, rejected: 0 },
      { written: 1, rejected: 0 },
    ]);
    const [sum] = await queryRows<{ n: string; total: string }>({ store }, 'SELECT count() AS n, toString(sum(amount)) AS total FROM encoded_probe');
    // 1+2+3+4+5 and 5 x 0.000000000007, plus the typed row's 0.000000000001 (by hand).
    expect(sum).toEqual({ n: '6', total: '15.000000000036' });
  });
});
