// The suite's own guard (issue 20): a test file that compares with the simulator's truth also asserts that the truth
// it compares with is not empty (two empty lists are equal, and a comparison of nothing proves nothing). Checked per
// file: every file reading `.truth.` holds at least one non-emptiness assertion (nonEmpty/nonZero from
// test/support/truth.ts, toBeGreaterThan, a positive length or toHaveLength).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NON_EMPTY = /nonEmpty\(|nonZero\(|toBeGreaterThan\(|\.length\)\.toBe\([1-9]|toHaveLength\([1-9]/;

function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? testFiles(path) : name.endsWith('.test.ts') ? [path] : [];
  });
}

describe('comparisons with the truth', () => {
  it('every test file that reads the simulator\'s truth asserts that what it compares with is not empty', () => {
    const readers = testFiles(join(ROOT, 'test')).filter((f) => /\.truth\.\w+\(/.test(readFileSync(f, 'utf8')));
    expect(readers.length).toBeGreaterThan(20);
    const unguarded = readers.filter((f) => !NON_EMPTY.test(readFileSync(f, 'utf8'))).map((f) => relative(ROOT, f));
    expect(unguarded).toEqual([]);
  });
});
