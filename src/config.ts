import { z } from 'zod';
import { readFileSync } from 'node:fs';
import { IANAZone } from 'luxon';
import cron from 'node-cron';
import { closest } from './suggest.js';
import { parseRange } from './ip-ranges.js';

// One schema for the whole environment, parsed once (CONTRIBUTING.md rule 4).

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v));

const url = z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' });

const timezoneList = z
  .string()
  .transform((v) => v.split(',').map((s) => s.trim()).filter(Boolean))
  .pipe(
    z
      .array(z.string())
      .min(1, 'expected at least one IANA time zone')
      .superRefine((zones, ctx) => {
        // Which one, by position, and the zone it likely meant; never the value itself (ConfigError's rule).
        zones.forEach((tz, i) => {
          if (IANAZone.isValidZone(tz)) return;
          const near = closestZone(tz);
          ctx.addIssue({
            code: 'custom',
            message: `expected IANA time zone names (e.g. UTC,Europe/Berlin); the ${ordinal(i + 1)} of ${zones.length} is not one${near ? ` (did you mean ${near}?)` : ''}`,
          });
        });
      }),
  );

function ordinal(n: number): string {
  const suffix = n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${suffix}`;
}

/** The known zone closest to a misspelt one (same rule as the CLI's "did you mean", src/suggest.ts). */
function closestZone(typed: string): string | undefined {
  const zones = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return closest(typed, [...zones, 'UTC']);
}

const cronExpression = z
  .string()
  .refine((v) => cron.validate(v), { error: 'expected a cron expression (5 or 6 fields, e.g. "*/5 * * * *")' });

/**
 * Every scheduled job's schedule can be overridden with JOB_<NAME>_CRON. The names of jobs/index.ts's list, in its
 * order (test/jobs/job-list.test.ts checks); listed here because config must not import the jobs (an import cycle).
 */
const BudgetEntry = z.strictObject({
  scope: z.enum(['app', 'endpoint', 'api_key', 'product']),
  name: z.string().min(1),
  amount: z.union([z.number().nonnegative(), z.string().regex(/^\d+(\.\d+)?$/)]).transform(String),
  currency: z.string().regex(/^[A-Z]{3}$/).optional(),
});
export type BudgetEntry = z.output<typeof BudgetEntry>;
const BUDGETS_EXPECTED =
  'a JSON list of {"scope": "app|endpoint|api_key|product", "name": "...", "amount": 1500, "currency": "USD"} (currency optional: BUDGET_CURRENCY)';

function parseBudgetList(text: string): BudgetEntry[] | null {
  try {
    const parsed = z.array(BudgetEntry).safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

export const JOB_NAMES = ['apps', 'usage', 'models', 'requests', 'analytics', 'runners', 'events', 'revisions', 'logs', 'queue', 'runner-metrics', 'anomalies'] as const;
/** A job name as it appears in an environment variable: upper case, `-` as `_` (JOB_RUNNER_METRICS_CRON). */
type EnvName<N extends string> = N extends `${infer A}-${infer B}` ? `${A}_${EnvName<B>}` : N;
/** The variable that overrides a job's schedule: upper case, `-` as `_` (runner-metrics: JOB_RUNNER_METRICS_CRON). */
export function jobCronVariable(jobName: string): string {
  return `JOB_${jobName.toUpperCase().replace(/-/g, '_')}_CRON`;
}
const jobCronFields = Object.fromEntries(JOB_NAMES.map((n) => [jobCronVariable(n), cronExpression.optional()])) as Record<
  `JOB_${Uppercase<EnvName<(typeof JOB_NAMES)[number]>>}_CRON`,
  z.ZodOptional<typeof cronExpression>
>;

const csvList = z
  .string()
  .transform((v) => v.split(',').map((s) => s.trim()).filter(Boolean));

/**
 * The minimum lengths of secrets, one per kind (README, "Configuration"): a bearer token is compared whole, an
 * HMAC key must resist guessing offline.
 */
export const MIN_TOKEN_LENGTH = 16;
export const MIN_HMAC_SECRET_LENGTH = 32;
const token = z.string().min(MIN_TOKEN_LENGTH, `expected a token of at least ${MIN_TOKEN_LENGTH} characters`);

/** Hosts that only this machine reaches: the query API and /metrics answer there without a token. */
export function isLoopbackHost(host: string): boolean {
  return /^(127\.\d+\.\d+\.\d+|::1|localhost)$/.test(host);
}

export const ConfigSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: port.default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  // Host names requests may carry beyond loopback and HOST (`name` or `name:port`): others get 421 (DNS rebinding).
  ALLOWED_HOSTS: csvList.pipe(z.array(z.string().regex(/^(\[[0-9a-fA-F:.]+\]|[^[\]:/@\s]+)(:\d{1,5})?$/, 'expected comma-separated host names, each name or name:port'))).default([]),
  // Where clients reach the service (behind a load balancer): the OpenAPI document's server; default the listening address.
  PUBLIC_URL: z.string().regex(/^https?:\/\/[^/?#\s]+(\/[^?#\s]*)?$/, 'expected an http(s) URL such as https://tallyhouse.example.com').transform((v) => v.replace(/\/+$/, '')).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // One-shot CLI commands log to stderr at this level (they print their own progress and summary).
  CLI_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('warn'),
  DATA_DIR: z.string().min(1).default('./data'),

  CLICKHOUSE_URL: url.optional(),
  CLICKHOUSE_USER: z.string().default('default'),
  CLICKHOUSE_PASSWORD: z.string().default(''),
  CLICKHOUSE_DATABASE: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected a ClickHouse identifier (letters, digits, _)')
    .default('tallyhouse'),
  CLICKHOUSE_CLUSTER: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_.-]*$/, 'expected a cluster name from remote_servers')
    .optional(),
  // The embedded engine's bounds (README, "Sizing"): its whole memory, and each of its mark caches.
  EMBEDDED_MAX_MEMORY_BYTES: positiveInt.default(2 * 1024 * 1024 * 1024),
  EMBEDDED_CACHE_BYTES: positiveInt.default(64 * 1024 * 1024),
  // Heavy reads (jobs, large sessions, MCP batches, reports) the embedded engine is handed at once; interactive
  // reads (a query-API route, one MCP tool) never wait for a slot (src/store/read-lanes.ts, issue 49.4).
  EMBEDDED_HEAVY_READS_MAX: positiveInt.default(1),
  // Heavy reads of requests (not jobs) that may wait for a slot; beyond, the request answers 503 with Retry-After.
  EMBEDDED_HEAVY_READS_MAX_WAITING: positiveInt.default(256),
  // Query-API requests and MCP calls one client (token, or address without API_TOKENS) runs in the interactive lane
  // at once; its further ones read in the heavy lane (src/store/read-lanes.ts).
  API_INTERACTIVE_PER_CLIENT: positiveInt.default(4),
  CLICKHOUSE_CONNECT_TIMEOUT_MS: positiveInt.default(30_000),

  // 10,000: what a collector holds in memory per batch (two per sink); larger batches were no faster (bench collect).
  WRITER_MAX_ROWS: positiveInt.default(10_000),
  WRITER_MAX_BYTES: positiveInt.default(16 * 1024 * 1024),
  WRITER_FLUSH_INTERVAL_MS: positiveInt.default(1_000),
  SHUTDOWN_TIMEOUT_MS: positiveInt.default(10_000),

  // Platform APIs. With neither key set, Tallyhouse runs in demo mode against the built-in simulator.
  SVC_BASE_URL: url.default('https://api.svc.example'),
  SVC_API_KEY: optionalString,
  SVC_ADMIN_KEY: optionalString,
  // A store records the platform that filled it (sql/032); writing from another one (or the built-in simulator)
  // into it is refused unless this is set, for a deliberate move (src/jobs/store-platform.ts).
  ALLOW_PLATFORM_CHANGE: bool.default(false),
  // Platform calls in flight at once over every job of the process; backfill windows run concurrently up to it.
  PLATFORM_MAX_IN_FLIGHT: positiveInt.max(64, 'expected at most 64').default(4),
  // The most bytes one platform answer may have (issue 49.2); runner metrics, meta and the key set have tighter
  // limits of their own (src/platform/paths.ts). A longer answer is cut off and its call fails.
  PLATFORM_MAX_RESPONSE_BYTES: positiveInt.default(8 * 1024 * 1024),
  TIMEZONES: timezoneList.default(['UTC']),

  // Collectors (their schedules are JOB_<NAME>_CRON, read by jobs/).
  USAGE_APPS: csvList.optional(),
  USAGE_RECOLLECT_DAYS: z.coerce.number().int().min(0).max(62).default(3),
  // Hours after a day's end during which the platform may still bill into it (src/insights/finality.ts).
  LATE_BILLING_WINDOW_HOURS: z.coerce.number().int().min(0).max(24 * 62).default(48),
  // Run every job once at start-up (then on its schedule); needs JOBS_ENABLED.
  STARTUP_JOBS: bool.default(true),
  JOBS_ENABLED: bool.default(true),
  ...jobCronFields,

  // Requests, analytics and the other collectors (issue 5).
  ENDPOINT_IDS: csvList.optional(), // default: discovered by the apps job
  // This instance's share of the per-app collection when several instances collect: "i/n" (0 <= i < n).
  COLLECTOR_SHARD: z
    .string()
    .regex(/^\d+\/\d+$/, 'expected "i/n", this instance\'s number (from 0) and the number of instances, e.g. 0/2')
    .transform((v) => {
      const [index, count] = v.split('/').map(Number);
      return { index, count };
    })
    .refine((s) => s.count >= 1 && s.index < s.count, 'expected i below n (instances are numbered from 0), e.g. 1/2')
    .optional(),
  // `simulator`: jobs follow the virtual clock of a Tallyhouse simulator at SVC_BASE_URL (GET /_sim/clock with the
  // admin key), for a sandbox or soak whose clock runs fast or was moved; `wall` (default): the machine's clock.
  PLATFORM_CLOCK: z.enum(['wall', 'simulator']).default('wall'),
  MODEL_ENDPOINT_IDS: csvList.optional(), // model endpoints the models job collects prices and billing events of, beyond those seen in usage
  REQUESTS_RECOLLECT_HOURS: z.coerce.number().int().min(0).max(24 * 14).default(6),
  // Requests still unbilled after the re-collection window are fetched again at ages 1, 2, 4, 8... days, up to this
  // age (issue 50.3): past it, they are given up on and stay unbilled (the tallyhouse_requests_unbilled gauges show them).
  REQUESTS_UNBILLED_MAX_AGE_DAYS: z.coerce.number().int().min(1).max(400).default(35),
  PRICES_FILE: optionalString,
  ANALYTICS_TIMEFRAME: z.enum(['minute', 'hour', 'day']).default('hour'),
  // Days of history the anomaly baseline of a daily series uses at most (issue 46.1; 8-12 weeks): a longer one holds
  // more of a series' noise and seasons, a shorter one forgets a past incident sooner.
  ANOMALY_LOOKBACK_DAYS: z.coerce.number().int().min(28).max(84).default(56),
  // Anomaly findings posted as signed JSON (issue 32.2): off when unset. The secret signs each body (HMAC-SHA256).
  NOTIFY_WEBHOOK_URL: url.optional(),
  NOTIFY_WEBHOOK_SECRET: z.string().min(MIN_HMAC_SECRET_LENGTH, `expected a secret of at least ${MIN_HMAC_SECRET_LENGTH} characters`).optional(),
  NOTIFY_TIMEOUT_MS: positiveInt.default(10_000), // one delivery attempt: connect, headers and body
  NOTIFY_MAX_ATTEMPTS: positiveInt.default(5), // attempts per finding and job run (backoff NOTIFY_BACKOFF_MS, doubled each time); the next run tries again
  NOTIFY_BACKOFF_MS: positiveInt.default(1_000), // first retry delay, doubled on each further retry, at most 30 s
  NOTIFY_MAX_AGE_HOURS: positiveInt.default(48), // findings whose bucket starts earlier are not posted (a backfill does not flood the receiver)

  // Log drain (issue 7).
  LOG_DRAIN_SECRET: z
    .string()
    .min(MIN_HMAC_SECRET_LENGTH, `expected a secret of at least ${MIN_HMAC_SECRET_LENGTH} characters`)
    .optional(),
  LOG_DRAIN_TOKEN: token.optional(),
  // A secret path segment of the drain URL (POST /v1/drains/logs/<token>), checked on the request line before a byte
  // of the body is read: a request without it is answered at once and its connection closed, so it takes no read
  // slot. Recommended wherever the drain is reachable by others (and the only thing that tells the platform from an
  // attacker when every connection arrives from one proxy address). Logged as /v1/drains/logs/[redacted].
  LOG_DRAIN_URL_TOKEN: z
    .string()
    .regex(new RegExp(`^[A-Za-z0-9._~-]{${MIN_TOKEN_LENGTH},}$`), `expected a token of at least ${MIN_TOKEN_LENGTH} characters of A-Z a-z 0-9 . _ ~ - (it is a URL path segment)`)
    .optional(),
  LOG_DRAIN_MAX_BODY_BYTES: positiveInt.default(32 * 1024 * 1024),
  LOG_DRAIN_SPOOL_MAX_BYTES: positiveInt.default(1024 * 1024 * 1024),
  // Below this much free space on DATA_DIR's disk the drain answers 503 (and /readyz not ready) until space returns
  // and the spool's backlog is stored: the reserve the store and the replay write into (src/ingest/drain/disk-pressure.ts).
  DISK_MIN_FREE_BYTES: z.coerce.number().int().min(0).default(256 * 1024 * 1024),
  LOG_RETENTION_DAYS: positiveInt.default(30),

  // Webhooks.
  WEBHOOK_JWKS_URL: url.optional(), // default: SVC_BASE_URL + /.well-known/jwks.json
  // Refuse a webhook connection from outside the platform's webhook_ip_ranges (GET /v1/meta) before reading a byte;
  // the list is refetched every WEBHOOK_IP_RANGES_REFRESH_SECONDS and kept in DATA_DIR across restarts, said stale
  // (a warning, tallyhouse_webhook_ip_ranges_age_seconds) past WEBHOOK_IP_RANGES_STALE_SECONDS without a fetch.
  WEBHOOK_IP_RANGES_CHECK: bool.default(true),
  WEBHOOK_IP_RANGES_REFRESH_SECONDS: positiveInt.default(3600),
  WEBHOOK_IP_RANGES_STALE_SECONDS: positiveInt.default(7 * 24 * 3600),

  // Bounds on push bodies (drain, webhooks, Faro; src/ingest/body-budget.ts, CONTRIBUTING.md rule 21).
  // Whole request (headers and body) within this, else 408 and the connection closed: the HTTP server's
  // requestTimeout, so it holds for every request on PORT (only the push endpoints take bodies).
  PUSH_BODY_TIMEOUT_MS: positiveInt.default(60_000),
  // A body being read must bring at least this many bytes per window (the first window is its grace period),
  // else 408 and the connection closed: a sender trickling bytes cannot hold a read slot for the whole deadline.
  PUSH_BODY_MIN_BYTES_PER_SECOND: positiveInt.default(1024),
  PUSH_BODY_RATE_WINDOW_MS: positiveInt.default(10_000),
  // Bytes held by bodies whose signature needs the whole body (drain X-Svc-Signature, webhooks), over all of them
  // and per remote address; beyond, 503 with Retry-After. One body alone from its address may exceed the per-address
  // share (up to its body limit), so it bounds several bodies at once, not the largest one. Webhooks hold at most
  // half of the total: the rest stays for the drain, whose batches the platform does not retry.
  PUSH_UNVERIFIED_MAX_BYTES: positiveInt.default(64 * 1024 * 1024),
  PUSH_UNVERIFIED_MAX_BYTES_PER_ADDRESS: positiveInt.default(16 * 1024 * 1024),
  // Bodies read at once per endpoint, and per remote address on it (a few hostile connections cannot take
  // every slot). Drain: beyond either a body waits, unread, and a freed slot goes to the first waiter whose address
  // is under its share (the platform does not retry a failed batch); webhooks and Faro: 503 with Retry-After.
  LOG_DRAIN_MAX_BODIES_READING: positiveInt.default(4),
  LOG_DRAIN_MAX_BODIES_PER_ADDRESS: positiveInt.default(2),
  WEBHOOK_MAX_BODIES_READING: positiveInt.default(32),
  WEBHOOK_MAX_BODIES_PER_ADDRESS: positiveInt.default(16),
  FARO_MAX_BODIES_READING: positiveInt.default(16),
  FARO_MAX_BODIES_PER_ADDRESS: positiveInt.default(4),
  // Proven senders (src/ingest/body-budget.ts): an address that delivered a correctly signed drain batch or webhook
  // (or authenticated by bearer token) within PUSH_PROVEN_TTL_SECONDS reads in slots unproven senders cannot take;
  // unproven senders share *_UNPROVEN_MAX_BODIES_READING of the endpoint's slots. While unproven bodies wait for
  // that pool, an unproven body being read must bring PUSH_CONTENDED_MIN_BYTES_PER_SECOND on average (after a 1 s
  // grace) and be whole within PUSH_CONTENDED_MAX_BODY_MS, else it is dropped (408), the slowest first (0 turns
  // either off). A webhook or Faro body without a slot waits up to PUSH_SLOT_MAX_WAIT_MS for one (the contended rule
  // frees one meanwhile) before its 503.
  PUSH_PROVEN_TTL_SECONDS: positiveInt.default(24 * 3600),
  LOG_DRAIN_UNPROVEN_MAX_BODIES_READING: positiveInt.default(2),
  WEBHOOK_UNPROVEN_MAX_BODIES_READING: positiveInt.default(16),
  PUSH_CONTENDED_MIN_BYTES_PER_SECOND: z.coerce.number().int().min(0).default(64 * 1024),
  PUSH_CONTENDED_MAX_BODY_MS: z.coerce.number().int().min(0).default(5_000),
  PUSH_SLOT_MAX_WAIT_MS: z.coerce.number().int().min(0).default(3_000),
  // Reverse proxies whose X-Forwarded-For names the sender (addresses or CIDR ranges, comma-separated): the push
  // endpoints' per-address bounds then count the address it names. From any other peer the header is ignored.
  TRUSTED_PROXIES: csvList
    .superRefine((entries, ctx) => {
      entries.forEach((entry, i) => {
        if (!parseRange(entry)) ctx.addIssue({ code: 'custom', message: `expected comma-separated IP addresses or CIDR ranges (e.g. 10.0.0.0/8,::1); the ${ordinal(i + 1)} is not one` });
      });
    })
    .default([]),

  // Prometheus scraping and Tallyhouse's own metrics (issue 6).
  SCRAPE_TARGETS: z.string().optional(), // JSON list; parsed by src/collectors/scrape.ts
  // Also scrape Tallyhouse's own /metrics into the store (job "tallyhouse"), for the pipeline-health dashboard.
  SCRAPE_SELF: bool.default(true),
  SCRAPE_SELF_INTERVAL: z.string().regex(/^\d+(ms|s|m)$/, 'expected a duration like 15s or 1m').default('30s'),
  // Series remembered per scrape target (about 200 bytes each) so that unchanged ones are not written again; past
  // it the least recently seen are forgotten (and written again if they come back).
  SCRAPE_SERIES_CACHE_MAX: positiveInt.default(50_000),
  // A path on SVC_BASE_URL, never another host: the platform key goes with the request ("//host/x" is a URL).
  SVC_METRICS_PATH: z
    .string()
    .regex(/^\/(?![\/\\])[^\s?#\\]*$/, 'expected a path on SVC_BASE_URL starting with a single /, e.g. /metrics')
    .default('/metrics'), // or /v1/serverless/metrics
  METRICS_RETENTION_DAYS: positiveInt.default(30),
  METRICS_MAX_APPS: positiveInt.default(200),
  // Monthly budgets per app, exported as tallyhouse_app_budget for the budget alert: {"app-name": 1500, ...}
  // in the usage currency (USD unless the platform bills otherwise).
  APP_BUDGETS: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return {};
      try {
        const parsed = z.record(z.string(), z.number().nonnegative()).safeParse(JSON.parse(v));
        if (parsed.success) return parsed.data;
      } catch {
        // fall through
      }
      ctx.addIssue({ code: 'custom', message: 'expected a JSON object of app name to a non-negative number, e.g. {"my-app": 1500}' });
      return z.NEVER;
    }),
  BUDGET_CURRENCY: z.string().regex(/^[A-Z]{3}$/, 'expected a currency code like USD').default('USD'),
  // Monthly budgets with forecasts (GET /api/v1/budgets): a JSON list in BUDGETS, or in the file BUDGETS_FILE;
  // APP_BUDGETS folds in as app budgets in BUDGET_CURRENCY.
  BUDGETS: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return [];
      const parsed = parseBudgetList(v);
      if (parsed) return parsed;
      ctx.addIssue({ code: 'custom', message: BUDGETS_EXPECTED });
      return z.NEVER;
    }),
  BUDGETS_FILE: z
    .string()
    .optional()
    .transform((path, ctx) => {
      if (path === undefined) return [];
      let text: string;
      try {
        text = readFileSync(path, 'utf8');
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: `expected a readable file (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})` });
        return z.NEVER;
      }
      const parsed = parseBudgetList(text);
      if (parsed) return parsed;
      ctx.addIssue({ code: 'custom', message: `expected the file to hold ${BUDGETS_EXPECTED}` });
      return z.NEVER;
    }),

  // Query API.
  // Per-query limits of the query API (it reads as a read-only user would) and the longest range a route answers.
  API_QUERY_TIMEOUT_SECONDS: positiveInt.default(30),
  API_QUERY_MAX_MEMORY_BYTES: positiveInt.default(2 * 1024 ** 3),
  API_QUERY_MAX_RESULT_ROWS: positiveInt.default(1_000_000),
  API_MAX_RANGE_DAYS: positiveInt.default(400),
  // Right-sizing: VRAM headroom over an app's observed peak that a cheaper machine must still offer (percent).
  // Share of an app's requests (with a known outcome) failing with runner_scheduling_failure from which
  // /recommendations advises raising max_concurrency (issue 50.7).
  SCHEDULING_FAILURE_HINT_PERCENT: z.coerce.number().min(0, 'expected a percent from 0 to 100').max(100, 'expected a percent from 0 to 100').default(1),
  RIGHTSIZING_VRAM_MARGIN_PERCENT: z.coerce.number().min(0, 'expected a percent from 0 to 1000').max(1000, 'expected a percent from 0 to 1000').default(20),
  // The FOCUS export's BillingAccountId/Name (the platform account the invoice is for) and provider name.
  FOCUS_BILLING_ACCOUNT_ID: z.string().min(1).default('svc-account'),
  FOCUS_BILLING_ACCOUNT_NAME: z.string().min(1).optional(),
  FOCUS_PROVIDER_NAME: z.string().min(1).default('Svc'),
  API_LOGS_MAX_RANGE_DAYS: positiveInt.default(31),
  // GET /sessions/:id: Faro items, distinct requests and log lines per request it answers with (beyond: truncated, said so).
  API_SESSION_MAX_ITEMS: positiveInt.default(5000),
  API_SESSION_MAX_REQUESTS: positiveInt.default(100),
  API_SESSION_MAX_LOG_LINES: positiveInt.default(20),
  // GET /logs: a page stops at this many stored bytes of its lines (or at limit rows); the cursor carries on.
  API_LOGS_MAX_PAGE_BYTES: positiveInt.default(8 * 1024 * 1024),
  // GET /logs/stream: streams at once, per token (per remote address without API_TOKENS), and the bytes a client may
  // leave unread in the service's buffer before it is disconnected (counted as slow).
  LOG_STREAM_MAX_CLIENTS: positiveInt.default(200),
  // MCP server (POST /mcp, tallyhouse mcp): rows, lines or items one tool answer may hold; over it, a tool error.
  MCP_MAX_ROWS: positiveInt.default(1000),
  // GET /mcp event streams held open at once, overall (503 beyond) and per token, or per remote address without
  // API_TOKENS (429 beyond): each holds a server, a transport and a socket (~240 KB). A POST /mcp JSON-RPC batch
  // holds at most MCP_MAX_BATCH_MESSAGES messages (400 beyond, before any tool runs): with MCP_MAX_ROWS per tool
  // answer, that bounds the rows one request can ask for.
  MCP_MAX_STREAMS: positiveInt.default(32),
  MCP_MAX_STREAMS_PER_CLIENT: positiveInt.default(4),
  MCP_MAX_BATCH_MESSAGES: positiveInt.default(8),
  // Bytes of tool answers one POST /mcp may carry, over all the calls of a batch (a tool error beyond it).
  MCP_MAX_RESPONSE_BYTES: positiveInt.default(4 * 1024 * 1024),
  LOG_STREAM_MAX_PER_CLIENT: positiveInt.default(10),
  LOG_STREAM_MAX_BUFFER_BYTES: positiveInt.default(1024 * 1024),
  API_TOKENS: csvList
    .pipe(z.array(z.string().min(MIN_TOKEN_LENGTH, `expected comma-separated tokens of at least ${MIN_TOKEN_LENGTH} characters each`)))
    .optional(),
  // Grafana Faro receiver (POST /v1/faro/collect): `app=key` pairs, one key per front-end app; off when unset.
  FARO_APP_KEYS: csvList
    .pipe(
      z.array(
        z.string().regex(new RegExp(`^[A-Za-z0-9._-]+=.{${MIN_TOKEN_LENGTH},}$`), `expected comma-separated app=key pairs, each key of at least ${MIN_TOKEN_LENGTH} characters`),
      ),
    )
    .transform((pairs) => new Map(pairs.map((p) => [p.slice(p.indexOf('=') + 1), p.slice(0, p.indexOf('='))] as const)))
    .optional(),
  // Browser origins that may post Faro payloads (CORS); none when unset (same-origin and server-side senders only).
  FARO_ALLOWED_ORIGINS: csvList.pipe(z.array(z.string().regex(/^https?:\/\/[^/]+$/, 'expected comma-separated origins like https://app.example.com'))).default([]),
  FARO_MAX_BODY_BYTES: positiveInt.default(5 * 1024 * 1024),
  // Payloads accepted per second per app key (a burst of the same size); beyond it 429 with Retry-After.
  FARO_RATE_LIMIT_PER_SECOND: positiveInt.default(50),
  // Days Faro items are kept (the faro_items TTL, applied at start); an item stamped earlier is refused at ingest.
  FARO_RETENTION_DAYS: positiveInt.default(90),
  // Platform request ids one front-end session may name (the key is public); items past it are stored without one.
  FARO_SESSION_MAX_REQUEST_IDS: positiveInt.default(200),
  // When set, GET /metrics (which carries per-app cost) needs `Authorization: Bearer <METRICS_TOKEN>`; required
  // when HOST is not a loopback address.
  METRICS_TOKEN: token.optional(),
});

export type Config = Readonly<z.output<typeof ConfigSchema>>;

export class ConfigError extends Error {
  constructor(readonly problems: ReadonlyArray<{ variable: string; expected: string }>) {
    super(
      `invalid configuration: ${problems.map((p) => `${p.variable}: ${p.expected}`).join('; ')}`,
    );
    this.name = 'ConfigError';
  }
}

/**
 * Variables whose old names collide with ones shells and platforms set for themselves (an exported HOST, a PaaS's
 * PORT): read as TALLYHOUSE_<name>. The old name is still read for a release when the new one is unset, with a
 * deprecation line (deprecatedVariables); when both are set the new one wins.
 */
export const RENAMED_VARIABLES = { HOST: 'TALLYHOUSE_HOST', PORT: 'TALLYHOUSE_PORT' } as const;

/** One line per old name read from `env` in place of its TALLYHOUSE_ name. */
export function deprecatedVariables(env: Record<string, string | undefined> = process.env): string[] {
  return Object.entries(RENAMED_VARIABLES)
    .filter(([old, now]) => (env[old] ?? '') !== '' && (env[now] ?? '') === '')
    .map(([old, now]) => `tallyhouse: ${old} is deprecated (shells set it for themselves): set ${now} instead; ${old} is read until the next release`);
}

/** Parses an environment; throws a ConfigError naming every bad variable (never its value: it may be a secret). */
export function parseConfig(env: Record<string, string | undefined> = process.env): Config {
  // An empty variable means "unset", as shells and compose files commonly produce them.
  const cleaned: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v !== '') cleaned[k] = v;
  for (const [old, now] of Object.entries(RENAMED_VARIABLES)) {
    // The schema keeps the short key; the new name wins, the old one stands in for it until the next release.
    if (cleaned[now] !== undefined) cleaned[old] = cleaned[now];
    delete cleaned[now];
  }
  const result = ConfigSchema.safeParse(cleaned);
  if (!result.success) {
    const byVariable = new Map<string, string>();
    for (const issue of result.error.issues) {
      const variable = String(issue.path[0] ?? '(environment)');
      if (!byVariable.has(variable)) byVariable.set(variable, describeIssue(issue));
    }
    throw new ConfigError([...byVariable].map(([variable, expected]) => ({ variable, expected })));
  }
  if (result.data.NOTIFY_WEBHOOK_URL && !result.data.NOTIFY_WEBHOOK_SECRET) {
    throw new ConfigError([{ variable: 'NOTIFY_WEBHOOK_SECRET', expected: `a secret of at least ${MIN_HMAC_SECRET_LENGTH} characters (NOTIFY_WEBHOOK_URL is set: notifications are signed)` }]);
  }
  // A month's last day is re-collected until USAGE_RECOLLECT_DAYS days after it (src/collectors/usage.ts,
  // scheduledWindow) and is final only after a collection made once LATE_BILLING_WINDOW_HOURS have passed after its
  // end (src/insights/finality.ts): unless the late-billing window ends inside the re-collection window, a month's
  // last days stay provisional for ever (issue 44.4).
  const { USAGE_RECOLLECT_DAYS: recollectDays, LATE_BILLING_WINDOW_HOURS: windowHours } = result.data;
  if (windowHours >= 24 * recollectDays) {
    throw new ConfigError([
      {
        variable: 'USAGE_RECOLLECT_DAYS / LATE_BILLING_WINDOW_HOURS',
        expected: `a re-collection window longer than the late-billing window (LATE_BILLING_WINDOW_HOURS ${windowHours} < 24 × USAGE_RECOLLECT_DAYS ${recollectDays}), else a month's last days are never collected after their late-billing window and stay provisional for ever: raise USAGE_RECOLLECT_DAYS to ${Math.floor(windowHours / 24) + 1} or lower LATE_BILLING_WINDOW_HOURS below ${24 * recollectDays}`,
      },
    ]);
  }
  return Object.freeze(result.data);
}

function describeIssue(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return issue.expected === 'number' ? 'expected a number' : `expected ${issue.expected}`;
    case 'too_small':
      // A schema's own message (a secret's minimum length) says more than the bare bound.
      return issue.message && !issue.message.startsWith('Too small') ? issue.message : `expected a value >= ${String(issue.minimum)}`;
    case 'too_big':
      return `expected a value <= ${String(issue.maximum)}`;
    case 'invalid_value':
      return `expected one of ${issue.values.map((v) => String(v)).join(', ')}`;
    default:
      return issue.message;
  }
}

let cached: Config | undefined;

/** The process configuration, parsed once on first use. */
export function getConfig(): Config {
  if (cached === undefined) {
    cached = parseConfig(process.env);
    for (const line of deprecatedVariables(process.env)) process.stderr.write(`${line}\n`);
  }
  return cached;
}

/** For tests and the CLI: replace the cached configuration. */
export function setConfig(config: Config): void {
  cached = config;
}

export function isDemoMode(config: Config): boolean {
  return config.SVC_API_KEY === undefined && config.SVC_ADMIN_KEY === undefined;
}
