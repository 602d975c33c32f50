// The replayer's scan for rows old enough to have history copies (extension.ts timestampRange, appsOf) reads the
// rows' bytes rather than decoding each batch into strings: the same answers as reading them as text, checked on
// hand-written TabSeparated rows in LOG_ROW_COLUMNS order (timestamp, level, app, ...).
import { describe, expect, it } from 'vitest';
import { appsOf, hasRowsBefore, timestampRange } from '../../../src/ingest/drain/extension.js';

const row = (ts: string, app: string) => `${ts}\tINFO\t${app}\tapp-id\treq\tjob\tendpoint\tnode\n`;

describe('timestampRange', () => {
  it('the least and greatest timestamp over every record of the batch, not the first and last row', () => {
    const parts = [
      Buffer.from(row('2026-11-19 08:00:05.250', 'flux') + row('2026-11-19 07:59:59.999', 'flux')),
      Buffer.from(row('2026-11-21 00:00:00.000', 'sdxl') + row('2026-11-19 08:00:00.000', 'sdxl')),
    ];
    expect(timestampRange(parts)).toEqual({ min: '2026-11-19 07:59:59.999', max: '2026-11-21 00:00:00.000' });
  });

  it('a last row without its newline still counts; no rows: no range', () => {
    expect(timestampRange([Buffer.from('2026-01-02 03:04:05.006\tINFO\ta')])).toEqual({ min: '2026-01-02 03:04:05.006', max: '2026-01-02 03:04:05.006' });
    expect(timestampRange([])).toEqual({ min: undefined, max: undefined });
  });
});

describe('hasRowsBefore (a batch with rows older than a bound: only then is its range read)', () => {
  const bound = '2026-11-26 16:20:00.000';
  it('no row before the bound: rows after it, or at it exactly', () => {
    const parts = [
      Buffer.from(row('2026-11-26 16:20:00.001', 'flux') + row('2026-11-26 16:21:00.000', 'flux')),
      Buffer.from(row('2026-11-26 16:20:00.000', 'sdxl') + row('2027-01-01 00:00:00.000', 'sdxl')),
    ];
    expect(hasRowsBefore(parts, bound)).toBe(false);
    expect(hasRowsBefore([], bound)).toBe(false);
  });

  it('one older row anywhere: in a later record, by a millisecond, by a year, the last row without its newline', () => {
    const fresh = Buffer.from(row('2026-11-26 16:25:00.000', 'flux'));
    expect(hasRowsBefore([fresh, Buffer.from(row('2026-11-26 16:30:00.000', 'a') + row('2026-11-26 16:19:59.999', 'b'))], bound)).toBe(true);
    expect(hasRowsBefore([Buffer.from(row('2025-12-31 23:59:59.999', 'a')), fresh], bound)).toBe(true);
    expect(hasRowsBefore([fresh, Buffer.from('2026-11-26 16:19:00.000\tINFO\ta')], bound)).toBe(true);
  });

  it('agrees with timestampRange: a shorter timestamp that is a prefix of the bound sorts before it', () => {
    const parts = [Buffer.from(`${row('2026-11-26 16:25:00.000', 'flux')}2026-11-26 16:20\tINFO\tflux\n`)];
    expect(timestampRange(parts).min).toBe('2026-11-26 16:20');
    expect(hasRowsBefore(parts, bound)).toBe(true);
  });
});

describe('appsOf', () => {
  it('each app once, runs and repeats across records included, non-ASCII names decoded as UTF-8', () => {
    const parts = [
      Buffer.from(row('2026-11-19 08:00:00.000', 'flux') + row('2026-11-19 08:00:01.000', 'flux') + row('2026-11-19 08:00:02.000', 'ünïcode-ø')),
      Buffer.from(row('2026-11-19 08:00:03.000', 'flux') + row('2026-11-19 08:00:04.000', '')),
    ];
    expect([...appsOf(parts)].sort()).toEqual(['', 'flux', 'ünïcode-ø']);
  });

  it('app names as the store holds them, not as escaped in the rows: a backslash, tab or newline in a name', () => {
    // TabSeparated escapes written out by hand: team\web is "team\\web" in a row, a tab "\t", a newline "\n".
    const parts = [Buffer.from(row('2026-11-19 08:00:00.000', 'team\\\\web') + row('2026-11-19 08:00:01.000', 'a\\tb\\nc'))];
    expect([...appsOf(parts)].sort()).toEqual(['a\tb\nc', 'team\\web']);
  });
});

