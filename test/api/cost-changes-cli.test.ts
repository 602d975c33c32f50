// `tallyhouse report changes`: bad input exits 2 naming it before anything opens; months with nothing collected
// exit 1 saying what would fill them, and write no file. (The figures: test/api/cost-changes-quarter.test.ts, the
// same costChangesReport behind the route.)
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/process.js';

describe('tallyhouse report changes', () => {
  it('exits 2 on a bad month or group, 1 when neither month has cost', async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'th-changes-')), 'data');
    const bad = runCli(['report', 'changes', '--month', '2026-10', '--group-by', 'day'], { DATA_DIR: dataDir });
    expect((await bad.exited).code).toBe(2);
    expect(bad.stderr()).toMatch(/^tallyhouse report changes: --group-by: day not one of app, environment, machine_type, surge, endpoint, api_key, unit/);
    expect(existsSync(dataDir)).toBe(false);

    const out = join(dataDir, '..', 'changes.csv');
    const empty = runCli(['report', 'changes', '--month', '2025-04', '--out', out], { DATA_DIR: dataDir });
    expect((await empty.exited).code).toBe(1);
    expect(empty.stderr()).toMatch(/^tallyhouse report changes: no cost collected in 2025-03 or 2025-04 \(UTC\)/);
    expect(existsSync(out)).toBe(false);
  });
});
