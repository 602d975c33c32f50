// `tallyhouse report focus`: bad input exits 2 naming it, before anything opens; a month with nothing collected in
// UTC exits 1 naming the collect commands, and writes no file. (The file's content: test/collectors/models.test.ts.)
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/process.js';

describe('tallyhouse report focus', () => {
  it('exits 2 on a bad month, 1 on a month with nothing collected', async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'th-focus-')), 'data');
    const bad = runCli(['report', 'focus', '--month', '2026-13'], { DATA_DIR: dataDir });
    expect((await bad.exited).code).toBe(2);
    expect(bad.stderr()).toMatch(/^tallyhouse report focus: --month: expected YYYY-MM/);
    expect(existsSync(dataDir)).toBe(false);

    const out = join(dataDir, '..', 'focus.csv');
    const empty = runCli(['report', 'focus', '--month', '2025-04', '--out', out], { DATA_DIR: dataDir });
    expect((await empty.exited).code).toBe(1);
    expect(empty.stderr()).toMatch(/^tallyhouse report focus: no usage is collected in UTC for 2025-04 .*tallyhouse collect models --timezone UTC/);
    expect(existsSync(out)).toBe(false);
  });
});
