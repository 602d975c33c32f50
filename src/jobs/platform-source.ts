import { fileURLToPath } from 'node:url';
import type { Config } from '../config.js';
import { isDemoMode } from '../config.js';
import type { Logger } from '../log.js';
import { PlatformClient } from '../platform/index.js';
import { redactUrl, redactUrls } from '../redact.js';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Runtime } from '../runtime.js';
import type { World } from '../sim/index.js';
import { formatNanos } from '../sim/money.js';

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
  const [{ startSim }, { readScenarioFile }] = await Promise.all([import('../sim/index.js'), import('../sim/scenario.js')]);
  // The demo's platform carries the shipped scenario (a price change, a runaway key, an error burst, ...), so change
  // attribution, budgets and the anomalies job have something to find on a first start.
  const scenario = readScenarioFile(fileURLToPath(new URL('../sim/scenarios/demo.json', import.meta.url)));
  const sim = await startSim({ now: opts.demoStart ?? new Date(), realtime: true, host: '127.0.0.1', port: 0, drainSecret: opts.drainSecret, scenario });
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
  const demoPricesFile = config.PRICES_FILE ? undefined : writeDemoPrices(config.DATA_DIR, sim.world);
  return {
    platform,
    now: () => sim.clock.now(),
    demo: true,
    demoPricesFile,
    sim: {
      url: sim.url,
      keys: sim.keys,
      pushTo(serviceUrl) {
        // With LOG_DRAIN_URL_TOKEN the drain URL carries it (src/ingest/drain/auth.ts, drainPath).
        sim.drain.setUrl(`${serviceUrl}/v1/drains/logs${config.LOG_DRAIN_URL_TOKEN ? `/${config.LOG_DRAIN_URL_TOKEN}` : ''}`);
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

/**
 * The demo's price list (issue 30.10: every request cost was null, having no price): for each serverless endpoint
 * of the caller's apps, the price of a machine-second of its app's first machine type at its owner's rate, which is
 * what one billable unit is in the simulator (a billed second of the request), in USD, in effect from 2000-01-01.
 * Derived from the world alone, so a restart writes the same list and the requests job finds nothing changed.
 */
export function demoPrices(world: World): Array<{ endpoint_id: string; unit_price: string; currency: string; effective_from: string }> {
  return world.endpoints
    .filter((ep) => !ep.isModel && world.apps[ep.appIndex]?.ownedByCaller)
    .map((ep) => {
      const app = world.apps[ep.appIndex];
      return { endpoint_id: ep.id, unit_price: formatNanos(world.price(app.owner, app.machineTypes[0]).unitPriceNanos), currency: 'USD', effective_from: DEMO_PRICES_FROM };
    });
}

export const DEMO_PRICES_FROM = '2000-01-01';
export const DEMO_PRICES_FILE = 'demo-prices.json';

function writeDemoPrices(dataDir: string, world: World): string {
  const file = join(dataDir, DEMO_PRICES_FILE);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  writeFileSync(`${file}.tmp`, `${JSON.stringify(demoPrices(world), null, 1)}\n`, { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
  return file;
}

/** The runtime a job runs with: in demo mode without PRICES_FILE, its configuration names the demo's price list. */
export function runtimeFor<T extends Runtime>(rt: T, source: PlatformSource): T {
  if (!source.demoPricesFile || rt.config.PRICES_FILE) return rt;
  return { ...rt, config: Object.freeze({ ...rt.config, PRICES_FILE: source.demoPricesFile }) };
}
