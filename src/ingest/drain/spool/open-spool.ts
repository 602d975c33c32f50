// The one place that picks the spool's storage: everything else sees the Spool interface (spool.ts).
import { SegmentSpool } from './segment-spool.js';
import type { Spool, SpoolOptions } from './spool.js';

/** Opens (creating or recovering) the spool under `opts.dir`. */
export function openSpool(opts: SpoolOptions): Promise<Spool> {
  return SegmentSpool.open(opts);
}
