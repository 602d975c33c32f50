import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { JobContext } from './job.js';
import { App, platformPaths } from '../platform/index.js';
import { currentAppEndpoints } from '../store/tables/app-endpoints.js';
import { currentApps } from '../store/tables/apps.js';

// Which apps and endpoints the collectors work on: ENDPOINT_IDS when set, else what the apps job stored
// (latest listing), else (nothing stored yet: a first run) the apps listing itself.

export interface AppRef {
  owner: string;
  name: string;
  /** The app's own endpoint id, `owner/name`. */
  endpoint_id: string;
}

/** The listing's envelope, loose: each app is validated on its own by the apps collector. */
export const AppsListing = z.looseObject({ apps: z.array(z.unknown()) });

/** An app as listed, with owner and name filled in from its endpoint id when the platform leaves them out. */
export interface ListedApp extends AppRef {
  app: App;
  raw: unknown;
  /** Route-level endpoint ids (with expand=endpoints); the app's own id when none are given. */
  endpoints: string[];
}

/** Splits `owner/name[/route]`; null when the id does not have that shape. */
export function splitEndpointId(id: string): { owner: string; name: string; route: string | null } | null {
  const parts = id.split('/');
  if (parts.length < 2 || parts[0] === '' || parts[1] === '') return null;
  return { owner: parts[0], name: parts[1], route: parts.length > 2 ? parts.slice(2).join('/') : null };
}

/**
 * GET /v1/serverless/apps?expand=endpoints, each app validated on its own. Apps that do not fit come back in
 * `invalid` with the reason (the apps collector stores them in ingest_rejects; readers of the list skip them).
 */
export async function fetchAppsListing(
  ctx: JobContext,
): Promise<{ apps: ListedApp[]; invalid: Array<{ raw: unknown; reason: string }> }> {
  const listing = await ctx.platform.getJson(platformPaths.apps, {
    query: { expand: 'endpoints' },
    schema: AppsListing,
    ctx: ctx.call,
  });
  const apps: ListedApp[] = [];
  const invalid: Array<{ raw: unknown; reason: string }> = [];
  for (const raw of listing.apps) {
    const parsed = App.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      invalid.push({ raw, reason: `${issue.path.join('.') || '(app)'}: ${issue.message}` });
      continue;
    }
    const app = parsed.data;
    const split = splitEndpointId(app.endpoint_id);
    const owner = app.owner ?? split?.owner;
    const name = app.name ?? split?.name;
    if (!owner || !name) {
      invalid.push({ raw, reason: `endpoint_id ${JSON.stringify(app.endpoint_id)}: no owner/name, and none given` });
      continue;
    }
    const endpoints = [...new Set([app.endpoint_id, ...(app.endpoints ?? [])])];
    apps.push({ owner, name, endpoint_id: app.endpoint_id, app, raw, endpoints });
  }
  apps.sort((a, b) => (a.owner === b.owner ? cmp(a.name, b.name) : cmp(a.owner, b.owner)));
  return { apps, invalid };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Whether an endpoint id falls under one of the configured ids (itself, or a route of a configured app). */
function selectedBy(configured: readonly string[], endpointId: string): boolean {
  return configured.some((c) => c === endpointId || endpointId.startsWith(`${c}/`) || c.startsWith(`${endpointId}/`));
}

/**
 * The concrete endpoint ids to collect: ENDPOINT_IDS when set; else every endpoint of the apps the apps job
 * stored (latest listing); else, before the apps job has stored anything, the listing itself. An app's
 * endpoints come together, its own `owner/name` first.
 *
 * Note for callers: the platform reads a bare `owner/name` as "the app with all of its routes" (requests and
 * analytics alike), so the app's own id overlaps its route ids in what it returns.
 */
export async function listEndpoints(ctx: JobContext): Promise<string[]> {
  const shard = ctx.runtime.config.COLLECTOR_SHARD;
  const mine = (ids: string[]): string[] => [...new Set(ids)].filter((id) => inShard(shard, id));
  const configured = ctx.runtime.config.ENDPOINT_IDS;
  if (configured && configured.length > 0) return mine(configured);
  const stored = await currentAppEndpoints(ctx.runtime.store, {});
  if (stored.length > 0) return mine(stored.map((r) => r.endpoint_id));
  const { apps } = await fetchAppsListing(ctx);
  return mine(apps.flatMap((a) => a.endpoints));
}

/**
 * Whether this instance collects the app an endpoint id belongs to (COLLECTOR_SHARD "i/n"): the MD5 of the app's
 * `owner/name`, its last 8 bytes modulo n, as Prometheus's `hashmod` divides targets. An app's routes go together;
 * every instance computes the same split, so each app is collected by exactly one instance.
 */
export function inShard(shard: { index: number; count: number } | undefined, endpointId: string): boolean {
  if (!shard || shard.count <= 1) return true;
  const app = endpointId.split('/').slice(0, 2).join('/');
  return Number(createHash('md5').update(app).digest().readBigUInt64BE(8) % BigInt(shard.count)) === shard.index;
}

/**
 * The apps to collect per-app data for (runners, events, revisions, logs, queue): those the apps job stored, else
 * the listing. With ENDPOINT_IDS set, only the apps those ids belong to; with COLLECTOR_SHARD, only this shard's.
 */
export async function listApps(ctx: JobContext): Promise<AppRef[]> {
  const stored = await currentApps(ctx.runtime.store, { owners: [] });
  const all: AppRef[] =
    stored.length > 0
      ? stored.map((a) => ({ owner: a.owner, name: a.name, endpoint_id: a.endpoint_id }))
      : (await fetchAppsListing(ctx)).apps.map((a) => ({ owner: a.owner, name: a.name, endpoint_id: a.endpoint_id }));
  const configured = ctx.runtime.config.ENDPOINT_IDS;
  const shard = ctx.runtime.config.COLLECTOR_SHARD;
  return all.filter((a) => (!configured || configured.length === 0 || selectedBy(configured, a.endpoint_id)) && inShard(shard, a.endpoint_id));
}
