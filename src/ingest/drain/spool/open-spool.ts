// The one place that opens the spool's storage: everything else sees the Spool interface (spool.ts). It is
// SQLite (crash safety from a proven store, CONTRIBUTING.md rule 16); the home-made segment files it replaced
// lost acknowledged records after a torn write or a failed roll (test/ingest/drain/spool-crash.test.ts).
import { SqliteSpool } from './sqlite-spool.js';
import type { Spool, SpoolOptions } from './spool.js';

/** Opens (creating or recovering) the spool under `opts.dir`. */
export function openSpool(opts: SpoolOptions): Promise<Spool> {
  return SqliteSpool.open(opts);
}
