import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { isDemoMode, type Config } from './config.js';
import type { Component, Runtime } from './service.js';
import { collectorsExtension, type DemoWiring } from './jobs/extension.js';
import { apiExtension } from './api/index.js';
import { analyticsRoutes } from './api/analytics-routes.js';
import { logsRoutes } from './api/logs-routes.js';
import { requestCostRoutes } from './api/request-cost-routes.js';
import { businessMetricsExtension } from './http/business-metrics.js';
import { logDrainExtension } from './ingest/drain.js';
import { webhookExtension } from './ingest/webhooks.js';
import { allJobs } from '../jobs/index.js';

export type Extension = (rt: Runtime & { app: FastifyInstance }) => Promise<Component | void>;

/** What `serve` runs besides the health routes, in start order (stopped in reverse). */
export function serviceExtensions(config: Config): Extension[] {
  // Demo mode: the in-process simulator pushes drain lines signed with this secret, and signs webhooks with keys
  // the receiver fetches from the simulator.
  const demo: DemoWiring = isDemoMode(config) ? { drainSecret: randomBytes(32).toString('hex') } : {};
  return [
    businessMetricsExtension(),
    apiExtension([requestCostRoutes, analyticsRoutes, logsRoutes]),
    logDrainExtension({ demoSecret: demo.drainSecret }),
    webhookExtension(demo.drainSecret ? { jwksUrl: () => `${demo.simUrl}/.well-known/jwks.json` } : {}),
    collectorsExtension(allJobs, demo),
  ];
}
