// Who may send webhooks: the platform publishes every address that may (`webhook_ip_ranges` in GET /v1/meta,
// "clients should refetch it periodically"). A webhook connection from outside those ranges is refused before a
// byte of its body is read, so only admitted addresses compete for webhook read slots (issue 49.1). The list is
// refetched on a schedule and kept in DATA_DIR across restarts: a restart while the platform is unreachable keeps
// the last known list (said stale past WEBHOOK_IP_RANGES_STALE_SECONDS) rather than admitting everyone.
import { mkdir, readFile, rename, writeFile, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Gauge, type Registry } from 'prom-client';
import type { Logger } from '../log.js';
import { AddressRanges, parseRange } from '../ip-ranges.js';

/** The file the last fetched list is kept in (under DATA_DIR). */
export const WEBHOOK_RANGES_FILE = 'webhook-ip-ranges.json';
/** Ranges kept at most: a platform answer of millions costs no more than this. */
export const MAX_WEBHOOK_RANGES = 1_000;

/** While no list is known, a webhook asks for one again at most this often. */
export const UNKNOWN_RETRY_MS = 30_000;

/** fetchRanges' answer when there is no platform to ask yet (demo mode before the simulator runs): not a failure. */
export class PlatformNotStarted extends Error {}

export type Admission = 'admitted' | 'refused' | 'unknown';

export interface WebhookSourcesOptions {
  /** GET /v1/meta's webhook_ip_ranges (throws when the platform cannot be asked). */
  fetchRanges: () => Promise<string[]>;
  /** Where the last fetched list is kept (DATA_DIR/webhook-ip-ranges.json). */
  file: string;
  refreshMs: number;
  staleMs: number;
  logger: Logger;
  registry?: Registry;
  now?: () => number;
}

interface Kept {
  ranges: string[];
  fetched_at_ms: number;
}

/**
 * The platform's webhook source ranges: loaded from `file` at start, fetched at once and every `refreshMs`, each
 * successful fetch written to `file` atomically (a temporary file fsynced, then renamed over the old one: a crash
 * leaves the old list or the new, never a torn one; a file that does not parse is ignored, and the next fetch
 * writes it again). Before any list is known (first start, platform unreachable) every address is admitted, with a
 * warning: the signature still guards what is stored.
 */
export class WebhookSources {
  private ranges: AddressRanges | undefined;
  private fetchedAtMs: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private warnedUnknown = false;
  private warnedStale = false;
  private lastAttemptMs = -Infinity;
  private readonly now: () => number;

  private constructor(private readonly opts: WebhookSourcesOptions) {
    this.now = opts.now ?? Date.now;
    if (opts.registry) {
      const self = this;
      new Gauge({
        name: 'tallyhouse_webhook_ip_ranges_age_seconds',
        help: 'Age of the webhook source ranges in use (GET /v1/meta webhook_ip_ranges); -1 while none is known (every address admitted).',
        registers: [opts.registry],
        collect() {
          this.set(self.fetchedAtMs === undefined ? -1 : Math.max(0, (self.now() - self.fetchedAtMs) / 1000));
        },
      });
    }
  }

  /** Loads the kept list, starts the first fetch (not awaited: start-up does not wait on the platform) and the schedule. */
  static async open(opts: WebhookSourcesOptions): Promise<WebhookSources> {
    const sources = new WebhookSources(opts);
    await sources.load();
    void sources.refresh();
    sources.timer = setInterval(() => void sources.refresh(), opts.refreshMs).unref();
    return sources;
  }

  get known(): readonly string[] | undefined {
    return this.ranges?.ranges;
  }

  /** Whether `address` may send webhooks: in the ranges, outside them, or no list known yet (admitted). */
  admits(address: string): Admission {
    if (!this.ranges) {
      // No list yet: ask again, at most every UNKNOWN_RETRY_MS (the schedule's next fetch may be an hour away).
      if (this.now() - this.lastAttemptMs >= UNKNOWN_RETRY_MS) void this.refresh();
      if (!this.warnedUnknown) {
        this.warnedUnknown = true;
        this.opts.logger.warn('no webhook_ip_ranges known yet (GET /v1/meta not answered): webhooks from any address are admitted until it is');
      }
      return 'unknown';
    }
    this.checkStale();
    return this.ranges.has(address) ? 'admitted' : 'refused';
  }

  /** Fetches the list now (one fetch at a time); a failure keeps the list in use and is logged. */
  refresh(): Promise<void> {
    this.inFlight ??= (async () => {
      this.lastAttemptMs = this.now();
      try {
        const fetched = await this.opts.fetchRanges();
        const valid = fetched.filter((r) => parseRange(r) !== undefined).slice(0, MAX_WEBHOOK_RANGES);
        if (valid.length < Math.min(fetched.length, MAX_WEBHOOK_RANGES)) {
          this.opts.logger.warn({ given: fetched.length, kept: valid.length }, 'webhook_ip_ranges holds entries that are not CIDR ranges: they are ignored');
        }
        if (fetched.length > MAX_WEBHOOK_RANGES) this.opts.logger.warn({ given: fetched.length, kept: MAX_WEBHOOK_RANGES }, 'webhook_ip_ranges is longer than Tallyhouse keeps: the rest is ignored');
        const at = this.now();
        this.use(valid, at);
        await this.save({ ranges: valid, fetched_at_ms: at });
      } catch (err) {
        if (err instanceof PlatformNotStarted) {
          this.opts.logger.debug('webhook_ip_ranges not fetched yet: the platform (the demo simulator) is not started');
          return;
        }
        this.opts.logger.warn({ err: (err as Error).message }, 'webhook_ip_ranges could not be fetched (GET /v1/meta); the last known list stays in use');
        this.checkStale();
      } finally {
        this.inFlight = undefined;
      }
    })();
    return this.inFlight;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private use(ranges: string[], fetchedAtMs: number): void {
    this.ranges = new AddressRanges(ranges);
    this.fetchedAtMs = fetchedAtMs;
    this.warnedStale = false;
  }

  private checkStale(): void {
    if (this.fetchedAtMs === undefined || this.warnedStale) return;
    const ageMs = this.now() - this.fetchedAtMs;
    if (ageMs <= this.opts.staleMs) return;
    this.warnedStale = true;
    this.opts.logger.warn(
      { fetchedAt: new Date(this.fetchedAtMs).toISOString(), ageSeconds: Math.round(ageMs / 1000) },
      'the webhook_ip_ranges in use are stale (older than WEBHOOK_IP_RANGES_STALE_SECONDS): GET /v1/meta has not answered since',
    );
  }

  private async load(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.opts.file, 'utf8');
    } catch {
      return; // none kept yet
    }
    try {
      const kept = JSON.parse(text) as Partial<Kept>;
      if (!Array.isArray(kept.ranges) || typeof kept.fetched_at_ms !== 'number') throw new Error('not a kept list');
      const ranges = kept.ranges.filter((r): r is string => typeof r === 'string' && parseRange(r) !== undefined).slice(0, MAX_WEBHOOK_RANGES);
      this.use(ranges, kept.fetched_at_ms);
      this.opts.logger.info({ ranges: ranges.length, fetchedAt: new Date(kept.fetched_at_ms).toISOString() }, 'webhook_ip_ranges loaded from the last run');
      this.checkStale();
    } catch {
      this.opts.logger.warn({ file: this.opts.file }, 'the kept webhook_ip_ranges file does not parse: ignored until the next fetch writes it again');
    }
  }

  private async save(kept: Kept): Promise<void> {
    const tmp = `${this.opts.file}.tmp`;
    await mkdir(dirname(this.opts.file), { recursive: true });
    await writeFile(tmp, JSON.stringify(kept));
    const handle = await open(tmp, 'r+');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, this.opts.file);
  }
}
