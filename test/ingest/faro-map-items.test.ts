// mapItems, pure: each Faro item accepted or rejected on its own with its reason (depth, size, fields, time).
// Expected values are hand-worked literals.
import type { TransportBody } from '@grafana/faro-core';
import { describe, expect, it } from 'vitest';
import { MAX_FUTURE_MS, MAX_ITEM_BYTES, mapItems, parseFaroTimestamp } from '../../src/ingest/faro/map-items.js';

const RECEIVED = Date.parse('2026-11-21T12:00:00Z');
const map = (body: unknown, extra: { checkDepth?: boolean; retentionDays?: number } = {}) =>
  mapItems(body as TransportBody, { app: 'web', sessionHeader: undefined, receivedAtMs: RECEIVED, retentionDays: 90, ...extra });
const log = (message: string, timestamp?: string) => ({ message, level: 'info', context: {}, ...(timestamp === undefined ? {} : { timestamp }) });

describe('Faro timestamps', () => {
  it('strict ISO 8601 with a zone', () => {
    expect(parseFaroTimestamp('2026-11-21T10:00:00.123Z')).toBe(Date.parse('2026-11-21T10:00:00.123Z'));
    expect(parseFaroTimestamp('2026-11-21T11:30+01:30')).toBe(Date.parse('2026-11-21T10:00:00Z'));
    expect(parseFaroTimestamp('2026-11-21T10:00:00.123456789-0200')).toBe(Date.parse('2026-11-21T12:00:00.123Z'));
    for (const bad of ['1', '12', 'Tue 5', '2026-11-21', '2026-11-21T10:00:00', '2026-11-21 10:00:00Z', '2026-02-30T10:00:00Z', '2026-11-21T24:00:00Z', 'Sat, 21 Nov 2026 10:00:00 GMT']) {
      expect(parseFaroTimestamp(bad), bad).toBeUndefined();
    }
  });

  it('retention and the future bound, at their edges (90 days; 1 hour)', () => {
    const at = (ms: number) => new Date(ms).toISOString();
    const day = 86_400_000;
    const out = map({
      logs: [
        log('oldest kept', at(RECEIVED - 90 * day)),
        log('too old', at(RECEIVED - 90 * day - 1)),
        log('latest kept', at(RECEIVED + MAX_FUTURE_MS)),
        log('too new', at(RECEIVED + MAX_FUTURE_MS + 1)),
        log('no timestamp: the receiving time'),
      ],
    });
    expect(out.rows.map((r) => [r.message, r.timestamp])).toEqual([
      ['oldest kept', '2026-08-23 12:00:00.000'],
      ['latest kept', '2026-11-21 13:00:00.000'],
      ['no timestamp: the receiving time', '2026-11-21 12:00:00.000'],
    ]);
    expect(out.rejects.map((r) => [r.index, r.reason])).toEqual([
      [1, 'log: timestamp is older than the 90-day retention (FARO_RETENTION_DAYS): it would be dropped as soon as stored'],
      [3, "log: timestamp is more than 60 minutes ahead of the receiver's clock"],
    ]);
  });
});

describe('Faro items, one by one', () => {
  it('too deep, too large, a wrong field: each rejected alone with its reason; the others mapped', () => {
    const deep = JSON.parse(`{"message":"deep","level":"info","context":{"x":${'['.repeat(5000)}${']'.repeat(5000)}}}`) as unknown;
    const large = log('y'.repeat(MAX_ITEM_BYTES));
    const out = map({ logs: [log('one'), deep, large, { level: 'info' }, log('five')] });
    expect(out.rows.map((r) => r.message)).toEqual(['one', 'five']);
    expect(out.rejects.map((r) => [r.index, r.reason, r.raw.length])).toEqual([
      // The whole item, 48 + 10,000 + 2 characters (under the 64 KiB a reject keeps).
      [1, 'log: too_deep: nested 5002 levels deep; at most 1000 can be stored', 10_050],
      [2, `log: too_large: ${JSON.stringify(large).length} bytes, over the 1048576-byte item limit`, 64 * 1024],
      [3, 'log: message must be a string', '{"level":"info"}'.length],
    ]);
  });

  it('deep traces are rejected; deep meta is mapped as far as a field holds (16 Ki characters), never thrown', () => {
    const deepText = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
    const body = JSON.parse(`{"meta":{"session":{"id":"s1","attributes":{"a":${deepText}}},"app":{"release":${deepText}}},"logs":[{"message":"ok","level":"info"}],"traces":{"resourceSpans":${deepText}}}`) as unknown;
    const out = map(body);
    expect(out.rows).toHaveLength(1);
    expect(out.rows[0]).toMatchObject({ message: 'ok', session_id: 's1', release: '['.repeat(16 * 1024), attributes: { a: '['.repeat(16 * 1024) } });
    expect(out.rejects.map((r) => [r.index, r.reason])).toEqual([[1, 'traces: too_deep: nested 20001 levels deep; at most 1000 can be stored']]);
  });
});
