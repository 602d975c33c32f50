/**
 * Disk pressure as a state (issue 44.2). With DATA_DIR's disk full the drain answered 500 and /readyz 200, and
 * when 40 MiB were freed the drain acknowledged new batches into its spool and used the space up again before the
 * store could write a part, so acknowledged lines stayed unreadable. Now, below DISK_MIN_FREE_BYTES free, the drain
 * answers 503 with Retry-After and /readyz says why. The platform does not retry a failed drain batch (the
 * interface), so a 503 loses that batch: the state lasts only while it must. It holds until the free space is back
 * above the threshold by at least the spool's backlog, so the freed space goes to the replay first (the threshold
 * stays the reserve the store writes into), and no longer: a backlog hours long behind a slow store is no reason to
 * refuse lines while gigabytes are free.
 */
import { statfsSync } from 'node:fs';
import type { Registry } from 'prom-client';
import { Gauge } from 'prom-client';

export interface DiskPressureOptions {
  path: string;
  minFreeBytes: number;
  /** Bytes still waiting in the spool for the store: the state ends once the free space holds them above the threshold. */
  backlogBytes: () => number;
  registry?: Registry;
  /** Free bytes of `path` (statfs); tests give their own. */
  freeBytes?: (path: string) => number;
  /** How long a statfs answer is reused (a drain under load asks per request). */
  cacheMs?: number;
}

export function statfsFreeBytes(path: string): number {
  const s = statfsSync(path, { bigint: true });
  return Number(s.bavail * s.bsize);
}

const MiB = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;

export class DiskPressure {
  private latched = false;
  private readAtMs = -Infinity;
  private free = Infinity;
  private readonly read: (path: string) => number;
  private readonly cacheMs: number;

  constructor(private readonly opts: DiskPressureOptions) {
    this.read = opts.freeBytes ?? statfsFreeBytes;
    this.cacheMs = opts.cacheMs ?? 250;
    if (opts.registry) {
      const self = this;
      new Gauge({
        name: 'tallyhouse_disk_free_bytes',
        help: 'Free bytes on the disk of DATA_DIR (the spool, and the embedded store).',
        registers: [opts.registry],
        collect() {
          self.refresh(true);
          this.set(Number.isFinite(self.free) ? self.free : -1);
        },
      });
      new Gauge({
        name: 'tallyhouse_disk_pressure',
        help: '1 while DATA_DIR has less than DISK_MIN_FREE_BYTES free, or after that less than DISK_MIN_FREE_BYTES plus the spool backlog: the log drain answers 503.',
        registers: [opts.registry],
        collect() {
          this.set(self.reason() === undefined ? 0 : 1);
        },
      });
    }
  }

  /** The disk filled up under us (ENOSPC, SQLITE_FULL): the state starts now, whatever statfs said a moment ago. */
  hitFull(): void {
    this.latched = true;
    this.readAtMs = -Infinity;
  }

  private refresh(force = false): void {
    const now = Date.now();
    if (!force && now - this.readAtMs < this.cacheMs) return;
    this.readAtMs = now;
    try {
      this.free = this.read(this.opts.path);
    } catch {
      // A disk that cannot be read is no reason to refuse lines; a write that fails says so (hitFull).
      this.free = Infinity;
    }
  }

  /** Why the drain refuses new lines now, or undefined when it takes them. */
  reason(): string | undefined {
    this.refresh();
    const low = this.free < this.opts.minFreeBytes;
    if (low) this.latched = true;
    else if (this.latched && this.free >= this.opts.minFreeBytes + this.opts.backlogBytes()) this.latched = false;
    if (!this.latched) return undefined;
    return low
      ? `DATA_DIR ${this.opts.path} has ${MiB(this.free)} free, below DISK_MIN_FREE_BYTES (${MiB(this.opts.minFreeBytes)}): the log drain refuses new lines until space returns`
      : `DATA_DIR ${this.opts.path} has space again; the log drain takes new lines once there is room for its spool backlog (${this.opts.backlogBytes()} bytes) above DISK_MIN_FREE_BYTES`;
  }
}

/** An error that means the disk is full: ENOSPC/EDQUOT from the file system, SQLITE_FULL from the spool. */
export function isDiskFull(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'SQLITE_FULL') return true;
  }
  return false;
}
