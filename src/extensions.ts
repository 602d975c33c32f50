import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import type { Component, Runtime } from './service.js';
import { collectorsExtension } from './jobs/extension.js';
import { apiExtension } from './api/index.js';
import { analyticsRoutes } from './api/analytics-routes.js';
import { logsRoutes } from './api/logs-routes.js';
import { requestCostRoutes } from './api/request-cost-routes.js';
import { businessMetricsExtension } from './http/business-metrics.js';
import { allJobs } from '../jobs/index.js';

export type Extension = (rt: Runtime & { app: FastifyInstance }) => Promise<Component | void>;

/** What `serve` runs besides the health routes, in start order (stopped in reverse). */
export function serviceExtensions(_config: Config): Extension[] {
  return [businessMetricsExtension(), apiExtension([requestCostRoutes, analyticsRoutes, logsRoutes]), collectorsExtension(allJobs)];
}
