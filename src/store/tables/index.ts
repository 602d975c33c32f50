import { z } from 'zod';
import { defineTable, type TableDef } from './table.js';
import { metricSeries, metricSamples, scrapes } from './metrics.js';
import { jobRuns } from './job-runs.js';
import { checkpoints } from './checkpoints.js';
import { usageBuckets } from './usage-buckets.js';
import { usageSummaries } from './usage-summaries.js';
import { apps } from './apps.js';
import { appEndpoints } from './app-endpoints.js';
import { analyticsBuckets } from './analytics-buckets.js';
import { runnerHistory } from './runner-history.js';
import { appEvents } from './app-events.js';
import { appRevisions } from './app-revisions.js';
import { requests } from './requests.js';
import { requestsDaily } from './requests-daily.js';
import { unitPrices } from './unit-prices.js';
import { logs } from './logs.js';
import { webhookDeliveries } from './webhook-deliveries.js';
import { webhookReceipts } from './webhook-receipts.js';
import { faroItems } from './faro-items.js';
import { queueSamples } from './queue-samples.js';
import { runnerMetrics } from './runner-metrics.js';
import { anomalies, anomalyNotifications } from './anomalies.js';
import { costDayCollections } from './cost-day-collections.js';
import { collectedRanges } from './collected-ranges.js';
import { storePlatform } from './store-platform.js';
import { modelBillingEvents, modelCatalogue, modelPrices, modelUsageBuckets, modelUsageSummaries } from './model-usage.js';

export const ingestRejects = defineTable(
  'ingest_rejects',
  z.object({
    rejected_at: z.string().optional(),
    source: z.string(),
    reason: z.string(),
    line: z.number().int().nullable(),
    batch_id: z.string(),
    raw: z.string(),
  }),
);

/** Every table the writer fills; a test checks each schema against DESCRIBE TABLE. */
export const allTables: TableDef<z.ZodObject>[] = [ingestRejects, jobRuns, checkpoints, usageBuckets, usageSummaries, apps, appEndpoints, analyticsBuckets, runnerHistory, appEvents, appRevisions, logs, webhookDeliveries, requests, requestsDaily, unitPrices, metricSeries, metricSamples, scrapes, modelUsageBuckets, modelUsageSummaries, modelCatalogue, modelPrices, modelBillingEvents, faroItems, queueSamples, runnerMetrics];
allTables.push(costDayCollections, anomalies, anomalyNotifications, collectedRanges, storePlatform, webhookReceipts);
