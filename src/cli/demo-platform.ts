/**
 * Demo mode's platform: the built-in simulator in this process, carrying the shipped scenario, its clock following
 * real time (or `demoStart`). Wired by the composition root and the CLI only (ARCHITECTURE.md, "Layers"): the
 * schedule and the collectors know a PlatformSource, never the simulator.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { PlatformClient } from '../platform/index.js';
import type { PlatformSource, PlatformSourceOptions } from '../jobs/platform-source.js';
import { DEMO_PRICES_FILE } from '../jobs/store-platform.js';
import { startSim, type World } from '../sim/index.js';
import { formatNanos } from '../sim/money.js';
import { readScenarioFile } from '../sim/scenario.js';

export async function openDemoPlatform(config: Config, logger: Logger, opts: PlatformSourceOptions): Promise<PlatformSource> {
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
    maxResponseBytes: config.PLATFORM_MAX_RESPONSE_BYTES,
    registry: opts.registry,
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
export { DEMO_PRICES_FILE };

function writeDemoPrices(dataDir: string, world: World): string {
  const file = join(dataDir, DEMO_PRICES_FILE);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  writeFileSync(`${file}.tmp`, `${JSON.stringify(demoPrices(world), null, 1)}\n`, { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
  return file;
}

