import type { JobDefinition } from '../src/collectors/job.js';
import { usageJob } from './usage.js';
import { appsJob } from './apps.js';
import { analyticsJob } from './analytics.js';
import { runnersJob } from './runners.js';
import { eventsJob } from './events.js';
import { revisionsJob } from './revisions.js';
import { requestsJob } from './requests.js';
import { modelsJob } from './models.js';
import { logsJob } from './logs.js';
import { queueJob } from './queue.js';
import { runnerMetricsJob } from './runner-metrics.js';
import { anomaliesJob } from './anomalies.js';

/**
 * Every scheduled job, one file each. The order is the demo start-up order (one after the other): apps first, since
 * it discovers the endpoints the later ones read. JOB_NAMES in src/config.ts lists the same names in this order.
 */
export const allJobs: JobDefinition[] = [appsJob, usageJob, modelsJob, requestsJob, analyticsJob, runnersJob, eventsJob, revisionsJob, logsJob, queueJob, runnerMetricsJob, anomaliesJob];
