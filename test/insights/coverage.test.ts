// The one coverage implementation (src/insights/coverage.ts), with hand-worked ranges.
import { describe, expect, it } from 'vitest';
import { combineCoverage, coverageHeader, daySpans, sourceCoverage, uncovered } from '../../src/insights/coverage.js';

const ms = (iso: string) => Date.parse(iso);
const span = (from: string, to: string, at: string) => ({ fromMs: ms(from), toMs: ms(to), collectedAtMs: ms(at) });

describe('uncovered', () => {
  it('merges overlapping collections and returns the gaps in order', () => {
    const gaps = uncovered(ms('2026-11-01T00:00:00Z'), ms('2026-11-05T00:00:00Z'), [
      span('2026-11-02T00:00:00Z', '2026-11-03T00:00:00Z', '2026-11-10T00:00:00Z'),
      span('2026-11-02T12:00:00Z', '2026-11-03T12:00:00Z', '2026-11-10T00:00:00Z'),
      span('2026-11-04T00:00:00Z', '2026-11-09T00:00:00Z', '2026-11-10T00:00:00Z'),
    ]);
    expect(gaps.map(([a, b]) => [new Date(a).toISOString(), new Date(b).toISOString()])).toEqual([
      ['2026-11-01T00:00:00.000Z', '2026-11-02T00:00:00.000Z'],
      ['2026-11-03T12:00:00.000Z', '2026-11-04T00:00:00.000Z'],
    ]);
  });

  it('a collection covers only up to the moment it read', () => {
    // Asked for the whole day at 06:00: 06:00-24:00 was not there to read.
    const gaps = uncovered(ms('2026-11-01T00:00:00Z'), ms('2026-11-02T00:00:00Z'), [span('2026-11-01T00:00:00Z', '2026-11-02T00:00:00Z', '2026-11-01T06:00:00Z')]);
    expect(gaps).toEqual([[ms('2026-11-01T06:00:00Z'), ms('2026-11-02T00:00:00Z')]]);
  });
});

describe('sourceCoverage', () => {
  const base = { source: 'runner_history' as const, zone: 'UTC', fromMs: ms('2026-11-01T00:00:00Z'), toMs: ms('2026-12-01T00:00:00Z') };

  it('nothing collected: not_collected, one missing range, no collected_through', () => {
    const c = sourceCoverage({ ...base, nowMs: ms('2026-12-02T00:00:00Z'), spans: [] });
    expect(c).toEqual({ source: 'runner_history', zone: 'UTC', status: 'not_collected', collected_through: null, missing: [{ source: 'runner_history', zone: 'UTC', from: '2026-11-01', to: '2026-12-01' }] });
  });

  it('the last day collected: partial, the first 29 days missing', () => {
    const c = sourceCoverage({ ...base, nowMs: ms('2026-12-02T00:00:00Z'), spans: [span('2026-11-30T00:00:00Z', '2026-12-01T09:00:00Z', '2026-12-01T09:00:00Z')] });
    expect(c.status).toBe('partial');
    expect(c.missing.map((m) => [m.from, m.to])).toEqual([['2026-11-01', '2026-11-30']]);
    expect(c.collected_through).toBe('2026-12-01');
  });

  it('the future is not missing: a range ending after now is complete when collected up to now', () => {
    const c = sourceCoverage({ ...base, nowMs: ms('2026-11-20T10:00:00Z'), spans: [span('2026-11-01T00:00:00Z', '2026-11-20T10:00:00Z', '2026-11-20T10:00:00Z')] });
    expect(c.status).toBe('complete');
  });

  it('local dates in the zone of the range, instants with their offset elsewhere', () => {
    const c = sourceCoverage({
      source: 'usage', zone: 'Asia/Kolkata', fromMs: ms('2026-10-31T18:30:00Z'), toMs: ms('2026-11-02T18:30:00Z'), nowMs: ms('2026-11-03T00:00:00Z'),
      spans: daySpans([{ day: '2026-11-01', collectedAtMs: ms('2026-11-01T00:30:00Z') }], 'Asia/Kolkata'),
    });
    // Nov 1 (IST) read at 06:00 IST: the rest of that day and all of Nov 2 are missing.
    expect(c.missing.map((m) => [m.from, m.to])).toEqual([['2026-11-01T06:00:00+05:30', '2026-11-03']]);
  });
});

describe('combineCoverage', () => {
  it('complete only when every source is; the warning names each incomplete source and its consequence', () => {
    const nowMs = ms('2026-12-02T00:00:00Z');
    const usage = sourceCoverage({ source: 'usage', zone: 'UTC', fromMs: ms('2026-11-01T00:00:00Z'), toMs: ms('2026-11-03T00:00:00Z'), nowMs, spans: daySpans([{ day: '2026-11-01', collectedAtMs: nowMs }, { day: '2026-11-02', collectedAtMs: nowMs }], 'UTC') });
    const history = sourceCoverage({ source: 'runner_history', zone: 'UTC', fromMs: ms('2026-11-01T00:00:00Z'), toMs: ms('2026-11-03T00:00:00Z'), nowMs, spans: [] });
    expect(combineCoverage([usage])).toEqual({ status: 'complete' });
    const both = combineCoverage([usage, history], { runner_history: 'its cost is unattributed, not idle' });
    expect(both.status).toBe('partial');
    if (both.status === 'complete') throw new Error('unreachable');
    expect(both.warning).toBe('runner history (UTC) was not collected for this range: its cost is unattributed, not idle.');
    expect(both.missing).toEqual([{ source: 'runner_history', zone: 'UTC', from: '2026-11-01', to: '2026-11-03' }]);
    expect(coverageHeader(both)).toBe(`partial; ${both.warning}`);
    expect(coverageHeader({ status: 'complete' })).toBe('complete');
  });
});
