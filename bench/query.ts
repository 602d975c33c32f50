// `npm run bench -- query [--apps 500] [--days 365] [--requests 10000000] [--calls 200] [--fresh] [--as-is]
//   [--usage-over in-process|http]`
//
// Seeds a store through the collectors from the in-process simulator (a year of daily usage for 500 apps and
// ~10M requests, kept under .bench-query/ and reused by later runs unless --fresh; the requests are mapped by the
// requests collector straight from the simulator's model, without its HTTP pages: seedRequests; the usage job pages the
// simulator's own handler in-process, inProcessUsagePlatform, or over HTTP with --usage-over http), then times the query API
// over HTTP: /cost, /reports/finance and /cost/requests, `--calls` calls each with varying ranges and groupings,
// and the same /cost/requests questions answered from the raw `requests` table (a zone outside TIMEZONES
// bypasses the daily rollup) for comparison. Goals: p99 < 250 ms for /cost and /reports/finance, < 500 ms for
// /cost/requests. Prints one JSON line.
//
// Timed in the store's steady state: once no merge is running, and with every month before the current one merged
// into one part, as the engine merges a settled month an hour after its last rows (sql/028; a store seeded just now
// would otherwise be timed as it is for an hour). --as-is times the store as it is (a store without migration 028).
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { DateTime } from 'luxon';
import { startSim } from '../src/sim/index.js';
import { parseConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { createRegistry } from '../src/metrics.js';
import { startService, type Service } from '../src/service.js';
import { apiExtension } from '../src/api/index.js';
import { requestCostRoutes } from '../src/api/request-cost-routes.js';
import { appendQuery, platformPaths, PlatformClient, type PaginateOptions } from '../src/platform/index.js';
import { Handlers } from '../src/sim/handlers.js';
import { Params } from '../src/sim/http-util.js';
import { DEFAULT_CACHE_LIMITS } from '../src/sim/caches.js';
import { Scheduler } from '../src/jobs/scheduler.js';
import { allJobs } from '../jobs/index.js';
import { consoleProgress } from '../src/progress.js';
import { parseJobArgs } from '../src/jobs/options.js';
import { SimModel } from '../src/sim/model.js';
import type { Endpoint } from '../src/sim/world.js';
import { HOUR_MS } from '../src/sim/time.js';
import { formatMilli } from '../src/sim/money.js';
import { coveringEndpointIds, nextCollected, RequestSink, toRequestLine } from '../src/collectors/requests.js';
import { currentAppEndpoints } from '../src/store/tables/app-endpoints.js';

const { values } = parseArgs({
  options: {
    apps: { type: 'string', default: '500' },
    days: { type: 'string', default: '365' },
    requests: { type: 'string', default: '10000000' },
    calls: { type: 'string', default: '200' },
    fresh: { type: 'boolean', default: false },
    'as-is': { type: 'boolean', default: false },
    'usage-over': { type: 'string', default: 'in-process' },
  },
});
if (values['usage-over'] !== 'in-process' && values['usage-over'] !== 'http') throw new Error(`--usage-over: expected in-process or http, got ${values['usage-over']}`);
const apps = Number(values.apps);
const days = Number(values.days);
const targetRequests = Number(values.requests);
const calls = Number(values.calls);
const NOW = '2026-11-21T12:00:00Z';
const dataDir = join(process.cwd(), '.bench-query', `apps${apps}-days${days}-req${targetRequests}`);
if (values.fresh) rmSync(dataDir, { recursive: true, force: true });
mkdirSync(dataDir, { recursive: true });
const marker = join(dataDir, 'seeded.json');
const now = DateTime.fromISO(NOW, { zone: 'utc' });

const config = parseConfig({ DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn', TIMEZONES: 'UTC', JOBS_ENABLED: 'false' });
const service = await startService(config, {
  logger: createLogger('warn'),
  registry: createRegistry({ defaultMetrics: false }),
  extensions: [apiExtension([requestCostRoutes])],
});

let seeded: {
  requests: number;
  usage_rows: number;
  seed_seconds: number;
  seed_phase_seconds?: Record<string, number>;
  usage_fingerprint?: Record<string, string>;
  billable_units_sum?: number;
  billed?: number;
};
if (existsSync(marker)) {
  seeded = JSON.parse(readFileSync(marker, 'utf8'));
} else {
  seeded = await seed(service);
  writeFileSync(marker, JSON.stringify(seeded));
}

// The whole months before the current one that the seeded days cover (12 at the default 365 days).
const months = Array.from({ length: Math.max(1, Math.min(12, Math.floor(days / 31))) }, (_, i) => now.startOf('month').minus({ months: i + 1 }));
const countOf = async (sql: string) =>
  Number((await (await service.store.client.query({ query: sql, format: 'JSONEachRow' })).json<{ n: string }>())[0].n);
if (!values['as-is']) {
  // What the engine does to each settled month of requests (sql/028), now.
  const settled = await (
    await service.store.client.query({
      query: `SELECT DISTINCT partition AS p FROM system.parts WHERE database = currentDatabase() AND table = 'requests' AND active
              AND partition < '${now.toFormat('yyyyMM')}' ORDER BY p`,
      format: 'JSONEachRow',
    })
  ).json<{ p: string }>();
  for (const { p } of settled) await service.store.client.command({ query: `OPTIMIZE TABLE requests PARTITION ${Number(p)} FINAL` });
}
// A migration's mutation (sql/029 builds an index of the parts written before it) counts as work in progress too.
const busy = async () =>
  (await countOf('SELECT count() AS n FROM system.merges')) + (await countOf('SELECT count() AS n FROM system.mutations WHERE database = currentDatabase() AND NOT is_done'));
while ((await busy()) > 0) await new Promise((r) => setTimeout(r, 500));
const requestParts = await countOf("SELECT count() AS n FROM system.parts WHERE database = currentDatabase() AND table = 'requests' AND active");
const requestPartitions = await countOf("SELECT uniqExact(partition) AS n FROM system.parts WHERE database = currentDatabase() AND table = 'requests' AND active");
const endpoints = (
  await (await service.store.client.query({ query: 'SELECT DISTINCT endpoint_id FROM requests_daily LIMIT 2000', format: 'JSONEachRow' })).json<{
    endpoint_id: string;
  }>()
).map((r) => r.endpoint_id);

const costPaths = (i: number) => {
  const m = months[i % months.length];
  const from = m.toISODate();
  const to = m.plus({ months: 1 }).toISODate();
  return [
    `/cost?from=${from}&to=${to}&group_by=app`,
    `/cost?from=${from}&to=${to}&group_by=day`,
    `/cost?from=${now.minus({ days: 365 }).toISODate()}&to=${now.toISODate()}&group_by=machine_type,month`,
    `/cost?from=${from}&to=${to}&group_by=app,surge&search=api`,
  ][i % 4];
};
const financePaths = (i: number) => `/reports/finance?month=${months[i % months.length].toFormat('yyyy-MM')}&timezone=UTC`;
const requestPaths = (timezone: string) => (i: number) => {
  const m = months[i % months.length];
  const from = m.toISODate();
  const to = m.plus({ months: 1 }).toISODate();
  const endpoint = encodeURIComponent(endpoints[i % Math.max(1, endpoints.length)] ?? 'none');
  return [
    `/cost/requests?from=${from}&to=${to}&timezone=${timezone}`,
    `/cost/requests?from=${now.minus({ days: 365 }).toISODate()}&to=${now.toISODate()}&timezone=${timezone}&endpoint_id=${endpoint}&group_by=day`,
    `/cost/requests?from=${m.plus({ days: 7 }).toISODate()}&to=${m.plus({ days: 14 }).toISODate()}&timezone=${timezone}&group_by=day`,
  ][i % 3];
};

// The machine's 1, 5 and 15-minute load averages as the timing starts and ends: p99 of 200 calls is their second
// slowest, so on a shared machine it follows the load.
const loadAtStart = loadavg().map(round);
const result = {
  bench: 'query',
  apps,
  days,
  requests: seeded.requests,
  billed_requests: seeded.billed,
  billable_units: seeded.billable_units_sum,
  usage_rows: seeded.usage_rows,
  seed_seconds: seeded.seed_seconds,
  seed_phase_seconds: seeded.seed_phase_seconds,
  settled_months_merged: !values['as-is'],
  request_parts: requestParts,
  request_partitions: requestPartitions,
  calls,
  cost: await time(costPaths),
  finance: await time(financePaths),
  cost_requests: await time(requestPaths('UTC'), 'rollup'),
  cost_requests_raw: await time(requestPaths('Etc/UTC'), 'requests'),
  goals_ms: { cost_p99: 250, finance_p99: 250, cost_requests_p99: 500 },
  load_average: { start: loadAtStart, end: loadavg().map(round) },
};
const r = result as typeof result & { cost_requests_raw_over_rollup_p50: number };
r.cost_requests_raw_over_rollup_p50 = round(result.cost_requests_raw.p50_ms / result.cost_requests.p50_ms);
await service.close();
process.stdout.write(`${JSON.stringify(r)}\n`);

async function time(path: (i: number) => string, source?: string) {
  const samples: number[] = [];
  for (let i = 0; i < calls + 5; i++) {
    const started = performance.now();
    const res = await fetch(`${service.url}/api/v1${path(i)}`);
    const body = await res.text();
    const ms = performance.now() - started;
    if (res.status !== 200) throw new Error(`${path(i)} answered ${res.status}: ${body.slice(0, 300)}`);
    if (source && JSON.parse(body).source !== source) throw new Error(`${path(i)} was answered from ${JSON.parse(body).source}, not ${source}`);
    if (i >= 5) samples.push(ms); // the first calls warm caches
  }
  samples.sort((a, b) => a - b);
  const pick = (p: number) => round(samples[Math.min(samples.length - 1, Math.ceil(p * samples.length) - 1)]);
  return { p50_ms: pick(0.5), p99_ms: pick(0.99), max_ms: round(samples[samples.length - 1]) };
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}

/**
 * The requests the requests job would store for the endpoints it collects, [from, to) on ended_at: the same simulated
 * platform (a model of the same options, so the same requests), each item served as the simulator serves it
 * (handlers.ts requestsByEndpoint: the record, billable_units once billed by the simulator's now) and mapped by the
 * collector's own toRequestLine into the writer, in the collector's batches. Only the HTTP pages are skipped: over
 * loopback 10M requests are 100,000 pages of JSON written, read and parsed again, which did not finish on this
 * machine under load; the rows stored are the same (each request once, as the settled months are after their merge).
 */
async function seedRequests(svc: Service, model: SimModel, o: { from: number; to: number }): Promise<void> {
  const nowMs = Date.parse(NOW);
  const upper = Math.min(o.to, nowMs);
  const ids = coveringEndpointIds((await currentAppEndpoints(svc.store, {})).map((r) => r.endpoint_id));
  const endpoints = new Map<number, Endpoint>();
  for (const id of ids) {
    const ep = model.world.endpointById.get(id);
    if (!ep || ep.isModel) continue;
    for (const e of ep.route === null ? model.world.apps[ep.appIndex].endpoints : [ep]) endpoints.set(e.index, e);
  }
  const collected = nextCollected();
  const sink = new RequestSink(svc.writer, svc.config.WRITER_MAX_ROWS, svc.config.WRITER_MAX_BYTES);
  let done = 0;
  for (const ep of endpoints.values()) {
    for (let h = Math.floor(o.from / HOUR_MS); h * HOUR_MS < upper; h++) {
      const lines: string[] = [];
      for (const r of model.requests.hour(ep, h, false)) {
        if (r.endedMs < o.from || r.endedMs >= upper) continue;
        const served = r.head + (r.billedAtMs <= nowMs ? ',"billable_units":' + formatMilli(r.billableMilli) + '}' : ',"billable_units":null}');
        const line = toRequestLine(JSON.parse(served), collected);
        if ('reason' in line) throw new Error(`the simulator served a request the collector refuses: ${line.reason}`);
        lines.push(line.line);
      }
      await sink.add(lines, []);
    }
    if (++done % 50 === 0) process.stderr.write(`requests: ${done}/${endpoints.size} endpoints\n`);
  }
  const { refused } = await sink.finish();
  if (refused > 0) throw new Error(`the store refused ${refused} seeded requests`);
}

/**
 * A platform client for the usage job that asks the simulator's own usage handler in this process (handlers.ts usage:
 * the same query, the same pages and cursors, the same JSON text, parsed and checked against the job's page schema as
 * PlatformClient.paginate does), without HTTP. Over loopback the usage backfill of 500 apps x 365 days took 653 s
 * (load 9-12): with 4 month chunks in flight, the simulator's answer cache (50,000 rows) held fewer than the 4
 * answers, so most pages computed their month again.
 */
function inProcessUsagePlatform(model: SimModel): PlatformClient {
  const handlers = new Handlers(model);
  async function* paginate<T>(path: string, opts: PaginateOptions<T>): AsyncGenerator<T, void, undefined> {
    if (path !== platformPaths.serverlessUsage || (opts.method ?? 'GET') !== 'GET') throw new Error(`the in-process platform serves only GET ${platformPaths.serverlessUsage}, not ${path}`);
    let cursor: string | null = null;
    do {
      const url = new URL('http://sim.invalid');
      appendQuery(url, { ...opts.query, cursor: cursor ?? undefined });
      const reply = handlers.usage(new Params(url.search.slice(1)), model.clock.nowMs());
      if (reply.status !== 200) throw new Error(`the simulator answered ${reply.status}: ${reply.body.slice(0, 300)}`);
      const value = JSON.parse(reply.body) as { next_cursor?: string | null; has_more?: boolean };
      yield opts.schema.parse(value);
      cursor = value.has_more ? (value.next_cursor ?? null) : null;
    } while (cursor !== null);
  }
  return { paginate } as unknown as PlatformClient;
}

async function seed(svc: Service) {
  const started = performance.now();
  // Seconds per seeding phase, in the order they ran.
  const phases: Record<string, number> = {};
  let phaseStarted = started;
  const phase = (name: string) => {
    const t = performance.now();
    phases[name] = Math.round((t - phaseStarted) / 100) / 10;
    phaseStarted = t;
    process.stderr.write(`seeding: ${name} took ${phases[name]} s\n`);
  };
  // Requests per endpoint-hour so the whole history holds about the target: measured on a probe world at the
  // default rate over its last two weeks (the daily curve and dormant days set the real mean), then scaled.
  const PROBE_RATE = 20;
  const probe = await startSim({ seed: 1, now: NOW, days, apps, requestsPerHour: PROBE_RATE, requestLogLimit: 0 });
  const probeDays = Math.min(14, days);
  const probeCount = probe.truth
    .requests({ from: now.minus({ days: probeDays }).toISODate()!, to: now.toISODate()! })
    .reduce((s, r) => s + r.request_count, 0);
  await probe.close();
  phase('probe');
  const requestsPerHour = (PROBE_RATE * targetRequests) / ((probeCount / probeDays) * days);
  const sim = await startSim({ seed: 1, now: NOW, days: days + 1, apps, requestsPerHour, requestLogLimit: 0 });
  const platform = new PlatformClient({ baseUrl: sim.url, apiKey: sim.keys.api, adminKey: sim.keys.admin, connections: 8 });
  // The same simulated platform in this process (a model of the same options): what the simulator serves, unpaged.
  // Its usage answers are cached whole (a month of 500 apps is ~15,000 rows, 4 months at once), so each is computed once.
  const model = new SimModel({
    seed: 1,
    nowMs: Date.parse(NOW),
    days: days + 1,
    apps,
    requestsPerHour,
    realtime: false,
    cacheLimits: { ...DEFAULT_CACHE_LIMITS, usageRows: { entries: 16, size: 1_000_000 } },
  });
  const from = now.minus({ days }).toISODate()!;
  const to = now.plus({ days: 1 }).toISODate()!;
  for (const [job, args, over] of [
    ['apps', {}, platform],
    ['usage', { from, to, timezone: 'UTC' }, values['usage-over'] === 'http' ? platform : inProcessUsagePlatform(model)],
  ] as const) {
    process.stderr.write(`seeding: ${job}\n`);
    const scheduler = new Scheduler({ runtime: svc, platform: over, jobs: allJobs, now: () => sim.clock.now() });
    const run = await scheduler.run(job, 'manual', parseJobArgs(scheduler.get(job)!, args), consoleProgress());
    if (run.status !== 'ok') throw new Error(`seeding ${job} failed: ${run.error}`);
    phase(job);
  }
  process.stderr.write('seeding: requests\n');
  await seedRequests(svc, model, { from: Date.parse(`${from}T00:00:00Z`), to: Date.parse(`${to}T00:00:00Z`) });
  phase('requests');
  // The daily rollup of the requests (built on the first scheduled run; a backfill only refreshes it).
  const { maintainRequestRollup } = await import('../jobs/requests.js');
  const { Checkpoints } = await import('../src/store/tables/checkpoints.js');
  await maintainRequestRollup(
    { runtime: svc, checkpoints: new Checkpoints(svc.store, svc.writer), log: svc.logger, now: () => sim.clock.now() },
    null,
    { rebuild: true },
  );
  phase('rollup');
  await platform.close();
  await sim.close();
  const count = async (sql: string) =>
    Number((await (await svc.store.client.query({ query: sql, format: 'JSONEachRow' })).json<{ n: string }>())[0].n);
  return {
    requests: await count('SELECT count() AS n FROM requests FINAL'),
    billable_units_sum: await count('SELECT toString(sum(billable_units)) AS n FROM requests FINAL'),
    billed: await count('SELECT countIf(billable_units IS NOT NULL) AS n FROM requests FINAL'),
    usage_rows: await count("SELECT count() AS n FROM usage_buckets FINAL WHERE timezone = 'UTC'"),
    usage_fingerprint: await usageFingerprint(svc),
    seed_seconds: Math.round((performance.now() - started) / 1000),
    seed_phase_seconds: phases,
  };
}

/**
 * What the usage seeding stored, independent of when it ran: rows, cost and a hash over every column but the
 * collection's version and time, of the usage series, the summaries and the day evidence (cost_day_collections).
 * Two seedings of one world store the same rows exactly when these agree.
 */
async function usageFingerprint(svc: Service): Promise<Record<string, string>> {
  const query = `
    SELECT
      (SELECT toString(count()) FROM usage_buckets FINAL) AS bucket_rows,
      (SELECT toString(sum(cost_total)) FROM usage_buckets FINAL) AS bucket_cost,
      (SELECT toString(sum(cityHash64(* EXCEPT (version, collected_at)))) FROM usage_buckets FINAL) AS bucket_hash,
      (SELECT toString(count()) FROM usage_summaries FINAL) AS summary_rows,
      (SELECT toString(sum(cityHash64(* EXCEPT (version, collected_at)))) FROM usage_summaries FINAL) AS summary_hash,
      (SELECT toString(count()) FROM cost_day_collections) AS day_rows,
      (SELECT toString(sum(cityHash64(* EXCEPT (collected_at)))) FROM cost_day_collections) AS day_hash`;
  return (await (await svc.store.client.query({ query, format: 'JSONEachRow' })).json<Record<string, string>>())[0];
}
