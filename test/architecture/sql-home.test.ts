import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { sourceFiles } from '../support/import-graph.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** A string that is a SQL statement (not prose that happens to start with "select"). */
const SQL_STATEMENT = /^\s*(SELECT\s[\s\S]*\sFROM\s|INSERT\s+INTO\s|ALTER\s+TABLE\s|CREATE\s+(TABLE|DATABASE|VIEW|MATERIALIZED\s+VIEW|USER)\s|DROP\s+(TABLE|DATABASE|VIEW)\s|OPTIMIZE\s+TABLE\s|TRUNCATE\s+TABLE\s|SYSTEM\s+[A-Z]+|DESCRIBE\s+TABLE\s|SHOW\s+(TABLES|CREATE)\b|USE\s+\w+\s*$|SET\s+\w+\s*=)/i;
/** A call that sends something to ClickHouse through the client itself. */
const CLIENT_CALL = /\.client\s*\.\s*(query|command|exec|insert)\s*\(/;

/** SQL statements in string and template literals, with their line numbers. */
function sqlStrings(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateHead(node)) {
      if (SQL_STATEMENT.test(node.text)) {
        const { line } = source.getLineAndCharacterOfPosition(node.getStart());
        found.push(`${file}:${line + 1}: ${node.text.trim().split('\n')[0].slice(0, 60)}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('all SQL lives in src/store/ (ARCHITECTURE.md, "Layers"; CONTRIBUTING.md rule 14)', () => {
  // The simulator has no ClickHouse; the drain's spool is SQLite, its own local storage behind one interface;
  // dashboards hold panel SQL that Grafana runs, not Tallyhouse.
  const files = sourceFiles(root, ['src', 'jobs']).filter(
    (f) => !f.startsWith('src/store/') && !f.startsWith('src/sim/') && !f.startsWith('src/ingest/drain/spool/'),
  );

  it('the detector finds SQL and calls, and passes prose', () => {
    expect(SQL_STATEMENT.test('SELECT app FROM usage_buckets FINAL')).toBe(true);
    expect(SQL_STATEMENT.test('  ALTER TABLE logs MODIFY TTL x')).toBe(true);
    expect(SQL_STATEMENT.test('select a timezone in the list')).toBe(false);
    expect(CLIENT_CALL.test('await rt.store.client.query({')).toBe(true);
    expect(files.length).toBeGreaterThan(50);
  });

  it('no module outside src/store/ holds a SQL statement', () => {
    expect(files.flatMap(sqlStrings)).toEqual([]);
  });

  it('no module outside src/store/ calls the client itself', () => {
    const calls = files.filter((f) => CLIENT_CALL.test(readFileSync(join(root, f), 'utf8')));
    expect(calls).toEqual([]);
  });
});
