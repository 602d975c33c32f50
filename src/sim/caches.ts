// Every cache of generated data in the simulator: bounded LRUs (lru-cache), sized in what they hold (records,
// runners, rows), so serving a year of requests never grows memory. Anything evicted is regenerated from the
// seed on the next ask; the minimal limits make every ask regenerate (the determinism tests compare both).
import { LRUCache } from 'lru-cache';

export interface CacheLimits {
  /** Runners held in per-(app, day) blocks of runner lives. */
  runnerBlocks: number;
  /** (app, hour) lists of busy runner segments. */
  busySegments: number;
  /** Runner state timelines. */
  timelines: number;
  /** Requests held in per-(endpoint, hour) lists. */
  requestHours: number;
  /** Requests referenced by merged (endpoint set, hour) lists. */
  mergedHours: number;
  /** Log lines held in per-(app, hour) lists. */
  logLines: number;
  /** Rows of computed usage answers (paged from the cache). */
  usageRows: number;
  /** Rows of computed analytics answers (paged from the cache). */
  analyticsRows: number;
  /** Requests of whole windows sorted by duration (sort_by=duration paging). */
  durationSorted: number;
  /** Distinct fault keys remembered (how often a request was seen, for the 3-in-a-row rule). */
  faultKeys: number;
}

/** About 60 MB at most in all: a few days of a 500-app world stay hot. */
export const DEFAULT_CACHE_LIMITS: CacheLimits = {
  runnerBlocks: 20_000,
  busySegments: 20_000,
  timelines: 5_000,
  requestHours: 30_000,
  mergedHours: 30_000,
  logLines: 20_000,
  usageRows: 50_000,
  analyticsRows: 50_000,
  durationSorted: 50_000,
  faultKeys: 50_000,
};

/**
 * Next to nothing is kept: every page, bucket and truth figure is generated again (tests use it as the cold
 * cache). Fault keys are state, not generated data (a request faulted on its first try must see its retry count
 * grow), so they keep their default.
 */
export const MINIMAL_CACHE_LIMITS: CacheLimits = {
  runnerBlocks: 1, busySegments: 1, timelines: 1, requestHours: 1, mergedHours: 1, logLines: 1, usageRows: 1, analyticsRows: 1,
  durationSorted: 1,
  faultKeys: DEFAULT_CACHE_LIMITS.faultKeys,
};

export interface CacheSize {
  name: string;
  entries: number;
  /** In the cache's own unit (records, runners, rows ...). */
  size: number;
}

export class SimCaches {
  private readonly all: Array<{ name: string; cache: LRUCache<string | number, object> }> = [];
  constructor(readonly limits: CacheLimits = DEFAULT_CACHE_LIMITS) {}

  /** A named LRU holding at most `limits[name]` units; `sizeOf` counts a value's units (default 1). */
  create<K extends string | number, V extends object>(name: keyof CacheLimits, sizeOf: (value: V) => number = () => 1): LRUCache<K, V> {
    // An empty list still costs an entry, and lru-cache wants sizes of at least 1.
    const cache = new LRUCache<K, V>({ maxSize: this.limits[name], sizeCalculation: (v) => Math.max(1, sizeOf(v)) });
    this.all.push({ name, cache: cache as unknown as LRUCache<string | number, object> });
    return cache;
  }

  sizes(): CacheSize[] {
    return this.all.map(({ name, cache }) => ({ name, entries: cache.size, size: cache.calculatedSize }));
  }

  clear(): void {
    for (const { cache } of this.all) cache.clear();
  }
}
