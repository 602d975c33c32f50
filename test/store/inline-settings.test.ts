// Per-query settings are written into the statement (the embedded engine and the test HTTP endpoint take no
// settings beside it). A statement with a SETTINGS clause of its own gets them added to that clause: a second
// SETTINGS clause is a syntax error (seen as "Syntax error: failed at position 1450" from the requests job on a
// server store, whose client sends the session settings with every query).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inlineSettings } from '../../src/store/embedded.js';
import type { Runtime } from '../../src/runtime.js';
import { openTestRuntime, closeRuntime } from '../support/store.js';

let rt: Runtime;
beforeAll(async () => {
  rt = await openTestRuntime();
});
afterAll(async () => {
  await closeRuntime(rt);
});

describe('inlineSettings', () => {
  it('adds a clause, before FORMAT, or to the statement\'s own clause', () => {
    expect(inlineSettings('SELECT 1', { max_threads: 1 })).toBe('SELECT 1\nSETTINGS max_threads = 1');
    expect(inlineSettings('SELECT 1 FORMAT JSONEachRow', { max_threads: 1 })).toBe('SELECT 1\nSETTINGS max_threads = 1 FORMAT JSONEachRow');
    expect(inlineSettings('SELECT 1 SETTINGS join_use_nulls = 1', { max_threads: 1, readonly: '2' })).toBe(
      "SELECT 1 SETTINGS join_use_nulls = 1,\nmax_threads = 1, readonly = '2'",
    );
    expect(inlineSettings("SELECT 1 SETTINGS a = 'x', b = 2;", { c: 3 })).toBe("SELECT 1 SETTINGS a = 'x', b = 2,\nc = 3");
    // A SETTINGS inside a subquery is not the statement's own.
    expect(inlineSettings('SELECT * FROM (SELECT 1 SETTINGS max_threads = 2) AS t', { c: 3 })).toBe(
      'SELECT * FROM (SELECT 1 SETTINGS max_threads = 2) AS t\nSETTINGS c = 3',
    );
  });

  it('the embedded store runs a statement with its own SETTINGS and per-query settings', async () => {
    const rs = await rt.store.client.query({
      query: 'SELECT 1 AS x SETTINGS join_use_nulls = 1',
      clickhouse_settings: { max_threads: 1 },
      format: 'JSONEachRow',
    });
    expect(await rs.json()).toEqual([{ x: 1 }]);
  });
});
