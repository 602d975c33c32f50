// Issue 44.5: `tallyhouse spool salvage FILE` stores the log lines still legible in a damaged spool file the drain
// set aside, exactly once. The drain service takes 40 bodies (3 lines each), its replayer stopped; the b-tree
// header of two leaves of `records` is overwritten (SQLite can no longer read those pages, the rows on them are
// intact), so the restarted service salvages and replays the other bodies and counts those on the two leaves lost.
// Oracle: SQLite's dbstat on the undamaged file says which leaf holds which body. The command must store exactly
// the lost bodies' lines (one of each body's lines holds an escaped tab, backslash and line break), and, run again,
// store nothing: every line once in the raw table, not only under FINAL.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startClickHouseHttp, type ClickHouseHttp } from '../support/clickhouse-http.js';
import { openTestRuntime, processDataDir, queryRows, tempDataDir } from '../support/store.js';
import { closeRuntime } from '../../src/service.js';
import { runCli } from '../support/process.js';
import { postSigned, startDrainService } from '../ingest/drain/helpers.js';
import { SPOOL_SQLITE_DRIVER } from '../support/sqlite-error.js';

let ch: ClickHouseHttp;
beforeAll(async () => {
  ch = await startClickHouseHttp({ dataDir: processDataDir() });
});
afterAll(async () => {
  await ch?.close();
});

const BODIES = 40;
const LINES = 3;
/** The message of a body's line as sent (and stored: the store unescapes what the row escapes). */
const message = (b: number, l: number) => (l === 1 ? `salv-${b}-${l}\twith a tab, a \\ and\na line break` : `salv-${b}-${l}`);

// dbstat through better-sqlite3, as the spool's salvage tests (better-sqlite3 aborts Node 24 processes).
const suite = describe.skipIf(SPOOL_SQLITE_DRIVER !== 'better-sqlite3');

suite('tallyhouse spool salvage FILE', () => {
  it('stores the lines of the records the drain lost, legible as text in the copy it set aside, once; run again, nothing', async () => {
    const dataDir = tempDataDir();
    const env = { CLICKHOUSE_URL: ch.url, DATA_DIR: dataDir };
    let d = await startDrainService(env);
    try {
      await d.replayer.stop();
      for (let b = 0; b < BODIES; b++) {
        const lines = Array.from({ length: LINES }, (_, l) =>
          JSON.stringify({ timestamp: `2026-11-21T10:${String(b).padStart(2, '0')}:0${l}.000Z`, level: 'INFO', message: message(b, l), svc_app_name: 'salvage', svc_request_id: `r-${b}` }),
        );
        const res = await postSigned(d.drainUrl, lines.join('\n'));
        expect(res.status, JSON.stringify(res.body)).toBe(200);
      }
    } finally {
      await d.close();
    }
    const spoolDir = join(dataDir, 'spool', 'logs');
    const file = join(spoolDir, 'spool.sqlite');
    const db = new Database(file, { readonly: true });
    const pageSize = Number(db.pragma('page_size', { simple: true }));
    const leaves = (db.prepare("SELECT path, pageno, ncell FROM dbstat WHERE name = 'records' AND pagetype = 'leaf'").all() as Array<{ path: string; pageno: number; ncell: number }>).sort((a, b) => (a.path < b.path ? -1 : 1));
    db.close();
    expect(leaves.reduce((n, l) => n + l.ncell, 0)).toBe(BODIES);
    expect(leaves.length).toBeGreaterThan(3);
    const leafOfBody = leaves.flatMap((l) => Array.from({ length: l.ncell }, () => l.pageno));
    const damaged = new Set([leaves[0].pageno, leaves[2].pageno]);
    const lostBodies = Array.from({ length: BODIES }, (_, b) => b).filter((b) => damaged.has(leafOfBody[b]));
    expect(lostBodies.length).toBeGreaterThan(0);
    // The leaves' b-tree headers (page type, cell count, pointers) overwritten; their cells' bytes stay.
    const bytes = readFileSync(file);
    for (const page of damaged) bytes.fill(0xa5, (page - 1) * pageSize, (page - 1) * pageSize + 12);
    writeFileSync(file, bytes);

    d = await startDrainService(env);
    try {
      await d.replayer.whenReplayed();
    } finally {
      await d.close();
    }
    const rt = await openTestRuntime({ CLICKHOUSE_URL: ch.url, DATA_DIR: tempDataDir() });
    try {
      // Raw rows, not FINAL: a line stored twice shows as n = 2.
      const stored = () => queryRows<{ message: string; n: string }>(rt, "SELECT message, count() AS n FROM logs WHERE app = 'salvage' GROUP BY message ORDER BY message");
      const lines = (bodies: number[]) => bodies.flatMap((b) => Array.from({ length: LINES }, (_, l) => message(b, l))).sort();
      const everyBody = Array.from({ length: BODIES }, (_, b) => b);
      // The service replayed the bodies it could read, once each, and lost the others.
      expect(await stored()).toEqual(lines(everyBody.filter((b) => !lostBodies.includes(b))).map((m) => ({ message: m, n: '1' })));
      const asideName = readdirSync(spoolDir).filter((f) => /^spool\.sqlite\.corrupt-[0-9TZ]+$/.test(f));
      expect(asideName).toHaveLength(1);
      const aside = join(spoolDir, asideName[0]);

      const cliEnv = { CLICKHOUSE_URL: ch.url, DATA_DIR: tempDataDir(), LOG_LEVEL: 'warn' };
      const first = runCli(['spool', 'salvage', aside], cliEnv);
      expect((await first.exited).code, first.stderr()).toBe(0);
      const lostLines = lostBodies.length * LINES;
      expect(first.stderr()).toMatch(new RegExp(`were in the store already, ${lostLines} stored now\n$`));
      expect(await stored()).toEqual(lines(everyBody).map((m) => ({ message: m, n: '1' })));
      // The stored lines are the drain's, whole: request id, level, the line number in their delivery.
      const back = await queryRows<{ message: string; request_id: string; level: string; line: number; origin: string }>(
        rt,
        "SELECT message, request_id, level, line, origin FROM logs FINAL WHERE app = 'salvage' AND request_id = {r:String} ORDER BY line",
        { r: `r-${lostBodies[0]}` },
      );
      expect(back).toEqual(Array.from({ length: LINES }, (_, l) => ({ message: message(lostBodies[0], l), request_id: `r-${lostBodies[0]}`, level: 'INFO', line: l + 1, origin: 'drain' })));

      const again = runCli(['spool', 'salvage', aside], cliEnv);
      expect((await again.exited).code, again.stderr()).toBe(0);
      expect(again.stderr()).toMatch(new RegExp(`of their ${BODIES * LINES} record\\(s\\) ${BODIES * LINES} were in the store already, 0 stored now\n$`));
      expect(await stored()).toEqual(lines(everyBody).map((m) => ({ message: m, n: '1' })));
    } finally {
      await closeRuntime(rt);
    }
  });
});
