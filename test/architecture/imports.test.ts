import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { importCycles, importGraph, sourceFiles } from '../support/import-graph.js';
import { floorOf, FLOORS, importsRunningUp } from '../support/layers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('import graph (ARCHITECTURE.md, "Layers")', () => {
  const files = sourceFiles(root, ['src', 'jobs', 'dashboards']);
  const graph = importGraph(root, files);

  it('reads the real tree', () => {
    // A graph with no edges would pass the cycle check vacuously.
    expect(files.length).toBeGreaterThan(100);
    expect(graph.get('src/main.ts')).toContain('src/service.ts');
    expect(graph.get('src/service.ts')).toContain('src/runtime.ts');
  });

  it('has no import cycle in src/, jobs/ or dashboards/, type imports included', () => {
    expect(importCycles(graph)).toEqual([]);
  });

  it('finds a cycle closed only by a type import', () => {
    const g = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    expect(importCycles(g)).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  });

  it('only the composition root imports the list of jobs and the extensions', () => {
    const importers = (target: string) => files.filter((f) => graph.get(f)!.includes(target));
    expect(importers('jobs/index.ts')).toEqual(['src/main.ts']);
  });

  it('store/ imports nothing from collectors/, api/, ingest/ or jobs/; platform/ nothing from store/', () => {
    const bad: string[] = [];
    for (const [file, targets] of graph) {
      for (const t of targets) {
        if (file.startsWith('src/store/') && /^(src\/(collectors|api|ingest|jobs|http)\/|jobs\/)/.test(t)) bad.push(`${file} -> ${t}`);
        if (file.startsWith('src/platform/') && t.startsWith('src/store/')) bad.push(`${file} -> ${t}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('every file of src/, jobs/ and dashboards/ stands on a floor (or in the simulator)', () => {
    expect(files.filter((f) => floorOf(f) === undefined && !f.startsWith('src/sim/'))).toEqual([]);
  });

  it('no import runs back up a floor; only the root and the CLI import the simulator', () => {
    expect(importsRunningUp(graph)).toEqual([]);
  });

  it('src/insights/ is pure: it imports leaves only, and no I/O module', () => {
    const leaves = FLOORS.findIndex((f) => f.floor === 'leaves');
    const insights = files.filter((f) => f.startsWith('src/insights/'));
    expect(insights.length).toBeGreaterThanOrEqual(5);
    const bad = insights.flatMap((f) => graph.get(f)!.filter((t) => !t.startsWith('src/insights/') && floorOf(t) !== leaves).map((t) => `${f} -> ${t}`));
    expect(bad).toEqual([]);
    const io = /from ['"](node:(fs|net|http|https|child_process|worker_threads)|@clickhouse\/client|undici|fastify|better-sqlite3)['"]/;
    expect(insights.filter((f) => io.test(readFileSync(join(root, f), 'utf8')))).toEqual([]);
  });

  it('finds an import running up and one into the simulator (the check is not vacuous)', () => {
    const g = new Map([
      ['src/store/tables/x.ts', ['src/collectors/usage.ts', 'src/values.ts']],
      ['src/jobs/a.ts', ['src/sim/index.ts', 'src/collectors/usage.ts']],
      ['src/cli/b.ts', ['src/sim/index.ts', 'src/service.ts']],
    ]);
    expect(importsRunningUp(g)).toEqual([
      'src/jobs/a.ts -> src/sim/index.ts (the simulator)',
      'src/store/tables/x.ts -> src/collectors/usage.ts (store, platform -> collectors)',
    ]);
  });

  it('no module outside src/cli/ (and the entry) reads process.argv', () => {
    const readers = files.filter((f) => !f.startsWith('src/cli/') && f !== 'src/main.ts' && !f.startsWith('src/sim/') && /process\.argv/.test(readFileSync(join(root, f), 'utf8')));
    expect(readers).toEqual([]);
  });
});
