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
