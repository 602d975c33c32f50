import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { openStore, type Store } from '../../src/store/client.js';
import { migrate } from '../../src/store/migrate.js';
import { BatchWriter, type WriterOptions } from '../../src/store/writer.js';
import { classifyStoreError, CLASSIFIED_CODES } from '../../src/store/errors.js';
import { defineTable } from '../../src/store/tables/table.js';
import { z } from 'zod';
import { join } from 'node:path';
import { readdirSync } from 'node:fs';
import { processDataDir, queryRows } from '../support/store.js';
import { startClickHouseHttp, type ClickHouseHttp } from '../support/clickhouse-http.js';

const TABLE_DDL = `CREATE TABLE IF NOT EXISTS writer_probe
(
    id UInt32,
    name String,
    amount Decimal(38, 12),
    at DateTime64(3, 'UTC')
)
ENGINE = MergeTree
ORDER BY id
SETTINGS non_replicated_deduplication_window = 1000`;

// The probe table's definition, as a table module declares one: the writer takes rows of this shape only.
const probe = defineTable('writer_probe', z.object({ id: z.number(), name: z.string(), amount: z.string(), at: z.string() }));
const missing = defineTable('no_such_table', probe.row);

function rows(from: number, count: number) {
  return Array.from({ length: count }, (_, i) => ({
    id: from + i,
    name: `row-${from + i}`,
    amount: `${from + i}.000000000001`,
    at: '2026-11-01T00:00:00.000Z',
  }));
}

async function counts(store: Store) {
  const [r] = await queryRows<{ rows: string; distinct_ids: string; total: string }>(
    { store },
    'SELECT count() AS rows, uniqExact(id) AS distinct_ids, toString(sum(amount)) AS total FROM writer_probe',
  );
  return { rows: Number(r.rows), distinctIds: Number(r.distinct_ids), total: r.total };
}

let http: ClickHouseHttp;

beforeAll(async () => {
  http = await startClickHouseHttp({ dataDir: processDataDir() });
});
afterAll(async () => {
  await http.close();
});

const backends: Array<[string, () => Promise<Store>, WriterOptions]> = [
  ['embedded chDB (rows through the client)', () => openStore({ dataDir: processDataDir(), database: 'writer_embedded' }), {}],
  [
    'embedded chDB (batch files, INSERT FROM INFILE)',
    () => openStore({ dataDir: processDataDir(), database: 'writer_infile' }),
    { infileDir: join(processDataDir(), 'tmp', 'writer-test') },
  ],
  [
    'ClickHouse over HTTP',
    () => openStore({ url: http.url, dataDir: processDataDir(), database: 'writer_http', connectTimeoutMs: 5_000 }),
    {},
  ],
];

describe.each(backends)('batch writer on %s', (_name, open, writerOpts) => {
  let store: Store;
  beforeAll(async () => {
    store = await open();
    await migrate(store);
    await store.client.command({ query: TABLE_DDL });
  });
  afterAll(async () => {
    await store.client.command({ query: 'DROP TABLE IF EXISTS writer_probe' });
    await store.close();
  });

  it('flushes at the row limit, on the interval and on close, and resolves once rows are stored', async () => {
    await store.client.command({ query: 'TRUNCATE TABLE writer_probe' });
    const registry = new Registry();
    const writer = new BatchWriter(store, { ...writerOpts, maxRows: 100, flushIntervalMs: 60_000, registry });
    // 250 rows at a 100-row limit: two batches go at once, 50 rows wait for close().
    const results = await Promise.all([writer.insert(probe, rows(0, 200))]);
    expect(results[0]).toEqual({ written: 200, rejected: 0 });
    expect((await counts(store)).rows).toBe(200);
    const pending = writer.insert(probe, rows(200, 50));
    expect(writer.pending()).toEqual({ writer_probe: 50 });
    await writer.close();
    await expect(pending).resolves.toEqual({ written: 50, rejected: 0 });
    expect(await counts(store)).toEqual({ rows: 250, distinctIds: 250, total: '31125.00000000025' });
    const metrics = await registry.getSingleMetricAsString('tallyhouse_writer_rows_written_total');
    expect(metrics).toContain('tallyhouse_writer_rows_written_total{table="writer_probe"} 250');
    await expect(writer.insert(probe, rows(300, 1))).rejects.toThrow(/writer is closed/);
  });

  it('flushes on the interval without being asked', async () => {
    await store.client.command({ query: 'TRUNCATE TABLE writer_probe' });
    const writer = new BatchWriter(store, { ...writerOpts, maxRows: 10_000, flushIntervalMs: 30 });
    const done = writer.insert(probe, rows(0, 7));
    await expect(done).resolves.toEqual({ written: 7, rejected: 0 });
    expect((await counts(store)).rows).toBe(7);
    await writer.close();
  });

  it('isolates a bad row into ingest_rejects and stores its neighbours', async () => {
    await store.client.command({ query: 'TRUNCATE TABLE writer_probe' });
    await store.client.command({ query: "DELETE FROM ingest_rejects WHERE source = 'writer:writer_probe'" }).catch(() => undefined);
    const writer = new BatchWriter(store, { ...writerOpts, maxRows: 1000, flushIntervalMs: 60_000 });
    // A row the store refuses cannot be typed; it comes as a serialized line (as the requests collector sends).
    const batch = rows(0, 9).map((r) => JSON.stringify(r));
    batch.splice(4, 0, JSON.stringify({ id: 'not-a-number', name: 'bad', amount: '1', at: '2026-11-01T00:00:00Z' }));
    const pending = writer.insertLines(probe, batch);
    await writer.close();
    const result = await pending;
    expect(result).toEqual({ written: 9, rejected: 1 });
    expect((await counts(store)).rows).toBe(9);
    const rejects = await queryRows<{ source: string; reason: string; raw: string }>(
      { store },
      "SELECT source, reason, raw FROM ingest_rejects WHERE source = 'writer:writer_probe'",
    );
    expect(rejects).toHaveLength(1);
    expect(JSON.parse(rejects[0].raw)).toMatchObject({ id: 'not-a-number', name: 'bad' });
    expect(rejects[0].reason).toMatch(/ClickHouse \w+ \(code \d+\)/);
    // Batch files are removed once read, whatever the outcome.
    if (writerOpts.infileDir) expect(readdirSync(writerOpts.infileDir)).toEqual([]);
  });

  it('a statement the store refuses outright (no such table) fails back to the caller instead of retrying', async () => {
    const writer = new BatchWriter(store, { ...writerOpts, flushIntervalMs: 10 });
    const err = await writer.insert(missing, rows(0, 3)).catch((e: unknown) => e);
    expect(classifyStoreError(err)).toBe('permanent');
    expect((err as { code: string }).code).toBe('60');
    await writer.close();
  });

  it('a batch sent twice with its token is stored once', async () => {
    await store.client.command({ query: 'TRUNCATE TABLE writer_probe' });
    const w1 = new BatchWriter(store, { ...writerOpts, flushIntervalMs: 60_000 });
    const w2 = new BatchWriter(store, { ...writerOpts, flushIntervalMs: 60_000 });
    const insertAndFlush = async (w: BatchWriter, r: ReturnType<typeof rows>) => {
      const p = w.insert(probe, r);
      await w.flush();
      return p;
    };
    await insertAndFlush(w1, rows(0, 20));
    // Same content, same token: ClickHouse deduplicates it (as when a retry follows a lost answer).
    await expect(insertAndFlush(w2, rows(0, 20))).resolves.toEqual({ written: 20, rejected: 0 });
    await insertAndFlush(w1, rows(20, 1)); // a different batch is not deduplicated
    await Promise.all([w1.close(), w2.close()]);
    expect(await counts(store)).toMatchObject({ rows: 21, distinctIds: 21 });
  });
});

describe('batch writer during a store outage', () => {
  let store: Store;
  beforeAll(async () => {
    store = await openStore({ url: http.url, dataDir: processDataDir(), database: 'writer_outage', connectTimeoutMs: 5_000 });
    await migrate(store);
    await store.client.command({ query: TABLE_DDL });
  });
  afterAll(async () => {
    await store.close();
  });

  it('retries a failed flush until the store is back, with no row lost or doubled', async () => {
    const registry = new Registry();
    const writer = new BatchWriter(store, { maxRows: 500, flushIntervalMs: 20, backoffBaseMs: 20, backoffMaxMs: 100, registry });
    await writer.insert(probe, rows(0, 500));
    await http.stop();
    const during = writer.insert(probe, rows(500, 1000));
    // Wait (by state, bounded by the test timeout) until several attempts failed while the endpoint is down.
    const failed = async () =>
      Number(/kind="transient"} (\d+)/.exec(await registry.getSingleMetricAsString('tallyhouse_writer_flush_failures_total'))?.[1] ?? 0);
    while ((await failed()) < 2) await new Promise((r) => setTimeout(r, 20));
    expect(await failed()).toBeGreaterThanOrEqual(2);
    await http.start();
    await expect(during).resolves.toEqual({ written: 1000, rejected: 0 });
    // 5xx answers are retried the same way.
    http.failNext(2, 503);
    await writer.insert(probe, rows(1500, 10));
    await writer.close();
    expect(await counts(store)).toMatchObject({ rows: 1510, distinctIds: 1510 });
  });

  it('with maxTransientAttempts (a one-shot command) a batch the store keeps refusing fails after that many attempts', async () => {
    // A full disk made `tallyhouse collect` retry for ever (an outside attack: 18 attempts in 90 s, then killed).
    const registry = new Registry();
    const writer = new BatchWriter(store, { maxRows: 500, flushIntervalMs: 20, backoffBaseMs: 5, backoffMaxMs: 10, maxTransientAttempts: 3, registry });
    await http.stop();
    try {
      await expect(writer.insert(probe, rows(9000, 5))).rejects.toThrow();
      expect(Number(/kind="transient"} (\d+)/.exec(await registry.getSingleMetricAsString('tallyhouse_writer_flush_failures_total'))?.[1])).toBe(3);
    } finally {
      await http.start();
    }
    await writer.close();
  });

  it('a batch that landed before its answer was lost is not doubled: the retry carries the same token', async () => {
    const writer = new BatchWriter(store, { maxRows: 500, flushIntervalMs: 20, backoffBaseMs: 20, backoffMaxMs: 100, registry: new Registry() });
    const before = (await counts(store)).rows;
    const sentBefore = http.requests().length;
    // The insert runs in the store, then its answer is lost (503): the writer cannot tell, and retries.
    http.loseNextInsertAnswers(1);
    await expect(writer.insert(probe, rows(5000, 10))).resolves.toEqual({ written: 10, rejected: 0 });
    await writer.close();
    const inserts = http.requests().slice(sentBefore).filter((r) => /^\s*INSERT INTO writer_probe/i.test(r.query));
    expect(inserts).toHaveLength(2);
    const tokens = inserts.map((r) => r.settings.insert_deduplication_token);
    expect(tokens[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(tokens[1]).toBe(tokens[0]);
    // One copy: the store deduplicated the retry by its token (an oracle of ClickHouse's own).
    expect(await counts(store)).toMatchObject({ rows: before + 10, distinctIds: before + 10 });
  });
});

describe('store error classification', () => {
  it("names the codes it classifies as the engine does", async () => {
    const store = await openStore({ dataDir: processDataDir(), database: 'writer_codes' });
    const names = await queryRows<{ code: number; name: string }>(
      { store },
      'SELECT arrayJoin({codes:Array(Int32)}) AS code, errorCodeToName(code) AS name',
      { codes: [...CLASSIFIED_CODES.data, ...CLASSIFIED_CODES.permanent] },
    );
    const byCode = Object.fromEntries(names.map((n) => [n.code, n.name]));
    expect(CLASSIFIED_CODES.permanent.map((c) => byCode[c])).toEqual(['UNKNOWN_TABLE', 'SYNTAX_ERROR', 'UNKNOWN_DATABASE', 'READONLY', 'ACCESS_DENIED']);
    // Every data code is about the data itself: parsing, types, values, columns.
    for (const code of CLASSIFIED_CODES.data) {
      expect(byCode[code], String(code)).toMatch(/^(CANNOT_|TYPE_MISMATCH|THERE_IS_NO_COLUMN|NO_SUCH_COLUMN_IN_TABLE|ATTEMPT_TO_READ_AFTER_EOF|ILLEGAL_|ARGUMENT_OUT_OF_BOUND|INCORRECT_DATA|TOO_LARGE_STRING_SIZE|SIZES_OF_ARRAYS_DONT_MATCH|VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE|DECIMAL_OVERFLOW|UNKNOWN_ELEMENT_OF_ENUM)/);
    }
    await store.close();
  });
});
