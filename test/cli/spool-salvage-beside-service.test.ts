// `tallyhouse spool salvage FILE` while the service holds the embedded store's DATA_DIR (issue 44.5): the command is
// handed to the service (as collect and report are), with the file by its absolute path (the service runs in its own
// folder), and stores the legible lines the store lacks; run again, it stores nothing. The damaged copy is a spool
// file built here with the drain's row format (mapLine) whose `records` leaves' b-tree headers are overwritten:
// SQLite reads none of its records, and every row is legible as text.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { SqliteSpool } from '../../src/ingest/drain/spool/sqlite-spool.js';
import type { StagedData } from '../../src/ingest/drain/spool/spool.js';
import { LOG_ROW_COLUMNS, mapLine } from '../../src/collectors/log-line.js';
import { runCli } from '../support/process.js';
import { SPOOL_SQLITE_DRIVER } from '../support/sqlite-error.js';

const BODIES = 12;
const staged = (text: string): StagedData => ({ count: text.split('\n').length - 1, bytes: Buffer.byteLength(text), crc: 0, file: undefined, memory: [Buffer.from(text)] });

/** A damaged spool copy holding BODIES bodies of two drain rows each; SQLite can read none of its records. */
async function damagedCopy(): Promise<string> {
  const dir = join(mkdtempSync(join(tmpdir(), 'th-salvage-svc-')), 'logs');
  const spool = await SqliteSpool.open({ dir, maxBytes: 64 << 20, commitThread: false });
  try {
    for (let b = 0; b < BODIES; b++) {
      const batchId = `00000000-0000-4000-8000-${String(b).padStart(12, '0')}`;
      const rows = [0, 1].map((l) => {
        const mapped = mapLine(JSON.stringify({ timestamp: `2026-11-21T09:${String(b).padStart(2, '0')}:0${l}.000Z`, level: 'INFO', message: `beside-${b}-${l} ${'p'.repeat(300)}`, svc_app_name: 'beside' }), l + 1, { receivedAt: '2026-11-21 09:30:00.000', batchId });
        if (!mapped.ok) throw new Error(mapped.reason);
        return `${mapped.row}\n`;
      });
      await spool.append({ id: String(b).padStart(64, 'e'), receivedAtMs: 1_795_000_000_000, rowFormat: { format: 'TabSeparated', columns: LOG_ROW_COLUMNS }, rows: staged(rows.join('')), rejects: staged('') });
    }
  } finally {
    await spool.close();
  }
  const file = join(dir, 'spool.sqlite');
  const db = new Database(file, { readonly: true });
  const pageSize = Number(db.pragma('page_size', { simple: true }));
  const leaves = db.prepare("SELECT pageno FROM dbstat WHERE name = 'records' AND pagetype = 'leaf'").all() as Array<{ pageno: number }>;
  db.close();
  expect(leaves.length).toBeGreaterThan(1);
  const bytes = readFileSync(file);
  for (const { pageno } of leaves) bytes.fill(0xa5, (pageno - 1) * pageSize, (pageno - 1) * pageSize + 12);
  const copy = `${file}.corrupt-20261121T093000Z`;
  writeFileSync(copy, bytes);
  return copy;
}

// dbstat through better-sqlite3, as the spool's salvage tests (better-sqlite3 aborts Node 24 processes).
const suite = describe.skipIf(SPOOL_SQLITE_DRIVER !== 'better-sqlite3');

suite('spool salvage beside the running service', () => {
  it('is run by the service that holds DATA_DIR, with the file by its absolute path; run again, it stores nothing', async () => {
    const copy = await damagedCopy();
    const dataDir = mkdtempSync(join(tmpdir(), 'th-salvage-svc-data-'));
    const env = { DATA_DIR: dataDir, JOBS_ENABLED: 'false', LOG_LEVEL: 'warn', CLICKHOUSE_URL: undefined };
    const serve = runCli(['serve'], { ...env, PORT: '0', LOG_LEVEL: 'info' });
    try {
      await serve.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)"/);
      // A path relative to where the command is typed: the service is told the absolute one (here both run in the
      // test's folder, so this shows the hand-off, not the path's resolution).
      const first = runCli(['spool', 'salvage', relative(process.cwd(), copy)], env);
      expect((await first.exited).code, first.stderr()).toBe(0);
      expect(first.stderr()).toMatch(new RegExp(`: ${BODIES * 2} log line\\(s\\) legible \\(0 in records SQLite could read, ${BODIES * 2} only as text\\); of their ${BODIES * 2} record\\(s\\) 0 were in the store already, ${BODIES * 2} stored now\\n$`));
      expect(serve.stdout()).toMatch(/"command":"spool"[^\n]*running a command for a CLI beside the service/);
      const again = runCli(['spool', 'salvage', copy], env);
      expect((await again.exited).code, again.stderr()).toBe(0);
      expect(again.stderr()).toMatch(new RegExp(`${BODIES * 2} were in the store already, 0 stored now\\n$`));
    } finally {
      serve.child.kill('SIGTERM');
    }
    expect((await serve.exited).code).toBe(0);
  }, 300_000);
});
