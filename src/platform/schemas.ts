import { z } from 'zod';

// Response schemas of the Platform API (spec + platform-notes.md). Every object is a looseObject: unknown
// fields survive parsing so collectors can store the raw record beside the extracted columns, and a new
// field never breaks a call. Fields the interface names are required; fields only the notes name, or that
// may be missing, are nullish (missing becomes undefined, the store maps it to NULL). Enum-like values
// (runner states, categories, levels) are plain strings so an unknown value passes through.
// Money and counts are JSON numbers as given; nothing here does arithmetic on them.

const nullableString = z.string().nullish();
const nullableNumber = z.number().nullish();

/** Envelope fields of every paginated list. The cursor is opaque: pass it back unchanged. */
export const pageFields = {
  next_cursor: z.string().nullish(),
  has_more: z.boolean().nullish(),
};

export const PageInfo = z.looseObject(pageFields);
export type PageInfo = z.infer<typeof PageInfo>;

// ---- metadata -------------------------------------------------------------------------------

export const MetaResponse = z.looseObject({
  webhook_ip_ranges: z.array(z.string()),
});
export type MetaResponse = z.infer<typeof MetaResponse>;

export const JwksKey = z.looseObject({
  x: z.string(),
  kty: nullableString,
  crv: nullableString,
  kid: nullableString,
});
export type JwksKey = z.infer<typeof JwksKey>;

export const Jwks = z.looseObject({
  keys: z.array(JwksKey),
});
export type Jwks = z.infer<typeof Jwks>;

// ---- usage (admin) ---------------------------------------------------------------------------

export const UsageRow = z.looseObject({
  app: nullableString,
  environment: nullableString,
  machine_type: z.string(),
  /** Always `second`: quantity is machine-seconds. */
  unit: z.string(),
  quantity: z.number(),
  unit_price: z.number(),
  /** 0-100. */
  percent_discount: nullableNumber,
  cost_subtotal: nullableNumber,
  cost_discount: nullableNumber,
  cost_total: nullableNumber,
  /** Net of discounts (= cost_total). */
  cost: z.number(),
  currency: z.string(),
  /** Surge and non-surge usage are separate rows: never collapse them. */
  is_surge: z.boolean(),
});
export type UsageRow = z.infer<typeof UsageRow>;

/**
 * A page of usage or analytics: the envelope only. The rows (UsageRow, AnalyticsRow) are validated one by one, so
 * one malformed row is rejected with its reason and never costs its page; a bucket's timestamp is ISO 8601 with
 * the offset of the requested timezone, e.g. 2026-03-29T00:00:00+01:00, checked by the collector.
 */
export const SeriesPage = z.looseObject({
  ...pageFields,
  time_series: z.array(z.looseObject({ bucket: z.unknown(), results: z.array(z.unknown()) })).nullish(),
  summary: z.array(z.unknown()).nullish(),
});
export type SeriesPage = z.infer<typeof SeriesPage>;

// Requests by endpoint: the requests collector checks each item field by field (its hot path, see
// src/collectors/requests.ts toRequestLine) rather than through a zod schema.

// ---- analytics (serverless and models) --------------------------------------------------------

export const ANALYTICS_METRIC_NAMES = [
  'request_count',
  'success_count',
  'user_error_count',
  'error_count',
  'startup_error_count',
  'connection_error_count',
  'timeout_error_count',
  'runtime_error_count',
  'cold_boot_count',
  'p50_cold_boot_duration',
  'p75_cold_boot_duration',
  'p90_cold_boot_duration',
  'p25_duration',
  'p50_duration',
  'p75_duration',
  'p90_duration',
  'p95_duration',
  'p99_duration',
  'p50_prepare_duration',
  'p75_prepare_duration',
  'p90_prepare_duration',
  'p95_prepare_duration',
  'p99_prepare_duration',
  'total_billable_duration',
] as const;
export type AnalyticsMetricName = (typeof ANALYTICS_METRIC_NAMES)[number];

// A metric not asked for, or with no data, is absent or null; one not listed here passes through unchecked.
// Counts (`*_count`) are whole numbers.
const metricFields = Object.fromEntries(
  ANALYTICS_METRIC_NAMES.map((name) => [name, name.endsWith('_count') ? z.number().int().nonnegative().nullish() : nullableNumber]),
) as Record<AnalyticsMetricName, typeof nullableNumber>;

/** One row of an analytics page (time series or summary). */
export const AnalyticsRow = z.looseObject({
  endpoint_id: z.string(),
  ...metricFields,
});
export type AnalyticsRow = z.infer<typeof AnalyticsRow>;

// ---- apps ------------------------------------------------------------------------------------

export const App = z.looseObject({
  endpoint_id: z.string(),
  owner: nullableString,
  name: nullableString,
  environment: nullableString,
  machine_type: nullableString,
  auth_mode: nullableString,
  keep_alive: nullableNumber,
  min_concurrency: nullableNumber,
  max_concurrency: nullableNumber,
  request_timeout: nullableNumber,
  startup_timeout: nullableNumber,
  valid_regions: z.array(z.string()).nullish(),
  updated_at: nullableString,
  active_runners: nullableNumber,
  queue_size: nullableNumber,
  machine_types: z.array(z.string()).nullish(),
  /** Route-level endpoint ids, with expand=endpoints. */
  endpoints: z.array(z.string()).nullish(),
});
export type App = z.infer<typeof App>;

/** GET /v1/serverless/apps: not paginated. */
export const AppsResponse = z.looseObject({
  apps: z.array(App),
});
export type AppsResponse = z.infer<typeof AppsResponse>;

export const QueueResponse = z.looseObject({
  queue_size: z.number(),
});
export type QueueResponse = z.infer<typeof QueueResponse>;

export const RunnersHistoryPoint = z.looseObject({
  timestamp: z.string(),
  running: nullableNumber,
  idle: nullableNumber,
  pending: nullableNumber,
  draining: nullableNumber,
});
export type RunnersHistoryPoint = z.infer<typeof RunnersHistoryPoint>;

/** Oldest first. */
export const RunnersHistoryResponse = z.looseObject({
  endpoint_id: nullableString,
  timeframe: nullableString,
  aggregation: nullableString,
  history: z.array(RunnersHistoryPoint),
});
export type RunnersHistoryResponse = z.infer<typeof RunnersHistoryResponse>;

export const AppEvent = z.looseObject({
  event_id: z.string(),
  category: z.string(),
  created_at: z.string(),
  /** Free-form JSON. */
  payload: z.unknown(),
});
export type AppEvent = z.infer<typeof AppEvent>;

/** Newest first. */
export const EventsPage = z.looseObject({
  ...pageFields,
  endpoint_id: nullableString,
  events: z.array(AppEvent),
});
export type EventsPage = z.infer<typeof EventsPage>;

export const Revision = z.looseObject({
  revision_id: z.string(),
  created_at: z.string(),
  is_current: z.boolean().nullish(),
  message: nullableString,
  annotations: z.unknown(),
  status: nullableString,
  deployed_by: nullableString,
});
export type Revision = z.infer<typeof Revision>;

export const RevisionsPage = z.looseObject({
  ...pageFields,
  revisions: z.array(Revision),
});
export type RevisionsPage = z.infer<typeof RevisionsPage>;

// ---- logs ------------------------------------------------------------------------------------

export const LogRecord = z.looseObject({
  timestamp: z.string(),
  level: nullableString,
  message: nullableString,
  app: nullableString,
  revision: nullableString,
  labels: z.unknown(),
});
export type LogRecord = z.infer<typeof LogRecord>;

/** POST /v1/serverless/logs/history. */
export const LogsHistoryPage = z.looseObject({
  ...pageFields,
  items: z.array(LogRecord),
});
export type LogsHistoryPage = z.infer<typeof LogsHistoryPage>;

// ---- models ------------------------------------------------------------------------------------

// The interface does not show this response; the production platform answers
// {models: [{endpoint_id, metadata: {...}}], next_cursor, has_more}.
export const Model = z.looseObject({
  endpoint_id: z.string(),
  metadata: z.looseObject({}).nullish(),
});
export type Model = z.infer<typeof Model>;

export const ModelsPage = z.looseObject({
  ...pageFields,
  models: z.array(Model),
});
export type ModelsPage = z.infer<typeof ModelsPage>;

// ---- model APIs: usage, pricing, billing events (platform-notes.md, "Model APIs") --------------------------

/** A model usage row; older rows carry only `cost` (no price or discount fields): both are accepted. */
export const ModelUsageRow = z.looseObject({
  endpoint_id: z.string(),
  unit: z.string(),
  quantity: z.number(),
  unit_price: nullableNumber,
  percent_discount: nullableNumber,
  cost_subtotal: nullableNumber,
  cost_discount: nullableNumber,
  cost_total: nullableNumber,
  cost: z.number(),
  currency: z.string(),
  auth_method: nullableString,
  auth_method_structured: z
    .looseObject({ detail: nullableString, api_key_id: nullableString, login_username: nullableString })
    .nullish(),
});
export type ModelUsageRow = z.infer<typeof ModelUsageRow>;

export const ModelPricesPage = z.looseObject({
  ...pageFields,
  prices: z.array(z.looseObject({ endpoint_id: z.string(), unit_price: z.number(), unit: z.string(), currency: z.string() })),
});
export type ModelPricesPage = z.infer<typeof ModelPricesPage>;

/** A page of billing events: the envelope; each event is checked on its own (ModelBillingEvent). */
export const ModelBillingEventsPage = z.looseObject({
  ...pageFields,
  billing_events: z.array(z.unknown()),
});

export const ModelBillingEvent = z.looseObject({
  request_id: z.string(),
  endpoint_id: z.string(),
  timestamp: z.string(),
  output_units: nullableNumber,
  unit_price: nullableNumber,
  percent_discount: nullableNumber,
  cost_subtotal: nullableNumber,
  cost_discount: nullableNumber,
  cost_total: nullableNumber,
  cost_estimate_nano_usd: nullableNumber,
});
export type ModelBillingEvent = z.infer<typeof ModelBillingEvent>;
