import type { JobDefinition } from '../src/jobs/job.js';
import { usageJob } from './usage.js';
import { appsJob } from './apps.js';
import { analyticsJob } from './analytics.js';
import { requestsJob } from './requests.js';

/** Every scheduled job, one file each. */
export const allJobs: JobDefinition[] = [usageJob, requestsJob, appsJob, analyticsJob];
