// Issue 31: src/collectors/logs.ts compares the records it pages with those stored by their text as stored, so the
// TabSeparated escapes mapLine writes (\t \n \r \0 \\, ClickHouse's TabSeparated format) must be undone exactly in
// every part of the key (app, request id, worker, message). Oracle: the ClickHouse TabSeparated escaping rules and
// hand-written stored rows; a record already stored must not be stored again (the platform notes: a record is its
// timestamp, app, request id and message).
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fillFromHistory, LogRowBatch } from '../../src/collectors/logs.js';
import { collectorRejects } from '../../src/collectors/common.js';
import { fakeJob } from './fake-job.js';

const SPECIAL = 'tab\tnl\ncr\rnul\u0000bs\\q\'end';
// An app name with NUL would split the key (recordKey joins its parts with NUL): platform app names hold none.
const APP_SPECIAL = SPECIAL.replace('\u0000', '');

describe('LogRowBatch: every escape undone in every part of the key', () => {
  it('a record stored with tabs, newlines, CRs, NULs, backslashes and quotes in each part is not stored again', async () => {
    const stored = [{ ts: '2026-11-21 10:00:00.000', app: `app${APP_SPECIAL}`, request_id: `req${SPECIAL}`, worker: `w${SPECIAL}`, message: `m${SPECIAL}` }];
    const job = fakeJob({ pages: () => [], query: (sql) => (sql.includes('AS ts') ? stored : [{ n: 0 }]) });
    const batch = new LogRowBatch('history', 's', collectorRejects('logs'));
    expect(
      batch.add({ timestamp: '2026-11-21T10:00:00Z', level: 'INFO', message: `m${SPECIAL}`, svc_app_name: `app${APP_SPECIAL}`, svc_request_id: `req${SPECIAL}`, svc_worker_id: `w${SPECIAL}` }),
    ).toBe(true);
    expect(await batch.commit(job.ctx)).toBe(0);
    expect(job.execs).toEqual([]);
    // The stored apps asked about are the unescaped names.
    expect(job.queries[0].params).toMatchObject({ apps: [`app${APP_SPECIAL}`] });
  });

  it('one escape apart is another record: each is stored', async () => {
    for (const c of ['\t', '\n', '\r', '\u0000', '\\']) {
      const stored = [{ ts: '2026-11-21 10:00:00.000', app: 'img', request_id: '', worker: '', message: `a${c}b` }];
      const job = fakeJob({ pages: () => [], query: (sql) => (sql.includes('AS ts') ? stored : [{ n: 0 }]) });
      const batch = new LogRowBatch('history', 's', collectorRejects('logs'));
      batch.add({ timestamp: '2026-11-21T10:00:00Z', level: 'INFO', message: `a${c}b`, svc_app_name: 'img' });
      batch.add({ timestamp: '2026-11-21T10:00:00Z', level: 'INFO', message: 'a b', svc_app_name: 'img' });
      expect(await batch.commit(job.ctx), JSON.stringify(c)).toBe(1);
    }
  });
});

describe('fillFromHistory: results and rejects', () => {
  it('counts received, stored and rejected over every app and window, and hands the rejects to the writer', async () => {
    const apps = [{ endpoint_id: 'acme/img', owner: 'acme', name: 'img' }];
    const job = fakeJob({
      pages: () => [{ items: [{ timestamp: '2026-11-21T10:00:00Z', level: 'INFO', message: 'ok', app: 'img', revision: null, labels: {} }, { timestamp: 'never' }, 'text'] }],
      query: (sql) => (sql.includes('AS ts') ? [] : [{ n: 0 }]),
    });
    const result = await fillFromHistory(job.ctx, apps, [{ fromMs: Date.parse('2026-11-21T10:00:00Z'), toMs: Date.parse('2026-11-21T10:01:00Z') }]);
    expect(result).toEqual({ received: 1, stored: 1, rejected: 2 });
    expect(job.rejects.map((r) => r.raw)).toEqual(['{"timestamp":"never"}', '"text"']);
    expect(job.added.reduce((a, b) => a + b, 0)).toBe(1);
    // The warning about them says over how many windows and apps.
    expect(job.warnings.map((w) => w.fields)).toEqual([{ windows: 1, apps: 1, malformed: 2, refused: 0 }]);
  });

  it('the rows of a window carry the batch id of its app and bounds (by hand: sha256 of history, acme/img, 1000, 2000 on lines)', async () => {
    const job = fakeJob({
      pages: () => [{ items: [{ timestamp: '1970-01-01T00:00:01.500Z', level: 'INFO', message: 'm', app: 'img', revision: null, labels: {} }] }],
      query: (sql) => (sql.includes('AS ts') ? [] : [{ n: 0 }]),
    });
    await fillFromHistory(job.ctx, [{ endpoint_id: 'acme/img', owner: 'acme', name: 'img' }], [{ fromMs: 1000, toMs: 2000 }]);
    const row = job.execs[0].body.trimEnd().split('\t');
    expect(row[14]).toBe('0128e152-c345-4f4f-8226-18a428ef45de');
  });
});

describe('LogRowBatch and fillFromHistory: nothing more asked than needed', () => {
  it('a batch whose records are all stored asks nothing more of the store (no copies counted or deleted)', async () => {
    const stored = [{ ts: '2026-11-21 10:00:00.000', app: 'img', request_id: '', worker: '', message: 'old' }];
    const job = fakeJob({ pages: () => [], query: (sql) => (sql.includes('AS ts') ? stored : [{ n: 1 }]) });
    const batch = new LogRowBatch('history', 's', collectorRejects('logs'));
    batch.add({ timestamp: '2026-11-21T10:00:00Z', level: 'INFO', message: 'old', svc_app_name: 'img' });
    expect(await batch.commit(job.ctx)).toBe(0);
    expect(job.queries).toHaveLength(1);
    expect(job.commands).toEqual([]);
  });

  it('a history page that is not an object of items fails the fill with a schema error', async () => {
    const job = fakeJob({ pages: () => [{ records: [] }] });
    const failure = await fillFromHistory(job.ctx, [{ endpoint_id: 'acme/img', owner: 'acme', name: 'img' }], [{ fromMs: 0, toMs: 1000 }]).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(z.ZodError);
  });
});
