// Issue 31: jobs/logs.ts (which spans a scheduled run fills from logs history) on the recording job context of
// test/collectors/fake-job.ts, so that mutation testing can afford it; logs-gap-second.test.ts and
// logs-gap-seconds.test.ts check the same rules against the store. Every window is hand-derived from the README's
// rule: with a drain, spells of at least --gap-seconds (60) without a drain line, widened to the whole seconds of
// the lines around them, windows less than 10 minutes apart paged as one; without a drain, the whole span; the
// newest --settle-minutes (5) left to the drain; a first run looks back 24 hours; the checkpoint moves to the end.
import { Gauge } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { logsJob, spoolDrained } from '../../jobs/logs.js';
import { fakeJob } from '../collectors/fake-job.js';
import { timeRange } from '../../src/collectors/time-args.js';

const NOW = new Date('2026-11-21T12:00:00Z');
const DRAIN = { LOG_DRAIN_SECRET: 's'.repeat(64), SVC_API_KEY: 'k' };
const NO_DRAIN = { SVC_API_KEY: 'k' };
const sec = (iso: string) => Date.parse(iso) / 1000;

/** Drain seconds every 10 s from `from` (inclusive) to `to` (exclusive), as epoch seconds. */
function every10s(from: string, to: string): number[] {
  const out: number[] = [];
  for (let s = sec(from); s < sec(to); s += 10) out.push(s);
  return out;
}

async function run(opts: { config: Record<string, unknown>; checkpoint?: string; seconds?: number[]; options?: Record<string, unknown> }) {
  const checkpoints = new Map<string, string>();
  if (opts.checkpoint) checkpoints.set('logs filled_until', opts.checkpoint);
  const job = fakeJob({
    now: NOW,
    config: opts.config,
    checkpoints,
    json: () => ({ apps: [{ endpoint_id: 'acme/img', owner: 'acme', name: 'img' }] }),
    pages: () => [{ items: [] }],
    query: (sql) => (sql.includes('toUnixTimestamp') ? (opts.seconds ?? []).map((s) => ({ s })) : sql.includes('count()') ? [{ n: 0 }] : []),
  });
  await logsJob.run(job.ctx, { 'gap-seconds': 60, 'settle-minutes': 5, 'page-limit': 1000, ...opts.options });
  const windows = job.calls.filter((c) => c.path === '/v1/serverless/logs/history').map((c) => `${String(c.query.start)}..${String(c.query.end)}`);
  return { job, windows, checkpoint: checkpoints.get('logs filled_until') };
}

describe('logs job: the spans a scheduled run fills', () => {
  it('without a drain: the whole span from the checkpoint to now - 5 min, then the checkpoint moves there', async () => {
    const { windows, checkpoint, job } = await run({ config: NO_DRAIN, checkpoint: '2026-11-21T11:00:00.000Z' });
    expect(windows).toEqual(['2026-11-21T11:00:00.000Z..2026-11-21T11:55:00.000Z']);
    expect(checkpoint).toBe('2026-11-21T11:55:00.000Z');
    // No drain: no drain seconds read, no copies of drain lines to drop.
    expect(job.queries.filter((q) => q.sql.includes('toUnixTimestamp') || q.sql.includes('count()'))).toEqual([]);
  });

  it('a first run looks back 24 hours; --settle-minutes 0 reaches now', async () => {
    expect((await run({ config: NO_DRAIN })).windows).toEqual(['2026-11-20T11:55:00.000Z..2026-11-21T11:55:00.000Z']);
    const settled = await run({ config: NO_DRAIN, checkpoint: '2026-11-21T11:30:00.000Z', options: { 'settle-minutes': 0 } });
    expect(settled.windows).toEqual(['2026-11-21T11:30:00.000Z..2026-11-21T12:00:00.000Z']);
    expect(settled.checkpoint).toBe('2026-11-21T12:00:00.000Z');
    // A checkpoint that is not a time counts as none.
    expect((await run({ config: NO_DRAIN, checkpoint: 'garbage' })).windows).toEqual(['2026-11-20T11:55:00.000Z..2026-11-21T11:55:00.000Z']);
  });

  it('does nothing when the checkpoint is at or past now - 5 min', async () => {
    const at = await run({ config: NO_DRAIN, checkpoint: '2026-11-21T11:55:00.000Z' });
    expect(at.windows).toEqual([]);
    expect(at.checkpoint).toBe('2026-11-21T11:55:00.000Z');
    const past = await run({ config: NO_DRAIN, checkpoint: '2026-11-21T11:58:00.000Z' });
    expect(past.windows).toEqual([]);
    expect(past.checkpoint).toBe('2026-11-21T11:58:00.000Z');
  });

  it('with a drain: gaps widened to whole seconds, those under 10 min apart merged, the next one apart', async () => {
    // Lines each 10 s from 11:00:00, except: none in (11:10:00, 11:12:00), none in (11:16:00, 11:18:00), none in
    // (11:28:01, 11:30:00). Windows: [11:10:00, 11:12:01) and [11:16:00, 11:18:01) are 3 min 59 s apart: one window
    // [11:10:00, 11:18:01). [11:28:01, 11:30:01) starts exactly 10 min after it ends: a window of its own.
    const seconds = [
      ...every10s('2026-11-21T11:00:00Z', '2026-11-21T11:10:01Z'),
      ...every10s('2026-11-21T11:12:00Z', '2026-11-21T11:16:01Z'),
      ...every10s('2026-11-21T11:18:00Z', '2026-11-21T11:28:00Z'),
      sec('2026-11-21T11:28:01Z'),
      ...every10s('2026-11-21T11:30:00Z', '2026-11-21T11:55:00Z'),
    ];
    const { windows, checkpoint, job } = await run({ config: DRAIN, checkpoint: '2026-11-21T11:00:00.000Z', seconds });
    expect(windows).toEqual(['2026-11-21T11:10:00.000Z..2026-11-21T11:18:01.000Z', '2026-11-21T11:28:01.000Z..2026-11-21T11:30:01.000Z']);
    expect(checkpoint).toBe('2026-11-21T11:55:00.000Z');
    expect(job.queries.find((q) => q.sql.includes('toUnixTimestamp'))?.params).toEqual({ from: '2026-11-21 11:00:00.000', to: '2026-11-21 11:55:00.000' });
    // Copies of drain lines are looked for over the whole span of the run, for its apps.
    expect(job.queries.find((q) => q.sql.includes('count()'))?.params).toEqual({ from: '2026-11-21 11:00:00.000', to: '2026-11-21 11:55:00.000', apps: ['img'] });
  });

  it('with a drain: a silence at the start runs from the checkpoint, one at the end to now - 5 min', async () => {
    const seconds = every10s('2026-11-21T11:02:00Z', '2026-11-21T11:50:01Z');
    const { windows } = await run({ config: DRAIN, checkpoint: '2026-11-21T11:00:00.000Z', seconds });
    expect(windows).toEqual(['2026-11-21T11:00:00.000Z..2026-11-21T11:02:01.000Z', '2026-11-21T11:50:00.000Z..2026-11-21T11:55:00.000Z']);
  });

  it('with a drain and no line at all: the whole span is one gap', async () => {
    const { windows } = await run({ config: DRAIN, checkpoint: '2026-11-21T11:00:00.000Z', seconds: [] });
    expect(windows).toEqual(['2026-11-21T11:00:00.000Z..2026-11-21T11:55:00.000Z']);
  });

  it('with a drain and lines every 10 s: nothing to fill, the checkpoint still moves', async () => {
    const { windows, checkpoint } = await run({ config: DRAIN, checkpoint: '2026-11-21T11:00:00.000Z', seconds: every10s('2026-11-21T11:00:00Z', '2026-11-21T11:55:00Z') });
    expect(windows).toEqual([]);
    expect(checkpoint).toBe('2026-11-21T11:55:00.000Z');
  });

  it('demo mode (no platform keys) counts as a drain; LOG_DRAIN_TOKEN too', async () => {
    const seconds = every10s('2026-11-21T11:00:00Z', '2026-11-21T11:55:00Z');
    expect((await run({ config: {}, checkpoint: '2026-11-21T11:00:00.000Z', seconds })).windows).toEqual([]);
    expect((await run({ config: { SVC_API_KEY: 'k', LOG_DRAIN_TOKEN: 't'.repeat(32) }, checkpoint: '2026-11-21T11:00:00.000Z', seconds })).windows).toEqual([]);
  });
});

describe('logs job: what the first mutation run left', () => {
  it('a silence of exactly --gap-seconds is filled, one a second shorter is not', async () => {
    // Lines at 11:10:00.x and 11:11:01.x leave the whole seconds 11:10:01 .. 11:11:00 (60 s) without a line;
    // lines at 11:30:00.x and 11:31:00.x leave 59 s.
    const seconds = [
      ...every10s('2026-11-21T11:00:00Z', '2026-11-21T11:10:01Z'),
      ...every10s('2026-11-21T11:11:01Z', '2026-11-21T11:29:52Z'),
      sec('2026-11-21T11:30:00Z'),
      ...every10s('2026-11-21T11:31:00Z', '2026-11-21T11:55:00Z'),
    ];
    const { windows } = await run({ config: DRAIN, checkpoint: '2026-11-21T11:00:00.000Z', seconds });
    expect(windows).toEqual(['2026-11-21T11:10:00.000Z..2026-11-21T11:11:02.000Z']);
  });

  it('pages history with the --page-limit asked for', async () => {
    const { job } = await run({ config: NO_DRAIN, checkpoint: '2026-11-21T11:00:00.000Z', options: { 'page-limit': 250 } });
    expect(job.calls.filter((c) => c.path === '/v1/serverless/logs/history').map((c) => c.query.limit)).toEqual([250]);
  });
});

describe('logs job: --from/--to', () => {
  it('pages history of every app a day at a time over the range, in the zone asked, and marks the backfill done', async () => {
    const checkpoints = new Map<string, string>();
    const job = fakeJob({
      now: NOW,
      config: DRAIN,
      checkpoints,
      json: () => ({ apps: [{ endpoint_id: 'acme/img', owner: 'acme', name: 'img' }] }),
      pages: () => [{ items: [{ timestamp: '2026-11-19T10:00:00Z', level: 'INFO', message: 'm', app: 'img', revision: null, labels: {} }] }],
      query: (sql) => (sql.includes('count()') ? [{ n: 0 }] : []),
    });
    const ticks: string[] = [];
    Object.assign(job.ctx, {
      range: timeRange('2026-11-19', '2026-11-21T06:00:00Z'),
      timezone: 'Asia/Kolkata',
      signal: new AbortController().signal,
      progress: { start: () => undefined, tick: (_n: number, detail: string) => ticks.push(detail), stop: () => undefined },
    });
    await logsJob.run(job.ctx, { 'gap-seconds': 60, 'settle-minutes': 5, 'page-limit': 500 });
    // 2026-11-19 in Kolkata begins at 11-18 18:30 UTC; days of 24 h from there, the last cut at 11-21 06:00 UTC.
    expect(job.calls.filter((c) => c.path === '/v1/serverless/logs/history').map((c) => `${String(c.query.start)}..${String(c.query.end)} ${String(c.query.limit)}`)).toEqual([
      '2026-11-18T18:30:00.000Z..2026-11-19T18:30:00.000Z 500',
      '2026-11-19T18:30:00.000Z..2026-11-20T18:30:00.000Z 500',
      '2026-11-20T18:30:00.000Z..2026-11-21T06:00:00.000Z 500',
    ]);
    expect(ticks).toEqual(['1 of 1 lines new', '1 of 1 lines new', '1 of 1 lines new']);
    expect([...checkpoints.keys()]).toEqual(['logs backfill:2026-11-19:2026-11-21T06:00:00Z']);
    // A backfill does not move the scheduled runs' checkpoint.
    expect(checkpoints.has('logs filled_until')).toBe(false);
  });

  it('a range of whole days is that many calls per app, none past --to', async () => {
    const job = fakeJob({ now: NOW, config: DRAIN, json: () => ({ apps: [{ endpoint_id: 'acme/img', owner: 'acme', name: 'img' }] }), pages: () => [{ items: [] }] });
    Object.assign(job.ctx, {
      range: timeRange('2026-11-19', '2026-11-21'),
      timezone: 'UTC',
      signal: new AbortController().signal,
      progress: { start: () => undefined, tick: () => undefined, stop: () => undefined },
    });
    await logsJob.run(job.ctx, { 'gap-seconds': 60, 'settle-minutes': 5, 'page-limit': 1000 });
    expect(job.calls.filter((c) => c.path === '/v1/serverless/logs/history').map((c) => `${String(c.query.start)}..${String(c.query.end)}`)).toEqual([
      '2026-11-19T00:00:00.000Z..2026-11-20T00:00:00.000Z',
      '2026-11-20T00:00:00.000Z..2026-11-21T00:00:00.000Z',
    ]);
  });
});

describe('spoolDrained', () => {
  it('reads the drain spool gauge: its lines summed, 0 without a drain', async () => {
    const none = fakeJob({ pages: () => [] });
    expect(await spoolDrained(none.ctx, 0)).toBe(0);
    const held = fakeJob({ pages: () => [] });
    const gauge = new Gauge({ name: 'tallyhouse_drain_spool_lines', help: 'h', labelNames: ['spool'], registers: [held.registry] });
    gauge.set({ spool: 'a' }, 2);
    gauge.set({ spool: 'b' }, 3);
    expect(await spoolDrained(held.ctx, 0)).toBe(5);
  });

  it('waits for the spool to empty within the settle time', async () => {
    const job = fakeJob({ pages: () => [] });
    const gauge = new Gauge({ name: 'tallyhouse_drain_spool_lines', help: 'h', registers: [job.registry] });
    gauge.set(4);
    const waiting = spoolDrained(job.ctx, 60_000);
    setTimeout(() => gauge.set(0), 50);
    expect(await waiting).toBe(0);
  });
});
