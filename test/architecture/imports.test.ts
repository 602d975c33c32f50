import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importCycles, importGraph, sourceFiles } from '../support/import-graph.js';

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
});
