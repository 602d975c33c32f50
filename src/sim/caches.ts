// Every cache of generated data in the simulator: bounded LRUs (lru-cache), sized in what they hold (records,
// runners, rows), so serving a year of requests never grows memory. Anything evicted is regenerated from the
// seed on the next ask; the minimal limits make every ask regenerate (the determinism tests compare both).
import { LRUCache } from 'lru-cache';

/** A cache's bounds: entries, and what they hold in the cache's own unit (records, runners, rows, lines). */
export interface CacheLimit {
  entries: number;
  size: number;
}

export interface CacheLimits {
  /** Runners, in per-(app, day) blocks of runner lives. */
  runnerBlocks: CacheLimit;
  /** Busy runner segments, in (app, hour) lists. */
  busySegments: CacheLimit;
  /** Runner state timelines (size: runners). */
  timelines: CacheLimit;
  /** Requests, in per-(endpoint, hour) lists. */
  requestHours: CacheLimit;
  /** Requests referenced by merged (endpoint set, hour) lists: the hours being paged. */
  mergedHours: CacheLimit;
  /** Log lines, in per-(app, hour) lists. */
  logLines: CacheLimit;
  /** Rows of computed usage answers (paged from the cache). */
  usageRows: CacheLimit;
  modelUsageRows: CacheLimit;
  /** Rows of computed analytics answers (paged from the cache). */
  analyticsRows: CacheLimit;
  /** Requests of whole windows sorted by duration (sort_by=duration paging). */
  durationSorted: CacheLimit;
  /** Distinct fault keys remembered (how often a request was seen, for the 3-in-a-row rule). */
  faultKeys: CacheLimit;
}

/**
 * About a day of runners of a 500-app world, and the few hours being paged. Few entries on purpose: records
 * evicted soon die young (a cheap scavenge), while a cache holding many promotes them all to the old
 * generation, whose garbage then grows the heap to several times what is live before a full collection.
 * The sizes cap what a few very busy hours may hold.
 */
export const DEFAULT_CACHE_LIMITS: CacheLimits = {
  runnerBlocks: { entries: 1_500, size: 8_000 },
  busySegments: { entries: 2_000, size: 10_000 },
  timelines: { entries: 5_000, size: 5_000 },
  requestHours: { entries: 128, size: 20_000 },
  mergedHours: { entries: 4, size: 50_000 },
  logLines: { entries: 64, size: 20_000 },
  usageRows: { entries: 16, size: 50_000 },
  modelUsageRows: { entries: 16, size: 50_000 },
  analyticsRows: { entries: 16, size: 50_000 },
  durationSorted: { entries: 8, size: 50_000 },
  faultKeys: { entries: 10_000, size: 10_000 },
};

const NOTHING: CacheLimit = { entries: 1, size: 1 };
/**
 * Next to nothing is kept: every page, bucket and truth figure is generated again (tests use it as the cold
 * cache). Fault keys are state, not generated data (a request faulted on its first try must see its retry count
 * grow), so they keep their default.
 */
export const MINIMAL_CACHE_LIMITS: CacheLimits = {
  runnerBlocks: NOTHING, busySegments: NOTHING, timelines: NOTHING, requestHours: NOTHING, mergedHours: NOTHING,
  logLines: NOTHING, usageRows: NOTHING, modelUsageRows: NOTHING, analyticsRows: NOTHING, durationSorted: NOTHING,
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

  /** A named LRU within `limits[name]`; `sizeOf` counts a value's units (default 1). */
  create<K extends string | number, V extends object>(name: keyof CacheLimits, sizeOf: (value: V) => number = () => 1): LRUCache<K, V> {
    // An empty list still costs an entry, and lru-cache wants sizes of at least 1.
    const { entries, size } = this.limits[name];
    const cache = new LRUCache<K, V>({ max: entries, maxSize: size, sizeCalculation: (v) => Math.max(1, sizeOf(v)) });
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
