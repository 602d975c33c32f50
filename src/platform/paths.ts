import type { KeyScope } from './errors.js';

/** Platform API paths (relative to SVC_BASE_URL), so collectors do not spell them each time. */
export const platformPaths = {
  meta: '/v1/meta',
  models: '/v1/models',
  modelsUsage: '/v1/models/usage',
  modelsAnalytics: '/v1/models/analytics',
  modelsPricing: '/v1/models/pricing',
  modelsBillingEvents: '/v1/models/billing-events',
  serverlessUsage: '/v1/serverless/usage',
  serverlessAnalytics: '/v1/serverless/analytics',
  requestsByEndpoint: '/v1/serverless/requests/by-endpoint',
  apps: '/v1/serverless/apps',
  logsHistory: '/v1/serverless/logs/history',
  logsStream: '/v1/serverless/logs/stream',
  metrics: '/metrics',
  jwks: '/.well-known/jwks.json',
} as const;

export type AppResource = 'queue' | 'events' | 'revisions' | 'runners/history';

/** `/v1/serverless/apps/{owner}/{name}/<resource>` with owner and name escaped. */
export function appPath(owner: string, name: string, resource: AppResource): string {
  return `/v1/serverless/apps/${encodeURIComponent(owner)}/${encodeURIComponent(name)}/${resource}`;
}

// The endpoints the spec and notes name as ADMIN-scope; everything else takes an API-scope key.
const ADMIN_PATHS: ReadonlySet<string> = new Set([platformPaths.serverlessUsage, platformPaths.modelsUsage, platformPaths.modelsBillingEvents]);

/** The key scope a path needs when the caller does not say. */
export function scopeForPath(path: string): KeyScope {
  return ADMIN_PATHS.has(path) ? 'admin' : 'api';
}

/**
 * A path as a template (`/metrics/runners/{runner_id}`, `/v1/serverless/apps/{owner}/{name}/events`): the label of
 * per-endpoint metrics and log lines, so a runner id or an app name never becomes a label value of its own.
 */
export function endpointTemplate(path: string): string {
  const bare = path.split('?')[0];
  if (/^https?:\/\//i.test(bare)) return endpointTemplate(new URL(bare).pathname);
  if (bare.startsWith('/metrics/runners/')) return '/metrics/runners/{runner_id}';
  const app = /^\/v1\/serverless\/apps\/[^/]+\/[^/]+\/(.+)$/.exec(bare);
  if (app) return `/v1/serverless/apps/{owner}/{name}/${app[1]}`;
  return bare;
}

/**
 * PLATFORM_MAX_RESPONSE_BYTES' default: the largest answer read (a page of 10,000 billing events is about 4 MB). At
 * most PLATFORM_MAX_IN_FLIGHT (4) answers are read at once, so four endless answers together stay under 64 MB.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024;

/**
 * Tighter limits where the answer is small by nature (one runner's few gauges, the metadata's address list, a key
 * set), so a lying platform costs even less there. The general limit applies when it is lower.
 */
export const SMALL_RESPONSE_BYTES: Readonly<Record<string, number>> = {
  '/metrics/runners/{runner_id}': 1024 * 1024,
  [platformPaths.meta]: 256 * 1024,
  [platformPaths.jwks]: 256 * 1024,
};

/** An error answer is read for its classification only: beyond this its body is cut, never a reason to fail. */
export const ERROR_BODY_MAX_BYTES = 64 * 1024;
