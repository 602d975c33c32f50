// Issue 44.3: a `logs` record may be two rows until a merge (sql/023): every panel that counts log lines reads
// `logs FINAL`, or it counts a record stored twice as two lines (the Pipeline board's drain panels did).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const DIR = join(import.meta.dirname, '../../dashboards');

function rawSqls(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const n of node) rawSqls(n, out);
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === 'rawSql' && typeof v === 'string') out.push(v);
      else rawSqls(v, out);
    }
  }
  return out;
}

describe('dashboards count log records, not stored copies', () => {
  it('every query that aggregates over logs reads logs FINAL', () => {
    const offenders: string[] = [];
    let counted = 0;
    for (const file of readdirSync(DIR).filter((f) => f.endsWith('.json'))) {
      for (const sql of rawSqls(JSON.parse(readFileSync(join(DIR, file), 'utf8')))) {
        // Each SELECT over `logs` (a subquery too) that counts or sums: DISTINCT lists are unaffected by copies.
        for (const m of sql.matchAll(/SELECT((?:(?!SELECT)[\s\S])*?)FROM logs\b(\s+FINAL)?/g)) {
          if (!/count\(|sum\(|uniq/i.test(m[1])) continue;
          counted++;
          if (!m[2]) offenders.push(`${file}: ${sql.slice(0, 120)}`);
        }
      }
    }
    expect(counted).toBeGreaterThanOrEqual(2);
    expect(offenders).toEqual([]);
  });
});
