import { mkdtempSync } from 'node:fs';
import { Readable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClickHouseError, ClickHouseLogLevel, createClient, type ClickHouseClient, type ClickHouseClientConfigOptions } from '@clickhouse/client';
import { SESSION_SETTINGS } from '../../src/store/embedded.js';
import { startClickHouseHttp, type ClickHouseHttp } from '../support/clickhouse-http.js';

const USER = 'tally';
const PASSWORD = 's3cret';

let ch: ClickHouseHttp;

/** A client of the endpoint; the client's own error log stays quiet (the failures here are on purpose). */
function connect(config: ClickHouseClientConfigOptions = {}): ClickHouseClient {
  return createClient({ url: ch.url, username: USER, password: PASSWORD, log: { level: ClickHouseLogLevel.OFF }, ...config });
}
let client: ClickHouseClient;

/** Resolves to the rejection of `p` (fails the test if it resolves). */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(() => expect.unreachable('expected a rejection'), (err: unknown) => err);
}

async function count(table: string): Promise<number> {
  const rs = await client.query({ query: `SELECT count() AS n FROM ${table}`, format: 'JSONEachRow' });
  const [row] = await rs.json<{ n: string }>();
  return Number(row.n);
}

beforeAll(async () => {
  ch = await startClickHouseHttp({ dataDir: mkdtempSync(join(tmpdir(), 'tallyhouse-chhttp-')), username: USER, password: PASSWORD });
  const bootstrap = connect();
  await bootstrap.command({ query: 'CREATE DATABASE IF NOT EXISTS tally' });
  await bootstrap.close();
  // wait_end_of_query is a server-only setting: the endpoint must accept and ignore it.
  client = connect({ database: 'tally', clickhouse_settings: { wait_end_of_query: 1 } });
});

afterAll(async () => {
  await client?.close();
  await ch?.close();
});

describe('ClickHouse HTTP endpoint on chDB', () => {
  it('answers ping', async () => {
    const ping = await client.ping();
    expect(ping.success).toBe(true);
  });

  it('runs DDL in the database the client names', async () => {
    await client.command({
      query: `CREATE TABLE IF NOT EXISTS events (k String, at DateTime64(3, 'UTC'), tags Array(String), n UInt64)
              ENGINE = MergeTree ORDER BY (k, at)`,
    });
    const rs = await client.query({
      query: "SELECT currentDatabase() AS db, groupArray(name) AS tables FROM system.tables WHERE database = currentDatabase()",
      format: 'JSONEachRow',
    });
    expect(await rs.json()).toEqual([{ db: 'tally', tables: ['events'] }]);
    const create = ch.requests().find((r) => r.query.includes('CREATE TABLE IF NOT EXISTS events'));
    expect(create).toMatchObject({ method: 'POST', database: 'tally', settings: { wait_end_of_query: '1' } });
  });

  it('inserts JSONEachRow and binds String, DateTime64 and Array(String) parameters', async () => {
    const tricky = "it's a \\ back\tslash\nline — ünï";
    const result = await client.insert({
      table: 'events',
      format: 'JSONEachRow',
      values: [
        { k: tricky, at: '2024-05-01 12:00:00.250', tags: ["o'brien", 'a\\b', 'plain'], n: '18446744073709551615' },
        { k: 'other', at: '2024-05-01 12:00:01.000', tags: [], n: 7 },
        { k: 'other', at: '2024-05-02 00:00:00.000', tags: ['x'], n: 8 },
      ],
    });
    expect(result.summary?.written_rows).toBe('3');

    const rs = await client.query({
      query: `SELECT k, at, tags, n FROM events
              WHERE k = {x:String} AND at = {d:DateTime64(3)} AND tags = {a:Array(String)}`,
      query_params: { x: tricky, d: new Date(Date.UTC(2024, 4, 1, 12, 0, 0, 250)), a: ["o'brien", 'a\\b', 'plain'] },
      format: 'JSONEachRow',
    });
    expect(rs.response_headers['x-clickhouse-format']).toBe('JSONEachRow');
    expect(await rs.json()).toEqual([
      { k: tricky, at: '2024-05-01 12:00:00.250', tags: ["o'brien", 'a\\b', 'plain'], n: '18446744073709551615' },
    ]);

    const other = await client.query({
      query: 'SELECT sum(n) AS total, {label:String} AS label FROM events WHERE k = {k:String} AND has({tags:Array(String)}, \'x\')',
      query_params: { k: 'other', label: 'tab\there', tags: ['x', 'y'] },
      format: 'JSON',
    });
    const json = await other.json<{ total: string; label: string }>();
    expect(json.data).toEqual([{ total: '15', label: 'tab\there' }]);
    expect(json.meta?.map((m) => m.type)).toEqual(['UInt64', 'String']);

    // Large parameters travel in a multipart body instead of the URL.
    const multipart = connect({ database: 'tally', use_multipart_params: true });
    try {
      const rs = await multipart.query({
        query: 'SELECT count() AS n FROM events WHERE k = {x:String} AND hasAny(tags, {a:Array(String)})',
        query_params: { x: tricky, a: ["o'brien", 'nope'] },
        format: 'JSONEachRow',
      });
      expect(await rs.json()).toEqual([{ n: '1' }]);
    } finally {
      await multipart.close();
    }
  });

  it('returns the bytes of the format asked for (TabSeparated, CSV, JSONCompactEachRow)', async () => {
    const tsv = await client.query({ query: "SELECT k, n FROM events WHERE k = 'other' ORDER BY n", format: 'TabSeparated' });
    expect(await tsv.text()).toBe('other\t7\nother\t8\n');
    const csv = await client.query({ query: "SELECT k, n FROM events WHERE k = 'other' ORDER BY n", format: 'CSV' });
    expect(await csv.text()).toBe('"other",7\n"other",8\n');
    const compact = await client.query({ query: "SELECT k, n FROM events WHERE k = 'other' ORDER BY n", format: 'JSONCompactEachRow' });
    expect(await compact.json()).toEqual([['other', '7'], ['other', '8']]);
  });

  it('surfaces a syntax error as ClickHouseError 62 with status 400', async () => {
    const err = await rejection(client.query({ query: 'SELEC 1', format: 'JSONEachRow' }));
    expect(err).toBeInstanceOf(ClickHouseError);
    expect(err).toMatchObject({ code: '62', type: 'SYNTAX_ERROR' });

    const res = await fetch(`${ch.url}/?query=${encodeURIComponent('SELECT * FROM tally.nope')}`, {
      headers: { 'X-ClickHouse-User': USER, 'X-ClickHouse-Key': PASSWORD },
    });
    expect(res.status).toBe(404);
    expect(res.headers.get('x-clickhouse-exception-code')).toBe('60');
    expect(await res.text()).toMatch(/^Code: 60\. DB::Exception: .*\(UNKNOWN_TABLE\) \(version .+\)\n$/s);

    const multi = await rejection(client.command({ query: 'SELECT 1; SELECT 2' }));
    expect(multi).toMatchObject({ code: '62', type: 'SYNTAX_ERROR' });
  });

  it('applies insert_deduplication_token to its own insert only', async () => {
    await client.command({
      query: `CREATE TABLE dedup (k String, v UInt32) ENGINE = MergeTree ORDER BY k
              SETTINGS non_replicated_deduplication_window = 100`,
    });
    // Sent as src/store/writer.ts sends a batch: exec with the statement in the URL and the rows in the body.
    const send = async () => {
      const result = await client.exec({
        query: 'INSERT INTO dedup FORMAT JSONEachRow',
        values: Readable.from([Buffer.from('{"k":"a","v":1}\n{"k":"b","v":2}\n')]),
        clickhouse_settings: { insert_deduplication_token: 'batch-1', async_insert: 0 },
      });
      result.stream.resume();
      return result.summary;
    };
    expect((await send())?.written_rows).toBe('2');
    await send();
    expect(await count('dedup')).toBe(2);
    // A leaked token would make this different batch a duplicate of batch-1.
    await client.insert({ table: 'dedup', format: 'JSONEachRow', values: [{ k: 'c', v: 3 }] });
    expect(await count('dedup')).toBe(3);

    const inserts = ch.requests().filter((r) => r.query.startsWith('INSERT INTO dedup'));
    expect(inserts.map((r) => r.settings.insert_deduplication_token)).toEqual(['batch-1', 'batch-1', undefined]);
  });

  it('has server defaults; per-request settings (SESSION_SETTINGS) change them for that request', async () => {
    await client.command({ query: "CREATE TABLE times (at DateTime64(3, 'UTC')) ENGINE = MergeTree ORDER BY at" });
    const iso = [{ at: '2024-05-01T12:00:00.250Z' }];
    const err = await rejection(client.insert({ table: 'times', format: 'JSONEachRow', values: iso }));
    expect(err).toBeInstanceOf(ClickHouseError);
    await client.insert({ table: 'times', format: 'JSONEachRow', values: iso, clickhouse_settings: SESSION_SETTINGS });
    const rs = await client.query({ query: 'SELECT at FROM times', format: 'JSONEachRow' });
    expect(await rs.json()).toEqual([{ at: '2024-05-01 12:00:00.250' }]);
  });

  it('reads gzip request bodies and gzips responses when asked', async () => {
    const gz = connect({ database: 'tally', compression: { request: true, response: true } });
    try {
      await gz.insert({ table: 'dedup', format: 'JSONEachRow', values: [{ k: 'gz', v: 42 }] });
      const rs = await gz.query({ query: "SELECT v FROM dedup WHERE k = 'gz'", format: 'JSONEachRow' });
      expect(rs.response_headers['content-encoding']).toBe('gzip');
      expect(await rs.json()).toEqual([{ v: 42 }]);
    } finally {
      await gz.close();
    }
  });

  it('stop() refuses connections; start() serves the same client again on the same URL', async () => {
    const url = ch.url;
    await ch.stop();
    try {
      const err = await rejection(client.insert({ table: 'dedup', format: 'JSONEachRow', values: [{ k: 'down', v: 1 }] }));
      expect(err).toMatchObject({ code: 'ECONNREFUSED' });
    } finally {
      await ch.start();
    }
    expect(ch.url).toBe(url);
    await client.insert({ table: 'dedup', format: 'JSONEachRow', values: [{ k: 'up', v: 1 }] });
    const rs = await client.query({ query: "SELECT k FROM dedup WHERE k IN ('down', 'up')", format: 'JSONEachRow' });
    expect(await rs.json()).toEqual([{ k: 'up' }]);
  });

  it('failNext(2) answers two 503s with a ClickHouse error, then recovers', async () => {
    ch.failNext(2);
    const res = await fetch(`${ch.url}/?query=SELECT+1`, { headers: { 'X-ClickHouse-User': USER, 'X-ClickHouse-Key': PASSWORD } });
    expect(res.status).toBe(503);
    expect(res.headers.get('x-clickhouse-exception-code')).toBe('439');
    expect(await res.text()).toMatch(/^Code: 439\. DB::Exception: .*\(CANNOT_SCHEDULE_TASK\)/);
    const second = await rejection(client.query({ query: 'SELECT 1 AS one', format: 'JSONEachRow' }));
    expect(second).toMatchObject({ code: '439', type: 'CANNOT_SCHEDULE_TASK' });
    const third = await client.query({ query: 'SELECT 1 AS one', format: 'JSONEachRow' });
    expect(await third.json()).toEqual([{ one: 1 }]);
  });

  it('rejects a wrong password with 516 AUTHENTICATION_FAILED', async () => {
    const intruder = connect({ password: 'wrong', database: 'tally' });
    try {
      const err = await rejection(intruder.query({ query: 'SELECT 1', format: 'JSONEachRow' }));
      expect(err).toBeInstanceOf(ClickHouseError);
      expect(err).toMatchObject({ code: '516', type: 'AUTHENTICATION_FAILED' });
    } finally {
      await intruder.close();
    }
    const res = await fetch(`${ch.url}/?query=SELECT+1`, { headers: { Authorization: `Basic ${Buffer.from(`${USER}:nope`).toString('base64')}` } });
    expect(res.status).toBe(403);
  });
});
