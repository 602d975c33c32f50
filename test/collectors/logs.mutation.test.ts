// Issue 31: src/collectors/logs.ts without a store (test/collectors/fake-job.ts answers the stored keys and the
// copy counts, and records the insert), so that mutation testing can afford it. Oracles: the platform notes (a
// record is identified by timestamp, app, request id and message; the worker is added here), the drain's line form
// (labels at top level), the TabSeparated rows mapLine writes, and batch ids computed by hand with Python's
// hashlib: sha256("history\nacme/img\n1000\n2000") -> 0128e152-c345-4f4f-8226-18a428ef45de.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { drainLineOf, fillFromHistory, HISTORY_PAGE_LIMIT, LogRowBatch, recordKey } from '../../src/collectors/logs.js';
import { collectorRejects } from '../../src/collectors/common.js';
import type { LogRecord } from '../../src/platform/index.js';
import { fakeJob } from './fake-job.js';

const line = (over: Record<string, unknown> = {}) => ({
  timestamp: '2026-11-21T10:00:00.123Z',
  message: 'hello',
  level: 'INFO',
  svc_app_name: 'img',
  svc_worker_id: 'w1',
  ...over,
});

describe('recordKey and drainLineOf', () => {
  it('joins the five parts with NUL, so no part can run into another', () => {
    expect(recordKey('t', 'a', 'r', 'w', 'm')).toBe('t\u0000a\u0000r\u0000w\u0000m');
    expect(recordKey('t', 'a\u0000r', '', 'w', 'm')).not.toBe(recordKey('t', 'a', 'r', 'w', 'm'));
  });

  it('puts the labels at top level and names the app from the record when no label does', () => {
    const item = { timestamp: 'T', message: 'M', level: 'L', app: 'img', revision: null, labels: { svc_worker_id: 'w', extra: 1 } } as LogRecord;
    expect(drainLineOf(item)).toEqual({ timestamp: 'T', message: 'M', level: 'L', svc_worker_id: 'w', extra: 1, svc_app_name: 'img' });
    expect(drainLineOf({ ...item, labels: { svc_app_name: 'from-label' } })).toEqual({ timestamp: 'T', message: 'M', level: 'L', svc_app_name: 'from-label' });
    expect(drainLineOf({ ...item, labels: ['x'] })).toEqual({ timestamp: 'T', message: 'M', level: 'L', svc_app_name: 'img' });
    expect(drainLineOf({ ...item, labels: 'x' })).toEqual({ timestamp: 'T', message: 'M', level: 'L', svc_app_name: 'img' });
    expect(drainLineOf({ ...item, labels: null, app: null })).toEqual({ timestamp: 'T', message: 'M', level: 'L' });
  });
});

describe('LogRowBatch', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('derives a stable UUID-shaped batch id from its origin and seed', () => {
    const rejects = collectorRejects('logs');
    expect(new LogRowBatch('history', 'acme/img\n1000\n2000', rejects).batchId).toBe('0128e152-c345-4f4f-8226-18a428ef45de');
    expect(new LogRowBatch('tail', 'acme/img\n1000\n2000', rejects).batchId).toBe('e87b748e-e210-4193-8476-e0d9e0dce3a4');
  });

  it('keeps a record once per batch: same time, app, request, worker and message', () => {
    const batch = new LogRowBatch('history', 's', collectorRejects('logs'));
    expect(batch.add(line())).toBe(true);
    expect(batch.add(line({ level: 'WARN' }))).toBe(false);
    expect(batch.add(line({ svc_worker_id: 'w2' }))).toBe(true);
    expect(batch.add(line({ svc_request_id: 'r1' }))).toBe(true);
    expect(batch.add(line({ svc_app_name: 'txt' }))).toBe(true);
    expect(batch.add(line({ message: 'hello again' }))).toBe(true);
    expect(batch.add(line({ timestamp: '2026-11-21T10:00:00.124Z' }))).toBe(true);
    expect(batch.size).toBe(6);
  });

  it('refuses a line mapLine refuses, with its reason and the raw record', () => {
    const rejects = collectorRejects('logs');
    const batch = new LogRowBatch('history', 's', rejects);
    const raw = { original: true };
    expect(batch.add(line({ message: null }), raw)).toBe(false);
    expect(batch.size).toBe(0);
    expect(rejects.rows).toEqual([{ source: 'collector:logs', reason: 'missing_message: the line has no message', raw: JSON.stringify(raw) }]);
  });

  it('commits nothing, asking nothing, when it holds no row', async () => {
    const job = fakeJob({ pages: () => [] });
    expect(await new LogRowBatch('history', 's', collectorRejects('logs')).commit(job.ctx)).toBe(0);
    expect(job.queries).toEqual([]);
  });

  it('stores only records not stored yet, comparing unescaped text, over the span of its rows', async () => {
    const stored = [
      // The same record as the tab-holding line below: stored text is unescaped.
      { ts: '2026-11-21 10:00:00.123', app: 'img', request_id: '', worker: 'w1', message: 'a\tb' },
      { ts: '2026-11-21 10:00:05.000', app: 'txt', request_id: 'r\\1', worker: '', message: 'x' },
    ];
    const job = fakeJob({ pages: () => [], query: (sql) => (sql.includes('AS ts') ? stored : [{ n: 0 }]) });
    const batch = new LogRowBatch('history', 's', collectorRejects('logs'));
    batch.add(line({ message: 'a\tb' }));
    batch.add(line({ timestamp: '2026-11-21T10:00:05Z', svc_app_name: 'txt', svc_worker_id: null, svc_request_id: 'r\\1', message: 'x' }));
    batch.add(line({ timestamp: '2026-11-21T09:59:59.5Z', message: 'new' }));
    batch.add(line({ timestamp: '2026-11-21T10:00:01Z', message: 'new\\n' }));
    expect(await batch.commit(job.ctx)).toBe(2);
    expect(job.queries[0].params).toEqual({ from: '2026-11-21 09:59:59.500', to: '2026-11-21 10:00:05.000', apps: ['img', 'txt'] });
    expect(job.execs).toHaveLength(1);
    expect(job.execs[0].sql).toContain('INSERT INTO logs (timestamp, level, app, app_id, request_id, job_id, endpoint, node, worker, source, isolate_source, message, attributes, received_at, batch_id, line, origin)');
    const rows = job.execs[0].body.trimEnd().split('\n').map((r) => r.split('\t'));
    expect(rows.map((r) => [r[0], r[2], r[11], r[15], r[16]])).toEqual([
      ['2026-11-21 09:59:59.500', 'img', 'new', '3', 'history'],
      ['2026-11-21 10:00:01.000', 'img', 'new\\\\n', '4', 'history'],
    ]);
  });

  it('stores nothing when every record is stored already', async () => {
    const job = fakeJob({ pages: () => [], query: (sql) => (sql.includes('AS ts') ? [{ ts: '2026-11-21 10:00:00.123', app: 'img', request_id: '', worker: 'w1', message: 'hello' }] : [{ n: 0 }]) });
    const batch = new LogRowBatch('history', 's', collectorRejects('logs'));
    batch.add(line());
    expect(await batch.commit(job.ctx)).toBe(0);
    expect(job.execs).toEqual([]);
  });

  it('gives the same insert token for the same rows and another for other rows', async () => {
    // wall-clock: a comment naming the batch's stamp
    // Rows carry the batch's received_at (Date.now() when it was made): one clock reading for every batch here.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2026-11-21T12:00:00Z'));
    const tokenOf = async (seed: string, messages: string[]) => {
      const job = fakeJob({ pages: () => [], query: (sql) => (sql.includes('AS ts') ? [] : [{ n: 0 }]) });
      const batch = new LogRowBatch('history', seed, collectorRejects('logs'));
      for (const m of messages) batch.add(line({ message: m }));
      await batch.commit(job.ctx);
      return (job.execs[0].settings as { insert_deduplication_token: string }).insert_deduplication_token;
    };
    const a = await tokenOf('s', ['one', 'two']);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(await tokenOf('s', ['one', 'two'])).toBe(a);
    expect(await tokenOf('s', ['one'])).not.toBe(a);
    expect(await tokenOf('t', ['one', 'two'])).not.toBe(a);
  });

  it('counts as stored only the rows that are not copies of drain lines it then deleted', async () => {
    // 3 fresh rows; the span holds 5 non-drain rows, 2 of them copies of drain lines: 2 deleted, 1 stored.
    const job = fakeJob({
      pages: () => [],
      query: (sql) => (sql.includes('AS ts') ? [] : sql.includes(' IN (') ? [{ n: '2' }] : [{ n: '5' }]),
    });
    const batch = new LogRowBatch('history', 's', collectorRejects('logs'));
    for (const m of ['a', 'b', 'c']) batch.add(line({ message: m }));
    expect(await batch.commit(job.ctx)).toBe(1);
    expect(job.commands.map((c) => c.sql.startsWith('DELETE FROM logs'))).toEqual([true]);
    expect(job.commands[0].params).toEqual({ from: '2026-11-21 10:00:00.123', to: '2026-11-21 10:00:00.123', apps: ['img'] });
  });

  it('never counts fewer than none stored', async () => {
    const job = fakeJob({ pages: () => [], query: (sql) => (sql.includes('AS ts') ? [] : [{ n: '7' }]) });
    const batch = new LogRowBatch('history', 's', collectorRejects('logs'));
    batch.add(line());
    expect(await batch.commit(job.ctx)).toBe(0);
  });
});

describe('fillFromHistory', () => {
  const apps = [
    { endpoint_id: 'acme/img', owner: 'acme', name: 'img' },
    { endpoint_id: 'acme/txt', owner: 'acme', name: 'txt' },
  ];
  const record = (app: string, message: string) => ({ timestamp: '2026-11-21T10:00:00Z', level: 'INFO', message, app, revision: null, labels: { svc_worker_id: 'w' } });

  it('pages history of each app over each window, counts each record once, and stores the new ones', async () => {
    const windows = [
      { fromMs: Date.parse('2026-11-21T10:00:00Z'), toMs: Date.parse('2026-11-21T10:05:00Z') },
      { fromMs: Date.parse('2026-11-21T11:00:00Z'), toMs: Date.parse('2026-11-21T11:00:01Z') },
    ];
    const job = fakeJob({
      pages: (_p, q) => {
        const app = String(q.app_id).split('/')[1];
        if (q.start !== '2026-11-21T10:00:00.000Z') return [{ items: [] }];
        // The second page repeats a record of the first (pages may overlap): counted once.
        return [{ items: [record(app, 'one'), record(app, 'two')] }, { items: [record(app, 'two'), { timestamp: 5 }] }];
      },
      query: (sql) => (sql.includes('AS ts') ? [] : [{ n: 0 }]),
    });
    const result = await fillFromHistory(job.ctx, apps, windows, 250);
    expect(result).toEqual({ received: 4, stored: 4, rejected: 2 });
    expect(job.calls.map((c) => [c.path, c.query.app_id, c.query.start, c.query.end, c.query.limit]).sort()).toEqual([
      ['/v1/serverless/logs/history', 'acme/img', '2026-11-21T10:00:00.000Z', '2026-11-21T10:05:00.000Z', 250],
      ['/v1/serverless/logs/history', 'acme/img', '2026-11-21T11:00:00.000Z', '2026-11-21T11:00:01.000Z', 250],
      ['/v1/serverless/logs/history', 'acme/txt', '2026-11-21T10:00:00.000Z', '2026-11-21T10:05:00.000Z', 250],
      ['/v1/serverless/logs/history', 'acme/txt', '2026-11-21T11:00:00.000Z', '2026-11-21T11:00:01.000Z', 250],
    ]);
    expect(job.execs).toHaveLength(2);
    expect(job.added.reduce((a, b) => a + b, 0)).toBe(4);
    expect(job.rejects.map((r) => [r.source, r.raw])).toEqual([
      ['collector:logs', '{"timestamp":5}'],
      ['collector:logs', '{"timestamp":5}'],
    ]);
    expect(job.warnings).toHaveLength(1);
  });

  it('asks for the largest page by default', async () => {
    const job = fakeJob({ pages: () => [{ items: [] }] });
    await fillFromHistory(job.ctx, apps.slice(0, 1), [{ fromMs: 0, toMs: 1000 }]);
    expect(HISTORY_PAGE_LIMIT).toBe(1000);
    expect(job.calls.map((c) => [c.query.limit, c.method, c.body])).toEqual([[1000, 'POST', []]]);
    expect(job.warnings).toEqual([]);
  });
});
