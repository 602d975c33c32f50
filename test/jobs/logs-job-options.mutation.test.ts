// Issue 31: jobs/logs.ts beyond its windows (logs-job.mutation.test.ts): the job's definition and options as the
// README documents them (the `logs` job every 5 minutes; --gap-seconds 60, --settle-minutes 5, --page-limit up to
// the platform's largest history page, 1000), what a run logs, the spool it waits for (5 s by default, on a fake
// clock), a window cut at a run's end that is not a whole second, and a store that refuses the copies' delete.
// Every expected window is hand-derived.
import { Gauge } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { logsJob, spoolDrained } from '../../jobs/logs.js';
import { fakeJob } from '../collectors/fake-job.js';
import { captureLog } from '../support/log-capture.js';
import { timeRange } from '../../src/collectors/time-args.js';

const DRAIN = { LOG_DRAIN_SECRET: 's'.repeat(64), SVC_API_KEY: 'k' };
const NO_DRAIN = { SVC_API_KEY: 'k' };
const sec = (iso: string) => Date.parse(iso) / 1000;
afterEach(() => {
  vi.useRealTimers();
});

function every10s(from: string, to: string): number[] {
  const out: number[] = [];
  for (let s = sec(from); s < sec(to); s += 10) out.push(s);
  return out;
}

async function run(opts: {
  config: Record<string, unknown>;
  now?: Date;
  checkpoint?: string;
  seconds?: number[];
  stored?: number;
  options?: Record<string, unknown>;
  items?: unknown[];
  refuseDelete?: boolean;
}) {
  const checkpoints = new Map<string, string>();
  if (opts.checkpoint) checkpoints.set('logs filled_until', opts.checkpoint);
  const job = fakeJob({
    now: opts.now ?? new Date('2026-11-21T12:00:00Z'),
    config: opts.config,
    checkpoints,
    json: () => ({ apps: [{ endpoint_id: 'acme/img', owner: 'acme', name: 'img' }] }),
    pages: () => [{ items: opts.items ?? [] }],
    query: (sql) => (sql.includes('toUnixTimestamp') ? (opts.seconds ?? []).map((s) => ({ s })) : sql.includes('count()') ? [{ n: opts.stored ?? 0 }] : []),
  });
  if (opts.refuseDelete) {
    const client = job.ctx.runtime.store.client as unknown as { command: (q: { query: string }) => Promise<unknown> };
    client.command = async () => {
      throw Object.assign(new Error('Not enough privileges'), { name: 'ClickHouseError', code: '497', type: 'ACCESS_DENIED' });
    };
  }
  const log = captureLog('debug');
  Object.assign(job.ctx, { log: log.logger });
  await logsJob.run(job.ctx, logsJob.options!.parse(opts.options ?? {}));
  const windows = job.calls.filter((c) => c.path === '/v1/serverless/logs/history').map((c) => `${String(c.query.start)}..${String(c.query.end)}`);
  return { job, windows, checkpoint: checkpoints.get('logs filled_until'), log };
}

describe('logs job: its definition and options', () => {
  it('runs every 5 minutes, per app (sharded), over --from/--to times', () => {
    expect([logsJob.name, logsJob.defaultCron, logsJob.sharded, logsJob.range, logsJob.scope]).toEqual(['logs', '*/5 * * * *', true, 'times', 'api']);
    expect(logsJob.label).toContain('logs');
    expect(logsJob.description).toContain('history');
  });

  it('defaults: --gap-seconds 60, --settle-minutes 5, --page-limit 1000', () => {
    expect(logsJob.options!.parse({})).toEqual({ 'gap-seconds': 60, 'settle-minutes': 5, 'page-limit': 1000 });
    expect(logsJob.options!.parse({ 'gap-seconds': '1', 'settle-minutes': '0', 'page-limit': '1' })).toEqual({ 'gap-seconds': 1, 'settle-minutes': 0, 'page-limit': 1 });
    expect(logsJob.options!.parse({ 'settle-minutes': '0.5', 'page-limit': '1000' })).toMatchObject({ 'settle-minutes': 0.5, 'page-limit': 1000 });
  });

  it('refuses a gap under 1 s or not whole, a negative settle, a page limit outside 1-1000 or not whole', () => {
    for (const bad of [{ 'gap-seconds': '0' }, { 'gap-seconds': '1.5' }, { 'settle-minutes': '-1' }, { 'page-limit': '0' }, { 'page-limit': '1001' }, { 'page-limit': '2.5' }]) {
      expect(logsJob.options!.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
  });

  it('each option says what it is and its default (the help line)', () => {
    const shape = logsJob.options!.shape as Record<string, { description?: string }>;
    expect(shape['gap-seconds'].description).toContain('(default 60)');
    expect(shape['settle-minutes'].description).toContain('(default 5)');
    expect(shape['page-limit'].description).toBe('records per history page, 1-1000 (default 1000)');
  });

  it('the defaults run: a silence of 60 s is filled; the newest 5 minutes are left', async () => {
    const seconds = [...every10s('2026-11-21T11:00:00Z', '2026-11-21T11:10:01Z'), ...every10s('2026-11-21T11:11:01Z', '2026-11-21T11:55:00Z')];
    const { windows, checkpoint, job } = await run({ config: DRAIN, checkpoint: '2026-11-21T11:00:00.000Z', seconds });
    expect(windows).toEqual(['2026-11-21T11:10:00.000Z..2026-11-21T11:11:02.000Z']);
    expect(checkpoint).toBe('2026-11-21T11:55:00.000Z');
    expect(job.calls.filter((c) => c.path === '/v1/serverless/logs/history').map((c) => c.query.limit)).toEqual([1000]);
  });
});

describe('logs job: a window at the end of the span', () => {
  it('a line in the last, partial second of the span ends its window at the span\'s end', async () => {
    // now 12:00:00.500, settle 5 min: the span ends 11:55:00.500. Lines to 11:53:50, then one at 11:55:00.x:
    // the silence 11:54:00 .. 11:55:00 is 60 s; its window runs to the line's second, cut at 11:55:00.500.
    const seconds = [...every10s('2026-11-21T11:50:00Z', '2026-11-21T11:54:00Z'), sec('2026-11-21T11:55:00Z')];
    const { windows, checkpoint } = await run({ config: DRAIN, now: new Date('2026-11-21T12:00:00.500Z'), checkpoint: '2026-11-21T11:50:00.000Z', seconds });
    expect(windows).toEqual(['2026-11-21T11:53:50.000Z..2026-11-21T11:55:00.500Z']);
    expect(checkpoint).toBe('2026-11-21T11:55:00.500Z');
  });
});

describe('logs job: what a run says', () => {
  it('with a drain: the spells and what history stored, at info when it stored lines', async () => {
    const items = [{ timestamp: '2026-11-21T11:20:00Z', level: 'INFO', message: 'lost line', app: 'img', revision: null, labels: {} }];
    const { log } = await run({ config: DRAIN, checkpoint: '2026-11-21T11:00:00.000Z', seconds: [], items });
    const line = log.lines.find((l) => String(l.msg).startsWith('logs: the drain delivered nothing'));
    expect(line).toMatchObject({
      level: 30,
      msg: 'logs: the drain delivered nothing in 1 spell(s); history filled 1 line(s)',
      windows: ['2026-11-21T11:00:00.000Z..2026-11-21T11:55:00.000Z'],
      received: 1,
      stored: 1,
      rejected: 0,
    });
    // The store took the copies' delete (nothing to drop here): no warning.
    expect(log.lines.filter((l) => l.level === 40)).toEqual([]);
  });

  it('without a drain: what history stored, at debug when nothing', async () => {
    const { log } = await run({ config: NO_DRAIN, checkpoint: '2026-11-21T11:00:00.000Z' });
    expect(log.lines.find((l) => String(l.msg).startsWith('logs: no drain'))).toMatchObject({ level: 20, msg: 'logs: no drain configured; history stored 0 line(s)', stored: 0 });
  });

  it('a store that refuses the delete of copies: a warning naming the span, and the checkpoint still moves', async () => {
    const { log, checkpoint } = await run({ config: DRAIN, checkpoint: '2026-11-21T11:00:00.000Z', seconds: every10s('2026-11-21T11:00:00Z', '2026-11-21T11:55:00Z'), stored: 3, refuseDelete: true });
    const warning = log.lines.find((l) => l.level === 40);
    expect(warning).toMatchObject({
      from: '2026-11-21 11:00:00.000',
      to: '2026-11-21 11:55:00.000',
      msg: 'logs: the store refused to delete history copies of records the drain stored; they stay stored twice',
    });
    expect(warning?.error).toBe('ClickHouse ACCESS_DENIED (code 497): Not enough privileges');
    // No spell without a drain line: nothing filled, and no word of spells.
    expect(log.lines.filter((l) => String(l.msg).startsWith('logs: the drain delivered nothing'))).toEqual([]);
    expect(checkpoint).toBe('2026-11-21T11:55:00.000Z');
  });

  it('a drain spool still holding lines: no fill and no checkpoint move, and it says how many wait', async () => {
    vi.useFakeTimers();
    const checkpoints = new Map([['logs filled_until', '2026-11-21T11:00:00.000Z']]);
    const job = fakeJob({ now: new Date('2026-11-21T12:00:00Z'), config: DRAIN, checkpoints, json: () => ({ apps: [] }), pages: () => [] });
    new Gauge({ name: 'tallyhouse_drain_spool_lines', help: 'h', registers: [job.registry] }).set(7);
    const log = captureLog('debug');
    Object.assign(job.ctx, { log: log.logger });
    const running = logsJob.run(job.ctx, logsJob.options!.parse({}));
    await vi.advanceTimersByTimeAsync(6_000);
    await running;
    expect(job.calls.filter((c) => c.path === '/v1/serverless/logs/history')).toEqual([]);
    expect(checkpoints.get('logs filled_until')).toBe('2026-11-21T11:00:00.000Z');
    expect(log.lines.find((l) => l.spooled === 7)?.msg).toBe('logs: the store has not taken 7 drain line(s) yet (they wait in the spool); gaps are filled once it has');
  });
});

describe('spoolDrained: 5 s by default', () => {
  it('still held at 4.9 s it keeps waiting; at 5 s it gives up and answers what is held', async () => {
    vi.useFakeTimers();
    const job = fakeJob({ pages: () => [] });
    new Gauge({ name: 'tallyhouse_drain_spool_lines', help: 'h', registers: [job.registry] }).set(3);
    let held: number | undefined;
    const waiting = spoolDrained(job.ctx).then((n) => (held = n));
    await vi.advanceTimersByTimeAsync(4_900);
    expect(held).toBeUndefined();
    await vi.advanceTimersByTimeAsync(400);
    await waiting;
    expect(held).toBe(3);
  });

  it('asks the gauge again every 200 ms, not in a busy loop', async () => {
    vi.useFakeTimers();
    const job = fakeJob({ pages: () => [] });
    let reads = 0;
    new Gauge({
      name: 'tallyhouse_drain_spool_lines',
      help: 'h',
      registers: [job.registry],
      collect() {
        reads++;
        this.set(1);
      },
    });
    const waiting = spoolDrained(job.ctx, 1_000);
    await vi.advanceTimersByTimeAsync(1_100);
    expect(await waiting).toBe(1);
    // Reads at 0, 200, 400, 600, 800 and 1000 ms.
    expect(reads).toBe(6);
  });
});

describe('logs job: --from/--to resumes where it stopped', () => {
  it('names its progress after the range, and a saved position skips the days before it', async () => {
    const checkpoints = new Map([['logs backfill:2026-11-19:2026-11-22', '2026-11-20T00:00:00.000Z']]);
    const job = fakeJob({ now: new Date('2026-11-23T12:00:00Z'), config: NO_DRAIN, checkpoints, json: () => ({ apps: [{ endpoint_id: 'acme/img', owner: 'acme', name: 'img' }] }), pages: () => [{ items: [] }] });
    const started: unknown[][] = [];
    Object.assign(job.ctx, {
      range: timeRange('2026-11-19', '2026-11-22'),
      timezone: 'UTC',
      signal: new AbortController().signal,
      log: captureLog('debug').logger,
      progress: { start: (...args: unknown[]) => started.push(args), tick: () => undefined, stop: () => undefined },
    });
    await logsJob.run(job.ctx, logsJob.options!.parse({}));
    expect(started.map((a) => a[1])).toEqual(['logs 2026-11-19..2026-11-22 (a day at a time)']);
    expect(job.calls.filter((c) => c.path === '/v1/serverless/logs/history').map((c) => String(c.query.start))).toEqual(['2026-11-20T00:00:00.000Z', '2026-11-21T00:00:00.000Z']);
  });
});

describe('logs job: --from/--to without a zone', () => {
  it('takes the range in UTC', async () => {
    const job = fakeJob({ now: new Date('2026-11-23T12:00:00Z'), config: NO_DRAIN, json: () => ({ apps: [{ endpoint_id: 'acme/img', owner: 'acme', name: 'img' }] }), pages: () => [{ items: [] }] });
    Object.assign(job.ctx, {
      range: timeRange('2026-11-19', '2026-11-20'),
      signal: new AbortController().signal,
      log: captureLog('debug').logger,
      progress: { start: () => undefined, tick: () => undefined, stop: () => undefined },
    });
    await logsJob.run(job.ctx, logsJob.options!.parse({}));
    expect(job.calls.filter((c) => c.path === '/v1/serverless/logs/history').map((c) => `${String(c.query.start)}..${String(c.query.end)}`)).toEqual(['2026-11-19T00:00:00.000Z..2026-11-20T00:00:00.000Z']);
  });
});
