import type { Config } from '../config.js';
import { isDemoMode } from '../config.js';
import type { Logger } from '../log.js';
import { PlatformClient } from '../platform/index.js';
import { redactUrl, redactUrls } from '../redact.js';

/** Where the collectors read from: the configured platform, or the built-in simulator in demo mode. */
export interface PlatformSource {
  platform: PlatformClient;
  /** The clock jobs see. */
  now: () => Date;
  demo: boolean;
  /** The in-process simulator in demo mode: where it is, its keys, and where it should push drain lines and webhooks. */
  sim?: { url: string; keys: { api: string; admin: string }; pushTo(serviceUrl: string): void };
  close(): Promise<void>;
}

export interface PlatformSourceOptions {
  /** The service warns that it runs on the simulator; a one-shot command (the user chose it) says it at info. */
  demoNoticeLevel?: 'warn' | 'info';
  /** Demo mode: the log drain's secret, so the simulator signs what the service verifies. */
  drainSecret?: string;
  /** Demo mode: the simulated front end posts Faro payloads with this key (none: it stays quiet). */
  faroKey?: string;
}

export async function openPlatformSource(config: Config, logger: Logger, opts: PlatformSourceOptions = {}): Promise<PlatformSource> {
  if (!isDemoMode(config)) {
    const platform = new PlatformClient({
      baseUrl: config.SVC_BASE_URL,
      apiKey: config.SVC_API_KEY,
      adminKey: config.SVC_ADMIN_KEY,
      maxInFlight: config.PLATFORM_MAX_IN_FLIGHT,
      logger: logger.child({ component: 'platform' }),
    });
    if (config.PLATFORM_CLOCK === 'wall') return { platform, now: () => new Date(), demo: false, close: () => platform.close() };
    const clock = await simulatorClock(platform, config.SVC_BASE_URL, logger);
    return {
      platform,
      now: clock.now,
      demo: false,
      async close() {
        clock.stop();
        await platform.close();
      },
    };
  }
  // Demo mode: a simulated platform in this process, its clock following real time.
  const { startSim } = await import('../sim/index.js');
  const sim = await startSim({ now: new Date(), realtime: true, host: '127.0.0.1', port: 0, drainSecret: opts.drainSecret });
  logger[opts.demoNoticeLevel ?? 'warn'](
    { simulator: sim.url },
    'demo mode: no platform key configured (SVC_API_KEY / SVC_ADMIN_KEY), so Tallyhouse collects from its built-in platform simulator. To use a real account set SVC_BASE_URL, SVC_API_KEY and SVC_ADMIN_KEY (an ADMIN-scope key for usage).',
  );
  const platform = new PlatformClient({
    baseUrl: sim.url,
    apiKey: sim.keys.api,
    adminKey: sim.keys.admin,
    maxInFlight: config.PLATFORM_MAX_IN_FLIGHT,
    logger: logger.child({ component: 'platform' }),
  });
  return {
    platform,
    now: () => sim.clock.now(),
    demo: true,
    sim: {
      url: sim.url,
      keys: sim.keys,
      pushTo(serviceUrl) {
        sim.drain.setUrl(`${serviceUrl}/v1/drains/logs`);
        sim.webhooks.setUrl(`${serviceUrl}/v1/webhooks/queue`);
        if (opts.faroKey) sim.frontEnd.setTarget({ url: `${serviceUrl}/v1/faro/collect`, key: opts.faroKey });
      },
    },
    async close() {
      await platform.close();
      await sim.close();
    },
  };
}

/** How often a simulator's virtual clock is read (PLATFORM_CLOCK=simulator). */
const SIM_CLOCK_POLL_MS = 500;

/**
 * PLATFORM_CLOCK=simulator: the jobs' clock is the virtual clock of the simulator at SVC_BASE_URL, read before the
 * jobs start (a platform that is not a simulator fails start-up, naming the variable) and then every 500 ms. It
 * never goes back; between two reads it stands still, so a job sees at most half a second of the platform's past.
 */
async function simulatorClock(platform: PlatformClient, baseUrl: string, logger: Logger): Promise<{ now: () => Date; stop(): void }> {
  let latest = 0;
  const read = async (): Promise<void> => {
    const { now } = await platform.getJson<{ now: string }>('/_sim/clock', { scope: 'admin' });
    const t = Date.parse(now);
    if (!Number.isFinite(t)) throw new Error(`/_sim/clock answered a time that is not one: ${JSON.stringify(now)}`);
    latest = Math.max(latest, t);
  };
  try {
    await read();
  } catch (err) {
    throw new Error(`PLATFORM_CLOCK=simulator: cannot read the virtual clock at ${redactUrl(`${baseUrl}/_sim/clock`)} (is SVC_BASE_URL a Tallyhouse simulator, and SVC_ADMIN_KEY its admin key?): ${redactUrls((err as Error).message)}`);
  }
  let warned = false;
  const timer = setInterval(() => {
    read().then(
      () => (warned = false),
      (err: Error) => {
        if (!warned) logger.warn({ err: err.message }, 'cannot read the simulator clock; jobs see the last time read until it answers again');
        warned = true;
      },
    );
  }, SIM_CLOCK_POLL_MS);
  timer.unref();
  return { now: () => new Date(latest), stop: () => clearInterval(timer) };
}
