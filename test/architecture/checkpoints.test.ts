import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { sourceFiles } from '../support/import-graph.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const saving = (folder: string) =>
  sourceFiles(root, [folder]).filter((f) => /\bcheckpoints\.save\(/.test(readFileSync(join(root, f), 'utf8')));

describe('checkpoints (ARCHITECTURE.md, "Job")', () => {
  it('are saved only by jobs/* (and the runtime\'s resumable loop), never by a collector', () => {
    expect(saving('src/collectors')).toEqual([]);
    // Not vacuous: the jobs do save them.
    expect(saving('jobs')).toEqual(expect.arrayContaining(['jobs/usage.ts', 'jobs/requests.ts', 'jobs/events.ts']));
    expect(saving('src/jobs')).toEqual(['src/jobs/resumable.ts']);
  });
});
