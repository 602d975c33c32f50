// Tests own their clock (CONTRIBUTING.md rule 12; issue 42.1): no test reads the machine's clock for what it
// asserts, or the suite turns red as the calendar moves (budgets-route failed on every day from 2026-12-01). A read
// of the machine's clock in test/ is allowed only with its reason beside it: `// wall-clock: <why>` on the line or
// the line above (a deadline, a signed timestamp a receiver checks against its own clock, a row that must sit
// inside a TTL), or `// wall-clock-file: <why>` in a file's first lines for a harness that only times things.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

// Built from pieces so that this file's own source does not match it.
const READS = new RegExp(['Date\\.now\\(\\)', 'new Date\\(\\)', 'DateTime\\.(now|utc|local)\\(\\)'].join('|'));
const LINE_MARK = /\/\/ wall-clock: \S/;
const FILE_MARK = /^\/\/ wall-clock-file: \S/;

/** The unexplained reads of the machine's clock in one file's text, as "line: text". */
export function unexplainedClockReads(text: string): string[] {
  const lines = text.split('\n');
  if (lines.slice(0, 5).some((l) => FILE_MARK.test(l))) return [];
  const found: string[] = [];
  lines.forEach((line, i) => {
    if (!READS.test(line)) return;
    if (LINE_MARK.test(line) || (i > 0 && LINE_MARK.test(lines[i - 1]))) return;
    found.push(`${i + 1}: ${line.trim()}`);
  });
  return found;
}

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : testFiles(path);
    return /\.(ts|mts|js|mjs)$/.test(e.name) ? [path] : [];
  });
}

describe('tests own their clock', () => {
  it('no file under test/ reads the machine\u2019s clock without its reason beside it', () => {
    const files = testFiles(join(root, 'test'));
    expect(files.length).toBeGreaterThan(100);
    const found = files.flatMap((f) => unexplainedClockReads(readFileSync(f, 'utf8')).map((hit) => `${relative(root, f)}:${hit}`));
    expect(found).toEqual([]);
  });

  it('the check finds each kind of read, and takes a reason on the line, the line above or the file', () => {
    const now = 'Date' + '.now()';
    const bare = 'new ' + 'Date()';
    const luxon = 'DateTime' + '.utc()';
    const local = 'DateTime' + '.local()';
    expect(unexplainedClockReads([`const a = ${now};`, `const b = ${bare};`, `const c = ${luxon}.startOf('day');`, `const d = ${local};`, "const e = new Date('2026-11-01');"].join('\n'))).toEqual([
      `1: const a = ${now};`,
      `2: const b = ${bare};`,
      `3: const c = ${luxon}.startOf('day');`,
      `4: const d = ${local};`,
    ]);
    expect(unexplainedClockReads(`const deadline = ${now} + 5_000; // wall-clock: a deadline`)).toEqual([]);
    expect(unexplainedClockReads(`// wall-clock: a deadline\nconst deadline = ${now} + 5_000;\nconst again = ${now};`)).toEqual([`3: const again = ${now};`]);
    // A mark without a reason is no mark.
    expect(unexplainedClockReads(`const a = ${now}; // wall-clock:`)).toEqual([`1: const a = ${now}; // wall-clock:`]);
    expect(unexplainedClockReads(`// wall-clock-file: a harness that times a soak\n// more\nconst a = ${now};`)).toEqual([]);
  });
});
