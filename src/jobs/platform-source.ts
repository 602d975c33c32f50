import type { Config } from '../config.js';
import { ConfigError, isDemoMode } from '../config.js';
import type { Logger } from '../log.js';
import { PlatformClient } from '../platform/index.js';
import { redactUrl, redactUrls } from '../redact.js';
import type { Runtime } from '../runtime.js';
import type { Registry } from 'prom-client';

/** Where the collectors read from: the configured platform, or the built-in simulator in demo mode. */
export interface PlatformSource {
  platform: PlatformClient;
  /** The clock jobs see. */
  now: () => Date;
  demo: boolean;
  /**
   * Demo mode with PRICES_FILE unset: the simulator's unit prices, written as a prices file under DATA_DIR, so that
   * the requests job prices every request (runtimeFor gives the job a configuration naming it).
   */
  demoPricesFile?: string;
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
  /** Demo mode: the simulated platform's "now" at start (default: the machine's clock); tests set it. */
  demoStart?: Date;
  /**
   * Opens the built-in simulator as the platform in demo mode. Only the composition root and the CLI hand it over
   * (src/cli/demo-platform.ts): the simulator is not a dependency of scheduling (ARCHITECTURE.md, "Layers").
   */
  openDemo?: DemoPlatformOpener;
  /** Where the platform client's metrics go (the service's registry). */
  registry?: Registry;
}

export type DemoPlatformOpener = (config: Config, logger: Logger, opts: PlatformSourceOptions) => Promise<PlatformSource>;

export async function openPlatformSource(config: Config, logger: Logger, opts: PlatformSourceOptions = {}): Promise<PlatformSource> {
  if (!isDemoMode(config)) {
    const platform = new PlatformClient({
      baseUrl: config.SVC_BASE_URL,
      apiKey: config.SVC_API_KEY,
      adminKey: config.SVC_ADMIN_KEY,
      maxInFlight: config.PLATFORM_MAX_IN_FLIGHT,
      maxResponseBytes: config.PLATFORM_MAX_RESPONSE_BYTES,
      registry: opts.registry,
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
  if (!opts.openDemo) {
    throw new ConfigError([{ variable: 'SVC_API_KEY / SVC_ADMIN_KEY', expected: 'a platform key (this runs on a platform, never on the built-in simulator)' }]);
  }
  return opts.openDemo(config, logger, opts);
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

/** The runtime a job runs with: in demo mode without PRICES_FILE, its configuration names the demo's price list. */
export function runtimeFor<T extends Runtime>(rt: T, source: PlatformSource): T {
  if (!source.demoPricesFile || rt.config.PRICES_FILE) return rt;
  return { ...rt, config: Object.freeze({ ...rt.config, PRICES_FILE: source.demoPricesFile }) };
}
