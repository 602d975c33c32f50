// The one place that picks the spool's storage: everything else sees the Spool interface (spool.ts).
// SQLite is the default (crash safety from a proven store, CONTRIBUTING.md rule 16); the segment files remain
// only so `bench drain --spool segments` can compare against them.
import { SegmentSpool } from './segment-spool.js';
import { SqliteSpool } from './sqlite-spool.js';
import type { Spool, SpoolOptions } from './spool.js';

export type SpoolBackend = 'sqlite' | 'segments';

/** Opens (creating or recovering) the spool under `opts.dir`. */
export function openSpool(opts: SpoolOptions, backend: SpoolBackend = 'sqlite'): Promise<Spool> {
  return backend === 'segments' ? SegmentSpool.open(opts) : SqliteSpool.open(opts);
}
