/**
 * The store knows its platform (issue 44.1). A shell without the platform keys once ran `collect` in demo mode and
 * wrote the simulator's invented usage and logs into the real store, and nothing recorded where a row came from.
 * So the first collection records which platform filled the store (sql/032), and a command or the service that
 * would write from another one (the built-in simulator included) refuses, naming both, unless
 * ALLOW_PLATFORM_CHANGE is set for a deliberate move.
 *
 * The platform interface names no endpoint that says which account a key answers for, so a platform is its base
 * URL; the key's fingerprint is recorded beside it, and a new one at the same URL is a key rotation, recorded and
 * let through.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { isDemoMode, type Config } from '../config.js';
import { redactUrl } from '../redact.js';
import type { Runtime } from '../runtime.js';
import { collectedRowCount, latestStorePlatform, storePlatform, type StorePlatformRow } from '../store/tables/store-platform.js';
import { toDateTime64 } from '../values.js';

export interface PlatformIdentity {
  kind: 'platform' | 'simulator';
  /** SVC_BASE_URL without credentials or a trailing slash; '' for the built-in simulator (its port changes per run). */
  baseUrl: string;
  keyFingerprint: string;
}

/** The demo's price list: written into DATA_DIR by demo mode only (src/cli/demo-platform.ts), so its presence marks a demo store. */
export const DEMO_PRICES_FILE = 'demo-prices.json';

/** The first line a command prints on stderr when it runs on the built-in simulator (a shell without the keys). */
export function demoNotice(command: string): string {
  return `tallyhouse ${command}: demo mode: no SVC_API_KEY / SVC_ADMIN_KEY set, so this runs on the built-in platform simulator (invented data, not a platform's)\n`;
}

export class StorePlatformError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StorePlatformError';
  }
}

/** The platform this configuration collects from. */
export function platformIdentity(config: Config): PlatformIdentity {
  if (isDemoMode(config)) return { kind: 'simulator', baseUrl: '', keyFingerprint: '' };
  const key = config.SVC_ADMIN_KEY ?? config.SVC_API_KEY ?? '';
  return {
    kind: 'platform',
    baseUrl: redactUrl(config.SVC_BASE_URL).replace(/\/+$/, ''),
    keyFingerprint: createHash('sha256').update(key).digest('hex').slice(0, 16),
  };
}

function describe(p: Pick<PlatformIdentity, 'kind' | 'baseUrl' | 'keyFingerprint'>): string {
  if (p.kind === 'simulator') return 'the built-in platform simulator (demo mode: no SVC_API_KEY / SVC_ADMIN_KEY set)';
  return `the platform at ${p.baseUrl} (key ${p.keyFingerprint.slice(0, 8)}…)`;
}

const samePlatform = (a: Pick<PlatformIdentity, 'kind' | 'baseUrl'>, b: Pick<PlatformIdentity, 'kind' | 'baseUrl'>) =>
  a.kind === b.kind && a.baseUrl === b.baseUrl;

async function record(rt: Pick<Runtime, 'writer'>, p: PlatformIdentity, by: string): Promise<void> {
  const saved = rt.writer.insert(storePlatform, [
    { recorded_at: toDateTime64(Date.now()), kind: p.kind, base_url: p.baseUrl, key_fingerprint: p.keyFingerprint, recorded_by: by } satisfies StorePlatformRow,
  ]);
  await rt.writer.flush(storePlatform);
  await saved;
}

/**
 * Checks, before anything is written (and before the simulator starts), that `writer` (a command's name, or
 * "the service") may write into this store from the configured platform; records the platform at the first
 * collection. Throws StorePlatformError (one line, naming both platforms and the override) when it may not.
 */
export async function claimStorePlatform(rt: Pick<Runtime, 'config' | 'store' | 'writer' | 'logger'>, writer: string): Promise<PlatformIdentity> {
  const config = rt.config;
  const current = platformIdentity(config);
  const allow = config.ALLOW_PLATFORM_CHANGE;
  const [recorded] = await latestStorePlatform(rt.store, {});
  const override = 'ALLOW_PLATFORM_CHANGE=true writes anyway (a deliberate move to another platform)';
  if (recorded) {
    const was = { kind: recorded.kind, baseUrl: recorded.base_url, keyFingerprint: recorded.key_fingerprint };
    if (samePlatform(was, current)) {
      if (was.keyFingerprint !== current.keyFingerprint) {
        rt.logger.info({ platform: current.baseUrl }, 'the platform key changed (a rotation): recorded');
        await record(rt, current, writer);
      }
      return current;
    }
    if (!allow) {
      const fix = current.kind === 'simulator' ? 'set SVC_API_KEY and SVC_ADMIN_KEY as the service has them, or ' : '';
      throw new StorePlatformError(`this store was filled from ${describe(was)}; ${writer} would write from ${describe(current)}: refused (${fix}${override})`);
    }
    rt.logger.warn({ from: describe(was), to: describe(current) }, 'ALLOW_PLATFORM_CHANGE: writing from another platform than the one that filled this store');
    // The simulator never becomes a real store's platform: the override lets one write through, the record stays.
    if (current.kind === 'platform') await record(rt, current, writer);
    return current;
  }
  if (current.kind === 'simulator' && !allow) {
    // Demo mode never starts implicitly on a store that may hold a real platform's data.
    if (config.CLICKHOUSE_URL && writer !== 'the service') {
      throw new StorePlatformError(
        `${writer} would write from ${describe(current)} into the ClickHouse server at ${redactUrl(config.CLICKHOUSE_URL)}, a shared store that records no platform yet: refused (set SVC_API_KEY and SVC_ADMIN_KEY, or ${override})`,
      );
    }
    const [{ n }] = await collectedRowCount(rt.store, {});
    const demoStore = !config.CLICKHOUSE_URL && existsSync(join(config.DATA_DIR, DEMO_PRICES_FILE));
    if (n > 0 && !demoStore) {
      throw new StorePlatformError(
        `this store holds ${n} collected rows from a platform it does not record (filled before this version); ${writer} would write from ${describe(current)}: refused (set SVC_API_KEY and SVC_ADMIN_KEY, or ${override})`,
      );
    }
  }
  await record(rt, current, writer);
  return current;
}
