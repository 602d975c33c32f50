// Issue 29.10: `logs tail` passed terminal control sequences through: a log line set the window title, erased the
// line and printed a forged ERROR. Pretty output shows C0 and C1 controls (tab and newline excepted) as \xNN; the
// NDJSON form escapes the C1 ones JSON.stringify leaves raw. Expected strings are written out by hand.
import { describe, expect, it } from 'vitest';
import { jsonLine, prettyLine } from '../../src/cli/logs-tail.js';
import type { LogRecord } from '../../src/platform/index.js';

const hostile: LogRecord = {
  timestamp: '2026-11-21T12:00:00.123Z',
  level: 'info',
  app: 'acme/api',
  revision: null,
  // OSC: window title; CR + CSI 2K: erase the line; then a forged line; a C1 CSI (U+009B); DEL; a tab kept.
  message: '\u001b]0;pwned\u0007\r\u001b[2K2026-11-21 12:00:00.124 ERROR   acme/api disk full\u009b31m\u007f\tend',
  labels: {},
};

describe('logs tail output of a record holding control characters', () => {
  it('pretty: every control but tab and newline is shown as \\xNN, before our own colour codes', () => {
    expect(prettyLine(hostile, false)).toBe(
      '2026-11-21 12:00:00.123 INFO    acme/api \\x1b]0;pwned\\x07\\x0d\\x1b[2K2026-11-21 12:00:00.124 ERROR   acme/api disk full\\x9b31m\\x7f\tend\n',
    );
    const coloured = prettyLine({ ...hostile, level: 'error' }, true);
    // Our red and our reset are the only ESC bytes left.
    expect(coloured.match(/\u001b/g)).toHaveLength(2);
    expect(coloured.startsWith('\u001b[31m2026-11-21 12:00:00.123 ERROR   acme/api \\x1b]0;pwned')).toBe(true);
    expect(coloured.endsWith('\tend\u001b[0m\n')).toBe(true);
  });

  it('NDJSON: no raw control character at all, and the record parses back unchanged', () => {
    const line = jsonLine(hostile);
    expect(line).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(JSON.parse(line)).toEqual(hostile);
  });
});
