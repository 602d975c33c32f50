// Regression tests for issue 13's spool scenarios, against the spool interface: a process is SIGKILLed at a
// chosen point (TALLYHOUSE_TEST_KILL_AT), then the spool is reopened and must hold exactly what was not
// confirmed, with sizes that add up.
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openSpool, type SpoolBackend } from '../../../src/ingest/drain/spool/open-spool.js';

const CHILD = fileURLToPath(new URL('./fixtures/spool-child.ts', import.meta.url));
const BACKEND = (process.env.TALLYHOUSE_TEST_SPOOL ?? 'sqlite') as SpoolBackend;

function runChild(dir: string, records: number, killAt?: string) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', CHILD, BACKEND, dir, String(records)], {
    env: { ...process.env, TALLYHOUSE_TEST_KILL_AT: killAt ?? '' },
    encoding: 'utf8',
  });
  const committed = [...r.stdout.matchAll(/^committed (.+)$/gm)].flatMap((m) => m[1].split(','));
  return { signal: r.signal, committed, stderr: r.stderr };
}

describe(`spool (${BACKEND}) after a SIGKILL`, () => {
  it('scenario 3: killed between dropping replayed data and saving the position, it counts and replays the rest exactly', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spool-crash-'));
    const first = runChild(dir, 6, 'cleanup:2');
    expect(first.signal, first.stderr).toBe('SIGKILL');
    const spool = await openSpool({ dir, maxBytes: 1 << 30 }, BACKEND);
    try {
      const ids: string[] = [];
      const counted = { bytes: spool.bytes, rows: spool.pendingRows };
      for (let b = await spool.nextBatch({ maxRows: Infinity, maxBytes: Infinity }); b; b = await spool.nextBatch({ maxRows: Infinity, maxBytes: Infinity })) {
        ids.push(...b.records.map((r) => r.id.slice(0, 8)));
        await spool.commit(b);
      }
      // Everything not confirmed before the kill comes back once, in order; the sizes end at zero, not below.
      const all = Array.from({ length: 6 }, (_, i) => `rec-${i}`.padEnd(8, '0'));
      expect([...first.committed, ...ids].filter((id, i, a) => a.indexOf(id) === i)).toEqual(all);
      expect(ids).toEqual(all.slice(all.length - ids.length));
      expect(counted.rows).toBe(ids.length); // one row per record
      expect(counted.bytes).toBeGreaterThan(0);
      expect([spool.bytes, spool.pendingRows]).toEqual([0, 0]);
    } finally {
      await spool.close();
    }
  });
});
