import type { JobContext } from './job.js';
import { appPath, isPlatformError, QueueResponse, type PlatformError } from '../platform/index.js';
import { appEndpoints, currentAppEndpoints, type AppEndpointRow } from '../store/tables/app-endpoints.js';
import { apps, liveAppKeys, type AppRow } from '../store/tables/apps.js';
import { isoToDateTime64, nextVersionMs, toDateTime64 } from '../values.js';
import { collectorRejects, commitRows, tableWrite, mapLimit } from './common.js';
import { fetchAppsListing, splitEndpointId, type AppRef, type ListedApp } from './endpoints.js';

export interface AppsResult {
  apps: number;
  endpoints: number;
  tombstones: number;
  rejected: number;
}

/** Queue reads in flight at once (one call per app). */
const QUEUE_CONCURRENCY = 4;

/**
 * Each app's queue backlog (GET .../queue; never its DELETE, which empties the queue), null where the read failed
 * (the platform refused or kept failing after retries; the failures are returned to be reported).
 */
export async function readQueueSizes(ctx: JobContext, apps: readonly AppRef[]): Promise<{ sizes: Array<number | null>; failures: PlatformError[] }> {
  const failures: PlatformError[] = [];
  const sizes = await mapLimit(apps, QUEUE_CONCURRENCY, async (a) => {
    try {
      const q = await ctx.platform.getJson(appPath(a.owner, a.name, 'queue'), { schema: QueueResponse, ctx: ctx.call });
      return q.queue_size;
    } catch (err) {
      if (ctx.signal.aborted || !isPlatformError(err) || err.type === 'aborted') throw err;
      failures.push(err);
      return null;
    }
  });
  return { sizes, failures };
}

/**
 * Lists the apps (GET /v1/serverless/apps?expand=endpoints) and stores the latest state per app in `apps` (the
 * listing's queue_size; the queue job reads each app's queue, once, into queue_samples) and its endpoint ids in
 * `app_endpoints`. Apps and endpoints no longer listed
 * get tombstones, so the tables' FINAL state is the listing of this run.
 */
export async function collectApps(ctx: JobContext): Promise<AppsResult> {
  const version = nextVersionMs();
  const collectedAt = toDateTime64(Date.now());
  const observedAt = toDateTime64(ctx.now());
  const rejects = collectorRejects('apps');
  const { apps: listed, invalid } = await fetchAppsListing(ctx);
  for (const bad of invalid) rejects.add(bad.raw, bad.reason);

  const appRows: AppRow[] = listed.map((a) => appRow(a, { version, collectedAt, observedAt }));
  const endpointRows: AppEndpointRow[] = listed.flatMap((a) =>
    a.endpoints.map((id) => ({
      owner: a.owner,
      name: a.name,
      endpoint_id: id,
      route: routeOf(a, id),
      version,
      is_deleted: 0 as const,
      collected_at: collectedAt,
    })),
  );

  // Apps (and endpoints) stored earlier that this listing no longer has. An app whose record was malformed
  // this time is not taken for gone.
  const malformedIds = new Set(
    invalid.map((b) => (b.raw && typeof b.raw === 'object' ? (b.raw as { endpoint_id?: unknown }).endpoint_id : undefined)).filter(
      (id): id is string => typeof id === 'string',
    ),
  );
  const listedKeys = new Set(listed.map((a) => `${a.owner}/${a.name}`));
  const gone = (owner: string, name: string, endpointId: string): boolean =>
    !listedKeys.has(`${owner}/${name}`) && !malformedIds.has(endpointId) && !malformedIds.has(`${owner}/${name}`);
  const appTombstones: AppRow[] = (await liveAppKeys(ctx.runtime.store, {}))
    .filter((k) => gone(k.owner, k.name, k.endpoint_id))
    .map((k) => tombstoneApp(k, { version, collectedAt, observedAt }));
  const seenEndpoints = new Set(endpointRows.map((r) => `${r.owner}/${r.name}|${r.endpoint_id}`));
  const endpointTombstones: AppEndpointRow[] = (await currentAppEndpoints(ctx.runtime.store, {}))
    .filter((k) => !seenEndpoints.has(`${k.owner}/${k.name}|${k.endpoint_id}`) && !malformedIds.has(`${k.owner}/${k.name}`))
    .map((k) => ({ ...k, version, is_deleted: 1 as const, collected_at: collectedAt }));

  await commitRows(
    ctx,
    [
      tableWrite(apps, [...appRows, ...appTombstones]),
      tableWrite(appEndpoints, [...endpointRows, ...endpointTombstones]),
    ],
    rejects,
    { apps: listed.length },
  );
  return {
    apps: appRows.length,
    endpoints: endpointRows.length,
    tombstones: appTombstones.length + endpointTombstones.length,
    rejected: invalid.length,
  };
}

function routeOf(a: ListedApp, endpointId: string): string | null {
  if (endpointId === a.endpoint_id) return null;
  const prefix = `${a.endpoint_id}/`;
  if (endpointId.startsWith(prefix)) return endpointId.slice(prefix.length);
  return splitEndpointId(endpointId)?.route ?? null;
}

interface Stamp {
  version: number;
  collectedAt: string;
  observedAt: string;
}

function appRow(a: ListedApp, s: Stamp): AppRow {
  const app = a.app;
  const listedQueue = app.queue_size ?? null;
  return {
    owner: a.owner,
    name: a.name,
    endpoint_id: a.endpoint_id,
    app_id: typeof app.app_id === 'string' ? app.app_id : null,
    environment: app.environment ?? null,
    machine_type: app.machine_type ?? null,
    machine_types: app.machine_types ?? (app.machine_type ? [app.machine_type] : []),
    auth_mode: app.auth_mode ?? null,
    keep_alive: app.keep_alive ?? null,
    min_concurrency: app.min_concurrency ?? null,
    max_concurrency: app.max_concurrency ?? null,
    request_timeout: app.request_timeout ?? null,
    startup_timeout: app.startup_timeout ?? null,
    valid_regions: app.valid_regions ?? [],
    updated_at: isoToDateTime64(app.updated_at),
    active_runners: app.active_runners ?? null,
    queue_size: listedQueue,
    queue_size_source: listedQueue !== null ? 'listing' : '',
    observed_at: s.observedAt,
    raw: JSON.stringify(a.raw),
    version: s.version,
    is_deleted: 0,
    collected_at: s.collectedAt,
  };
}

function tombstoneApp(k: { owner: string; name: string; endpoint_id: string }, s: Stamp): AppRow {
  return {
    ...k,
    app_id: null,
    environment: null,
    machine_type: null,
    machine_types: [],
    auth_mode: null,
    keep_alive: null,
    min_concurrency: null,
    max_concurrency: null,
    request_timeout: null,
    startup_timeout: null,
    valid_regions: [],
    updated_at: null,
    active_runners: null,
    queue_size: null,
    queue_size_source: '',
    observed_at: s.observedAt,
    raw: '',
    version: s.version,
    is_deleted: 1,
    collected_at: s.collectedAt,
  };
}
