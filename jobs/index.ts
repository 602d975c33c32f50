import type { JobDefinition } from '../src/jobs/job.js';
import { usageJob } from './usage.js';
import { appsJob } from './apps.js';
import { analyticsJob } from './analytics.js';
import { runnersJob } from './runners.js';
import { eventsJob } from './events.js';
import { revisionsJob } from './revisions.js';
import { requestsJob } from './requests.js';

/** Every scheduled job, one file each. */
export const allJobs: JobDefinition[] = [usageJob, requestsJob, appsJob, analyticsJob, runnersJob, eventsJob, revisionsJob];
