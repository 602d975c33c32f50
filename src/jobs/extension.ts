import type { Extension } from '../runtime.js';
import type { HostedJobRunner } from '../http/command-host.js';
import type { JobDefinition } from '../collectors/job.js';
import { openPlatformSource, runtimeFor, type DemoPlatformOpener } from './platform-source.js';
import { Scheduler } from './scheduler.js';
import { claimStorePlatform } from './store-platform.js';
import { Scraper } from '../collectors/scraper.js';
import { applyMetricsRetention } from '../store/tables/metrics.js';
import { commandLineTarget, durationMs, scrapeTargets } from '../collectors/scrape.js';

/** Shared by the demo-mode wiring of the collectors, the log drain and the webhook receiver. */
export interface DemoWiring {
  /** The drain secret the simulator signs with and the drain verifies. */
  drainSecret?: string;
  /** The key the demo front end posts Faro payloads with (the receiver accepts it as app demo-web). */
  faroKey?: string;
  /** Set once the simulator runs: where its key set is. */
  simUrl?: string;
  /** Opens the built-in simulator as the platform (the composition root hands it over in demo mode). */
  openDemo?: DemoPlatformOpener;
}

/** Set once the scheduler exists: runs a job for a CLI beside the service (src/http/admin.ts). */
export interface JobRunnerHandle {
  runner?: HostedJobRunner;
}

/**
 * Starts what reads the platform: the job scheduler and the metrics scraper, both on one platform source
 * (in demo mode the in-process simulator, started here).
 */
export function collectorsExtension(jobs: JobDefinition[], demo: DemoWiring = {}, handle: JobRunnerHandle = {}): Extension {
  return async (rt) => {
    // Checked before the platform source opens: a bad SCRAPE_TARGETS stops start-up before a simulator starts.
    scrapeTargets(rt.config, { baseUrl: rt.config.SVC_BASE_URL, apiKey: rt.config.SVC_API_KEY });
    // A service started from a shell without the keys (or with another platform's) must not fill a real store.
    await claimStorePlatform(rt, 'the service');
    const source = await openPlatformSource(rt.config, rt.logger, { drainSecret: demo.drainSecret, faroKey: demo.faroKey, registry: rt.registry, openDemo: demo.openDemo });
    const targets = scrapeTargets(rt.config, { baseUrl: rt.config.SVC_BASE_URL, apiKey: rt.config.SVC_API_KEY, client: source.platform });
    if (source.sim) {
      demo.simUrl = source.sim.url;
      const sim = source.sim;
      // The simulator pushes its log lines and queue webhooks to this service once it listens.
      rt.app.addHook('onListen', async () => {
        const address = rt.app.server.address();
        if (address && typeof address !== 'string') sim.pushTo(`http://127.0.0.1:${address.port}`);
      });
    }
    const scheduler = new Scheduler({ runtime: runtimeFor(rt, source), platform: source.platform, jobs, now: source.now });
    handle.runner = { demo: source.demo, run: (job, args, progress) => scheduler.run(job, 'manual', args, progress) };
    const scraper = new Scraper(
      rt,
      source.sim && !rt.config.SCRAPE_TARGETS ? scrapeTargets(rt.config, { baseUrl: source.sim.url, apiKey: source.sim.keys.api, client: source.platform }) : targets,
    );
    await applyMetricsRetention(rt.store, rt.config.METRICS_RETENTION_DAYS, rt.logger);
    if (rt.config.JOBS_ENABLED) {
      scheduler.start();
      scraper.start();
      if (rt.config.SCRAPE_SELF) {
        // Tallyhouse's own /metrics, once the service listens (its port may be chosen by the system).
        rt.app.addHook('onListen', async () => {
          const address = rt.app.server.address();
          if (!address || typeof address === 'string') return;
          const host = ['0.0.0.0', '::', ''].includes(rt.config.HOST) ? '127.0.0.1' : rt.config.HOST;
          const url = `http://${host.includes(':') ? `[${host}]` : host}:${address.port}/metrics`;
          const headers: Record<string, string> = rt.config.METRICS_TOKEN ? { authorization: `Bearer ${rt.config.METRICS_TOKEN}` } : {};
          scraper.add({ ...commandLineTarget(url, 'tallyhouse', headers), intervalMs: durationMs(rt.config.SCRAPE_SELF_INTERVAL) });
        });
      }
    }
    if (rt.config.JOBS_ENABLED && rt.config.STARTUP_JOBS) {
      const names = scheduler.scheduledJobs().map((j) => j.name);
      rt.logger.info(`start-up pass: ${names.join(', ')}, once now, one after the other`);
      void scheduler.startupPass().then(() => rt.logger.info('start-up pass done'));
    }
    return {
      name: 'collectors',
      async stop() {
        await Promise.all([scheduler.stop(), scraper.stop()]);
        await source.close();
      },
    };
  };
}
