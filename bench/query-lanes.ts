// `npm run bench -- query-lanes [--days 14] [--apps 100] [--calls 60] [--ids 5000]`
//
// Interactive reads first (issue 49.4). Seeds a store from the in-process simulator (`--days` of usage and requests
// of `--apps` apps, and one Faro session that mentions `--ids` of those requests), then times `GET /cost` (`--calls`
// calls, varied ranges and groupings) three ways: alone, beside three clients each looping an 8-call MCP batch
// (cost breakdowns by day over the whole range, log searches), and beside three clients each looping
// `GET /sessions/{id}` of the 5,000-request session (API_SESSION_MAX_REQUESTS raised to --ids). All of it twice,
// on the same store: with the read gate as shipped (EMBEDDED_HEAVY_READS_MAX=1, `gated`) and with it wide open
// (EMBEDDED_HEAVY_READS_MAX=100000: every heavy read handed to the engine at once, as before the gate, only the
// hold-back while interactive work runs left: `open`).
// Goal: /cost p99 beside either load within 2x of its p99 alone. Prints one JSON line.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { DateTime } from 'luxon';
import { startSim } from '../src/sim/index.js';
import { parseConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { createRegistry } from '../src/metrics.js';
import { openRuntime, startService, closeRuntime, type Service } from '../src/service.js';
import { apiExtension } from '../src/api/index.js';
import { requestCostRoutes } from '../src/api/request-cost-routes.js';
import { sessionRoutes } from '../src/api/session-routes.js';
import { logsRoutes } from '../src/api/logs-routes.js';
import { mcpExtension } from '../src/mcp/extension.js';
import { PlatformClient } from '../src/platform/index.js';
import { Scheduler } from '../src/jobs/scheduler.js';
import { allJobs } from '../jobs/index.js';
import { parseJobArgs } from '../src/jobs/options.js';

const { values } = parseArgs({
  options: {
    days: { type: 'string', default: '14' },
    apps: { type: 'string', default: '100' },
    calls: { type: 'string', default: '60' },
    ids: { type: 'string', default: '5000' },
  },
});
const days = Number(values.days);
const apps = Number(values.apps);
const calls = Number(values.calls);
const ids = Number(values.ids);
const NOW = '2026-11-21T12:00:00Z';
const now = DateTime.fromISO(NOW, { zone: 'utc' });
const from = now.minus({ days }).toISODate()!;
const to = now.plus({ days: 1 }).toISODate()!;
const dataDir = join(process.cwd(), '.bench-lanes');
rmSync(dataDir, { recursive: true, force: true });
mkdirSync(dataDir, { recursive: true });
const TOKEN = 'bench-lanes-token-0123456789';
const SESSION = 'bench-session-5000';

const env = (heavy: number) =>
  parseConfig({
    DATA_DIR: dataDir,
    PORT: '0',
    LOG_LEVEL: 'warn',
    TIMEZONES: 'UTC',
    JOBS_ENABLED: 'false',
    API_TOKENS: TOKEN,
    METRICS_TOKEN: 'bench-lanes-metrics-0123456789',
    API_SESSION_MAX_REQUESTS: String(ids),
    API_SESSION_MAX_ITEMS: String(ids + 10),
    EMBEDDED_HEAVY_READS_MAX: String(heavy),
    LOG_RETENTION_DAYS: '3650',
    FARO_RETENTION_DAYS: '3650',
  });

// Seeding: apps, usage and requests (with their log lines) through the collectors, then the session's items.
const seedStarted = Date.now();
const sim = await startSim({ seed: 1, now: NOW, days: days + 1, apps });
{
  const rt = await openRuntime(env(1), { logger: createLogger('warn'), registry: createRegistry({ defaultMetrics: false }) });
  const platform = new PlatformClient({ baseUrl: sim.url, apiKey: sim.keys.api, adminKey: sim.keys.admin });
  const scheduler = new Scheduler({ runtime: rt, platform, jobs: allJobs, now: () => sim.clock.now() });
  for (const [job, args] of [
    ['apps', {}],
    ['usage', { from, to, timezone: 'UTC' }],
    ['requests', { from, to }],
    ['logs', { from: now.minus({ days: 2 }).toISODate()!, to }],
  ] as const) {
    process.stderr.write(`seeding: ${job}\n`);
    const run = await scheduler.run(job, 'manual', parseJobArgs(scheduler.get(job)!, args));
    if (run.status !== 'ok') throw new Error(`seeding ${job} failed: ${run.error}`);
  }
  await rt.writer.flush();
  const requestIds = (await (
    await rt.store.client.query({ query: `SELECT request_id, toString(ended_at) AS t FROM requests ORDER BY ended_at DESC LIMIT ${ids}`, format: 'JSONEachRow' })
  ).json()) as Array<{ request_id: string; t: string }>;
  if (requestIds.length < ids) throw new Error(`the store holds ${requestIds.length} requests, fewer than --ids ${ids}: raise --days or --apps`);
  const items = requestIds.map((r) => ({ received_at: r.t, timestamp: r.t, kind: 'log', app: 'web', session_id: SESSION, level: 'info', message: 'fetch', request_id: r.request_id, raw: '{}' }));
  await rt.store.client.insert({ table: 'faro_items', values: items, format: 'JSONEachRow' });
  await closeRuntime(rt);
}
await sim.close();
const seedSeconds = (Date.now() - seedStarted) / 1000;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
const round = (n: number) => Math.round(n * 10) / 10;

async function get(service: Service, path: string): Promise<void> {
  const res = await fetch(`${service.url}/api/v1${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${(await res.text()).slice(0, 300)}`);
  await res.arrayBuffer();
}

/**
 * /cost, `calls` times one after another: varied ranges and groupings; the latencies in ms, and how late the
 * process's event loop ran meanwhile (p99, max): time no query gate can give back (the service, its load and
 * this client share the process; building a 5,000-request answer holds the loop).
 */
async function timeCost(service: Service): Promise<{ p50: number; p99: number; max: number; loop_delay_p99: number; loop_delay_max: number }> {
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  const groupings = ['app', 'day', 'app,day', 'machine_type', 'environment,surge'];
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const start = now.minus({ days: 1 + (i % days) }).toISODate()!;
    const t = performance.now();
    await get(service, `/cost?from=${start}&to=${to}&group_by=${groupings[i % groupings.length]}`);
    times.push(performance.now() - t);
  }
  loop.disable();
  times.sort((a, b) => a - b);
  return {
    p50: round(percentile(times, 50)),
    p99: round(percentile(times, 99)),
    max: round(times[times.length - 1]),
    loop_delay_p99: round(loop.percentile(99) / 1e6),
    loop_delay_max: round(loop.max / 1e6),
  };
}

/** Runs `one` in `clients` loops until stopped; counts what they completed. */
function loops(clients: number, one: () => Promise<void>) {
  let stop = false;
  let done = 0;
  const running = Array.from({ length: clients }, async () => {
    while (!stop) {
      await one();
      done++;
    }
  });
  return {
    async end() {
      stop = true;
      await Promise.all(running);
      return done;
    },
  };
}

async function mcpBatch(service: Service): Promise<void> {
  const call = (id: number, name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
  const batch = [
    call(1, 'cost_breakdown', { from, to, group_by: ['day'] }),
    call(2, 'cost_breakdown', { from, to, group_by: ['app'] }),
    call(3, 'cost_breakdown', { from, to, group_by: ['machine_type', 'day'] }),
    call(4, 'search_logs', { from: now.minus({ days: 2 }).toISO()!, to: now.toISO()!, contains: 'request', limit: 200 }),
    call(5, 'cost_breakdown', { from, to, group_by: ['environment', 'day'] }),
    call(6, 'search_logs', { from: now.minus({ days: 2 }).toISO()!, to: now.toISO()!, contains: 'error', limit: 200 }),
    call(7, 'cost_breakdown', { from, to, group_by: ['surge', 'day'] }),
    call(8, 'cost_breakdown', { from, to, group_by: ['app', 'machine_type'] }),
  ];
  const res = await fetch(`${service.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify(batch),
  });
  if (res.status !== 200) throw new Error(`MCP batch: ${res.status} ${(await res.text()).slice(0, 300)}`);
  await res.arrayBuffer();
}

async function measure(heavy: number) {
  const service = await startService(env(heavy), {
    logger: createLogger('warn'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension([requestCostRoutes, sessionRoutes, logsRoutes]), mcpExtension('bench')],
  });
  try {
    await timeCost(service); // warm-up
    const alone = await timeCost(service);
    const batches = loops(3, () => mcpBatch(service));
    const besideBatches = await timeCost(service);
    const batchCount = await batches.end();
    const t = performance.now();
    await get(service, `/sessions/${SESSION}`);
    const sessionMs = round(performance.now() - t);
    const sessions = loops(3, () => get(service, `/sessions/${SESSION}`));
    const besideSessions = await timeCost(service);
    const sessionCount = await sessions.end();
    return {
      cost_alone: alone,
      cost_beside_mcp_batches: besideBatches,
      cost_beside_session_gets: besideSessions,
      mcp_batches_completed: batchCount,
      session_gets_completed: sessionCount,
      one_session_get_ms: sessionMs,
      ratio_p99_batches: round((besideBatches.p99 / alone.p99) * 100) / 100,
      ratio_p99_sessions: round((besideSessions.p99 / alone.p99) * 100) / 100,
    };
  } finally {
    await service.close();
  }
}

const gated = await measure(1);
const open = await measure(100_000);
console.log(
  JSON.stringify({
    bench: 'query-lanes',
    days,
    apps,
    calls,
    session_request_ids: ids,
    seed_seconds: round(seedSeconds),
    gated,
    open,
    goal: 'gated ratio_p99_* <= 2 (p99 of /cost beside three MCP batch loops or three 5,000-id session GET loops, over /cost alone)',
    goal_met: gated.ratio_p99_batches <= 2 && gated.ratio_p99_sessions <= 2,
    loadavg_1m: round(loadavg()[0]),
  }),
);
rmSync(dataDir, { recursive: true, force: true });
