import type { Runtime } from '../runtime.js';
import { counter, gauge, histogram } from '../metrics.js';
import { metricSamples, metricSeries, scrapes } from '../store/tables/metrics.js';
import { renderStatement } from '../store/migrate.js';
import { ScrapeError, SeriesCache, scrapeRow, scrapeTarget, type ScrapeTarget } from './scrape.js';
import { redactUrls } from '../redact.js';

export interface ScrapeOutcome {
  target: ScrapeTarget;
  up: boolean;
  samples: number;
  error: string;
}

/**
 * Scrapes each target on its own interval (a scrape never overlaps the previous one of its target), stores
 * every sample of a good scrape or none of a failed one, and records each scrape in `scrapes`.
 */
export class Scraper {
  private readonly caches = new Map<string, SeriesCache>();
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly inFlight = new Map<string, Promise<ScrapeOutcome>>();
  private readonly controller = new AbortController();
  private readonly metrics;

  constructor(
    private readonly rt: Runtime,
    readonly targets: ScrapeTarget[],
  ) {
    const registry = rt.registry;
    this.metrics = {
      scrapes: counter(registry, {
        name: 'tallyhouse_scrapes_total',
        help: 'Scrapes by target and outcome (up: every sample stored; down: none stored).',
        labelNames: ['scrape_job', 'scrape_instance', 'outcome'],
      }),
      duration: histogram(registry, {
        name: 'tallyhouse_scrape_duration_seconds',
        help: 'Time to fetch and parse a scrape.',
        labelNames: ['scrape_job'],
        buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      }),
      samples: gauge(registry, {
        name: 'tallyhouse_scrape_samples',
        help: 'Samples stored by the last good scrape of the target.',
        labelNames: ['scrape_job', 'scrape_instance'],
      }),
      up: gauge(registry, {
        name: 'tallyhouse_scrape_target_up',
        help: '1 when the last scrape of the target succeeded, else 0.',
        labelNames: ['scrape_job', 'scrape_instance'],
      }),
    };
  }

  start(): void {
    for (const target of this.targets) this.schedule(target);
  }

  /** Adds a target to a running scraper (e.g. the service's own /metrics once it listens). */
  add(target: ScrapeTarget): void {
    this.targets.push(target);
    this.schedule(target);
  }

  private schedule(target: ScrapeTarget): void {
    const tick = () => {
      if (!this.inFlight.has(target.url)) void this.scrape(target);
    };
    tick();
    const timer = setInterval(tick, target.intervalMs);
    timer.unref();
    this.timers.push(timer);
    this.rt.logger.info({ job: target.job, instance: target.instance, intervalMs: target.intervalMs }, 'scrape target scheduled');
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.controller.abort();
    await Promise.allSettled([...this.inFlight.values()]);
  }

  /** Scrapes one target now and stores the result. Never throws: the outcome says what happened. */
  scrape(target: ScrapeTarget): Promise<ScrapeOutcome> {
    const running = this.inFlight.get(target.url);
    if (running) return running;
    const p = this.run(target).finally(() => this.inFlight.delete(target.url));
    this.inFlight.set(target.url, p);
    return p;
  }

  private async run(target: ScrapeTarget): Promise<ScrapeOutcome> {
    // scrape_job/scrape_instance, never job/instance: those are the labels Prometheus sets on what it scrapes of us.
    const labels = { scrape_job: target.job, scrape_instance: target.instance };
    const writer = this.rt.writer;
    const startedAt = Date.now();
    try {
      const result = await scrapeTarget(target, this.controller.signal);
      let cache = this.caches.get(target.url);
      if (!cache) this.caches.set(target.url, (cache = new SeriesCache(this.rt.config.SCRAPE_SERIES_CACHE_MAX)));
      const { series, samples } = cache.rows(target, result);
      const stored = Promise.all([
        writer.insert(metricSeries, series),
        writer.insert(metricSamples, samples),
      ]);
      await Promise.all([writer.flush(metricSeries), writer.flush(metricSamples)]);
      await stored;
      await this.record(scrapeRow(target, result.scrapedAtMs, 1, result));
      this.metrics.scrapes.inc({ ...labels, outcome: 'up' });
      this.metrics.duration.observe({ scrape_job: target.job }, result.durationSeconds);
      this.metrics.samples.set(labels, samples.length);
      this.metrics.up.set(labels, 1);
      return { target, up: true, samples: samples.length, error: '' };
    } catch (err) {
      // Logged, stored in `scrapes` and printed: an error quoting the target's URL must not carry its credentials.
      const error = redactUrls(err instanceof ScrapeError ? err.message : `store: ${(err as Error).message}`);
      this.rt.logger.warn({ job: target.job, instance: target.instance, error }, 'scrape failed');
      this.metrics.scrapes.inc({ ...labels, outcome: 'down' });
      this.metrics.up.set(labels, 0);
      await this.record(scrapeRow(target, startedAt, 0, { durationSeconds: (Date.now() - startedAt) / 1000 }, error)).catch(() => undefined);
      return { target, up: false, samples: 0, error };
    }
  }

  private async record(row: ReturnType<typeof scrapeRow>): Promise<void> {
    const done = this.rt.writer.insert(scrapes, [row]);
    await this.rt.writer.flush(scrapes);
    await done;
  }
}
