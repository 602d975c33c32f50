import type { JobDefinition } from '../src/jobs/job.js';
import { usageJob } from './usage.js';

/** Every scheduled job, one file each. */
export const allJobs: JobDefinition[] = [usageJob];
