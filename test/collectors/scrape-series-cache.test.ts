// Issue 43.2: the scrape series cache (SeriesCache, one per target) is bounded by SCRAPE_SERIES_CACHE_MAX. The old
// Map never dropped an entry: a target whose label values change every scrape (a request id, a pod name) left
// 100,000 entries after 200 scrapes of 500 changing series. Hand-counted: 200 x 500 distinct series, a bound of
// 50,000 (the default) keeps exactly 50,000; a series seen every scrape stays remembered (written once) while the
// changing ones churn; one forgotten and seen again is written again.
import { describe, expect, it } from 'vitest';
import { SeriesCache, type ScrapeResult, type ScrapeTarget } from '../../src/collectors/scrape.js';
import { parseConfig } from '../../src/config.js';
import type { Sample } from '../../src/promtext/model.js';

const target: ScrapeTarget = { url: 'http://127.0.0.1:1/metrics', job: 'app', instance: '127.0.0.1:1', intervalMs: 15_000, timeoutMs: 5_000, headers: {}, sampleLimit: 0, bodySizeLimitBytes: 0 };
const T0 = Date.UTC(2026, 10, 1);

function sample(name: string, labels: Record<string, string>): Sample {
  return { name, labels, value: 1, timestampMs: null, family: name, type: 'gauge', help: null, unit: null } as Sample;
}

/** Scrape `n` (15 s apart): `changing` series whose label changes every scrape, plus one steady series. */
function scrape(n: number, changing: number): ScrapeResult {
  const samples = [sample('steady', {})];
  for (let i = 0; i < changing; i++) samples.push(sample('requests_inflight', { request: `r${n}-${i}` }));
  return { samples, bytes: 0, contentType: null, durationSeconds: 0, scrapedAtMs: T0 + n * 15_000 };
}

describe('the scrape series cache', () => {
  it('SCRAPE_SERIES_CACHE_MAX defaults to 50,000', () => {
    expect(parseConfig({}).SCRAPE_SERIES_CACHE_MAX).toBe(50_000);
  });

  it('200 scrapes of 500 changing series keep the bound (50,000), not 100,000; the steady series is written once', () => {
    const cache = new SeriesCache(parseConfig({}).SCRAPE_SERIES_CACHE_MAX);
    let steadyWrites = 0;
    for (let n = 0; n < 200; n++) {
      const { series, samples } = cache.rows(target, scrape(n, 500));
      expect(samples).toHaveLength(501);
      expect(series.filter((s) => s.metric === 'requests_inflight')).toHaveLength(500);
      steadyWrites += series.filter((s) => s.metric === 'steady').length;
    }
    expect(cache.size).toBe(50_000);
    // 200 scrapes 15 s apart span 50 minutes: under the hourly refresh, so once.
    expect(steadyWrites).toBe(1);
  });

  it('at a bound of 3: the least recently seen series is forgotten, and written again when it returns', () => {
    const cache = new SeriesCache(3);
    const at = (n: number, names: string[]): string[] =>
      cache.rows(target, { samples: names.map((m) => sample(m, {})), bytes: 0, contentType: null, durationSeconds: 0, scrapedAtMs: T0 + n * 1000 }).series.map((s) => s.metric);
    expect(at(0, ['a', 'b', 'c'])).toEqual(['a', 'b', 'c']);
    expect(at(1, ['a', 'b', 'c'])).toEqual([]);
    expect(at(2, ['d'])).toEqual(['d']); // a (least recently seen) goes
    expect(cache.size).toBe(3);
    expect(at(3, ['b', 'c', 'd'])).toEqual([]);
    expect(at(4, ['a'])).toEqual(['a']);
  });
});
