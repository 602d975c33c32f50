// `npm run bench -- collect [--requests N] [--rph R] [--apps A] [--seed S] [--writer-max-rows N] [--same-process]
// [--store embedded|http] [--store-process sim|own]`: requests collected per second from the simulator (started by
// this bench, in its process) into the embedded store, by the requests job itself (a --from/--to backfill through the
// Scheduler, with its checkpoints); and, in the same run over the same windows and plan, the same paging without
// storing (HTTP, JSON, envelope) and paging + per-item validation and mapping without storing. Figures are ratios
// against the paging baseline of this run (the machine is shared and noisy), taken in turns with it, day by day:
// store_overhead = 1 - store_rate / paging_rate (goal < 0.30).
//
// The collector runs in a child process, so its RSS is Tallyhouse's alone (the collector, the writer and chDB, whose
// library alone is ~150 MB resident), not the simulator's request caches (~300 MB): peak RSS is sampled every 20 ms
// over the store pass (goal: flat, under 300 MB); rss_by_decile_mb is the peak in each tenth of it. --same-process
// runs the collector beside the simulator instead (the figures then include the simulator). --store http: the store
// is a ClickHouse HTTP endpoint (chDB) in this parent process, as a ClickHouse server would be: the collector's
// figures are then the pipeline's alone. --store-process own runs that endpoint in a process of its own instead, so
// its request handling does not hold up the simulator's event loop (a server is a process). Memory: idle (after
// warm-up set-up, before work) and peak RSS, anonymous RSS (RssAnon: what grows; the rest is mostly the engine's
// mapped library), JS heap, and the peak per tenth of the work (anon_by_decile_mb: flat = no growth).
// cpu_us_per_request is the collector process's CPU (its thread and chDB's) per request in each pass: on this
// two-core machine the simulator, the collector and chDB share the cores, so the wall-clock ratios also measure
// chDB's insert and merge threads taking CPU from the simulator. machine_cpu_us_per_request is every process's CPU
// (the simulator, the collector, the store, the kernel; /proc/stat) per request in each pass, and machine_busy_cores
// how many of the two cores were busy on average: a pass that adds CPU without filling the cores waits on latency.
// Prints one JSON line.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { getHeapStatistics } from 'node:v8';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startSim } from '../src/sim/index.js';
import { parseConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { createRegistry } from '../src/metrics.js';
import { openRuntime, closeRuntime } from '../src/service.js';
import { PlatformClient, chunk } from '../src/platform/index.js';
import { Scheduler } from '../src/jobs/scheduler.js';
import { parseJobArgs } from '../src/jobs/options.js';
import { requestsJob, REQUESTS_CONCURRENCY } from '../jobs/requests.js';
import {
  coveringEndpointIds,
  dayChunks,
  forEachLimited,
  nextCollected,
  requestPages,
  toRequestLine,
} from '../src/collectors/requests.js';
import type { JobContext } from '../src/collectors/job.js';

const HOUR = 3_600_000;
/** Bytes per memory page (residentMemory); declared before the top-level await below runs the child. */
let pageBytes: number | undefined;

interface ChildSpec {
  writerMaxRows?: string;
  clickhouseUrl?: string;
  url: string;
  apiKey: string;
  ids: string[];
  from: string;
  to: string;
  warmFrom: string;
}

if (process.env.BENCH_COLLECT_CHILD) {
  const result = await child(JSON.parse(process.env.BENCH_COLLECT_CHILD) as ChildSpec);
  process.stdout.write(`${JSON.stringify(result)}\n`);
} else if (process.env.BENCH_COLLECT_STORE) {
  // --store http --store-process own: the endpoint alone in this process, until the parent closes its stdin.
  const { startClickHouseHttp } = await import('../test/support/clickhouse-http.js');
  const endpoint = await startClickHouseHttp({ dataDir: process.env.BENCH_COLLECT_STORE });
  process.stdout.write(`${endpoint.url}\n`);
  await new Promise((resolve) => process.stdin.on('end', resolve).resume());
  await endpoint.close();
} else {
  await parent();
}

async function parent(): Promise<void> {
  const { values } = parseArgs({
    options: {
      requests: { type: 'string', default: '1000000' },
      rph: { type: 'string', default: '165' },
      apps: { type: 'string', default: '60' },
      seed: { type: 'string', default: '1' },
      'writer-max-rows': { type: 'string' },
      // Run the collector in this process too (the simulator's memory and CPU then count in every figure).
      'same-process': { type: 'boolean', default: false },
      // embedded (default): the collector's own chDB; http: a ClickHouse HTTP endpoint (chDB) in this process, so
      // the collector process holds no engine and its memory is the pipeline's alone (as with a ClickHouse server).
      store: { type: 'string', default: 'embedded' },
      // --store http: where the endpoint runs. sim: in this process, beside the simulator (its request handling then
      // runs on the simulator's event loop: a batch's body is handed to chDB as bytes, a few ms each); own: a process
      // of its own, as a ClickHouse server is (a third process on the two cores).
      'store-process': { type: 'string', default: 'sim' },
    },
  });
  const target = Number(values.requests);
  const sim = await startSim({ seed: Number(values.seed), requestsPerHour: Number(values.rph), apps: Number(values.apps), days: 60 });
  const nowMs = sim.clock.now().getTime();
  const ids = coveringEndpointIds(sim.truth.apps().filter((a) => a.owned_by_caller).map((a) => a.endpoint_id));
  // A window of whole days before today holding about `target` requests, estimated from the last full day.
  const dayStart = Math.floor(nowMs / (24 * HOUR)) * 24 * HOUR;
  const sample = sim.truth.requests({ from: new Date(dayStart - 24 * HOUR).toISOString(), to: new Date(dayStart).toISOString() });
  const perHour = sample.reduce((s, r) => s + r.request_count, 0) / 24;
  // Whole UTC days: the passes alternate day by day.
  const days = Math.min(58, Math.max(1, Math.round(target / perHour / 24)));
  const hours = days * 24;
  const endMs = dayStart;
  if (values.store !== 'embedded' && values.store !== 'http') throw new Error(`--store: expected embedded or http, got ${values.store}`);
  if (values['store-process'] !== 'sim' && values['store-process'] !== 'own') throw new Error(`--store-process: expected sim or own, got ${values['store-process']}`);
  const storeDir = values.store === 'http' ? mkdtempSync(join(tmpdir(), 'th-bench-ch-')) : null;
  const clickhouse = storeDir === null ? null : values['store-process'] === 'own' ? await startStoreProcess(storeDir) : await startStoreHere(storeDir);
  const spec: ChildSpec = {
    writerMaxRows: values['writer-max-rows'],
    clickhouseUrl: clickhouse?.url,
    url: sim.url,
    apiKey: sim.keys.api,
    ids,
    from: new Date(endMs - hours * HOUR).toISOString(),
    to: new Date(endMs).toISOString(),
    warmFrom: new Date(endMs - (hours + 6) * HOUR).toISOString(),
  };
  if (values['same-process']) {
    const r = await child(spec);
    await sim.close();
    console.log(JSON.stringify({ bench: 'collect', same_process: true, hours, endpoint_ids: ids.length, ...r }));
    return;
  }
  // BENCH_CHILD_NODE_ARGS: extra node flags for the collector process only (e.g. --max-old-space-size=256).
  // BENCH_CHILD_WRAP: a command the collector process runs under (e.g. `perf record -g -o collect.data --`, which
  // sees chDB's threads too, from their start; with BENCH_CHILD_NODE_ARGS=--perf-basic-prof for the JS frames).
  const extra = (process.env.BENCH_CHILD_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const wrap = (process.env.BENCH_CHILD_WRAP ?? '').split(' ').filter(Boolean);
  const argv = [process.execPath, ...extra, '--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url)];
  const all = [...wrap, ...argv];
  const proc = spawn(all[0], all.slice(1), {
    env: { ...process.env, BENCH_COLLECT_CHILD: JSON.stringify(spec) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => proc.on('exit', resolve));
  await sim.close();
  await clickhouse?.close();
  if (storeDir) rmSync(storeDir, { recursive: true, force: true });
  if (code !== 0) throw new Error(`the collector process exited with ${code}`);
  const r = JSON.parse(out.trim().split('\n').pop()!) as Record<string, unknown>;
  const storeProcess = values.store === 'http' ? { store_process: values['store-process'] } : {};
  console.log(JSON.stringify({ bench: 'collect', store: values.store, ...storeProcess, hours, endpoint_ids: ids.length, ...r }));
}

async function startStoreHere(dataDir: string): Promise<{ url: string; close(): Promise<void> }> {
  const { startClickHouseHttp } = await import('../test/support/clickhouse-http.js');
  return startClickHouseHttp({ dataDir });
}

/** The --store http endpoint in a process of its own (this file with BENCH_COLLECT_STORE). */
async function startStoreProcess(dataDir: string): Promise<{ url: string; close(): Promise<void> }> {
  // BENCH_STORE_NODE_ARGS: extra node flags for the store process (e.g. --cpu-prof).
  const extra = (process.env.BENCH_STORE_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const proc = spawn(process.execPath, [...extra, '--import', 'tsx', fileURLToPath(import.meta.url)], {
    env: { ...process.env, BENCH_COLLECT_STORE: dataDir },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => proc.on('exit', resolve));
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    proc.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(out.split('\n')[0]);
    });
    void exited.then((code) => reject(new Error(`the store process exited with ${code}`)));
  });
  return {
    url,
    async close() {
      proc.stdin.end();
      await exited;
    },
  };
}

/**
 * This process's resident memory and its anonymous part (RssAnon: heap, arenas, buffers; not mapped library code),
 * in bytes, from /proc/self/statm (resident and file-backed pages): one small read. The 20 ms sampler used
 * process.memoryUsage() (/proc/self/stat, which sums the times of every thread, and chDB runs dozens) and
 * /proc/self/status, about 0.3 CPU-us per request of the store pass (perf, 256k requests).
 */
function residentMemory(): { rss: number; anon: number } {
  try {
    const [, resident, shared] = readFileSync('/proc/self/statm', 'latin1').split(' ').map(Number);
    pageBytes ??= 2 ** Math.round(Math.log2(process.memoryUsage().rss / resident));
    return { rss: resident * pageBytes, anon: (resident - shared) * pageBytes };
  } catch {
    return { rss: process.memoryUsage().rss, anon: NaN }; // not Linux
  }
}

/** CPU time of the whole machine (every core, every process, the kernel) in microseconds, from /proc/stat; NaN off Linux. */
function machineBusyMicros(): number {
  try {
    // cpu user nice system idle iowait irq softirq steal ..., in USER_HZ ticks (100 a second on Linux).
    const ticks = readFileSync('/proc/stat', 'latin1').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number);
    const busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + (ticks[7] ?? 0);
    return busy * 10_000;
  } catch {
    return NaN;
  }
}

async function child(spec: ChildSpec): Promise<Record<string, unknown>> {
  const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
  const mb = (b: number) => Math.round(b / 1024 / 1024);
  const dataDir = mkdtempSync(join(tmpdir(), 'th-bench-collect-'));
  const config = parseConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', NODE_ENV: 'production', WRITER_MAX_ROWS: spec.writerMaxRows, CLICKHOUSE_URL: spec.clickhouseUrl });
  const rt = await openRuntime(config, { logger: createLogger('silent'), registry: createRegistry({ defaultMetrics: false }) });
  const platform = new PlatformClient({ baseUrl: spec.url, apiKey: spec.apiKey });
  const from = new Date(spec.from);
  const to = new Date(spec.to);
  const pagingCtx = { platform, call: {} } as Pick<JobContext, 'platform' | 'call'>;
  // The store pass's plan: day chunks x groups of 50 ids, REQUESTS_CONCURRENCY groups at a time.
  const plan = dayChunks(from, to);
  const groups = chunk(spec.ids, 50);

  async function pagingPass(map: boolean, window = plan): Promise<{ records: number; seconds: number }> {
    let records = 0;
    let bytes = 0;
    const t0 = process.hrtime.bigint();
    for (const c of window) {
      await forEachLimited(groups, REQUESTS_CONCURRENCY, async (g) => {
        const collected = nextCollected();
        for await (const items of requestPages(pagingCtx, { endpointIds: g, ...c })) {
          records += items.length;
          if (!map) continue;
          for (const raw of items) {
            const r = toRequestLine(raw, collected);
            bytes += 'reason' in r ? 0 : r.line.length;
          }
        }
      });
    }
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    if (map && bytes === 0) throw new Error('nothing mapped');
    return { records, seconds };
  }

  const countRows = async (): Promise<number> => {
    const rs = await rt.store.client.query({ query: 'SELECT count() AS n FROM requests', format: 'JSONEachRow' });
    return Number((await rs.json<{ n: string }>())[0].n);
  };
  const writerMetric = async (name: string, suffix: string): Promise<number> => {
    const m = (await rt.registry.getSingleMetric(name)?.get()) as
      | { values: Array<{ value: number; labels: Record<string, string | number>; metricName?: string }> }
      | undefined;
    return (m?.values ?? [])
      .filter((v) => v.labels.table === 'requests' && (suffix === '' || v.metricName?.endsWith(suffix)))
      .reduce((s, v) => s + v.value, 0);
  };

  // One scheduler for every store slice: each slice is one run of the requests job (a --from/--to backfill).
  const scheduler = new Scheduler({ runtime: rt, platform, jobs: [requestsJob], now: () => to });
  const rssSamples: Array<[number, number, number]> = []; // [rows committed so far, rss, anonymous rss]
  let peakHeap = 0;
  let storing = false;
  let committedBefore = 0;
  let committed = 0;
  const sampler = setInterval(() => {
    if (!storing) return;
    const m = residentMemory();
    rssSamples.push([committed, m.rss, m.anon]);
    peakHeap = Math.max(peakHeap, getHeapStatistics().used_heap_size);
  }, 20);
  const progress = setInterval(() => {
    if (storing) void writerMetric('tallyhouse_writer_rows_written_total', '').then((n) => (committed = n));
  }, 100);

  async function storePass(window: Array<{ from: Date; to: Date }>): Promise<{ records: number; seconds: number }> {
    let records = 0;
    storing = true;
    const t0 = process.hrtime.bigint();
    for (const c of window) {
      const args = parseJobArgs(requestsJob, { from: c.from.toISOString(), to: c.to.toISOString(), endpoints: spec.ids.join(',') });
      const result = await scheduler.run('requests', 'manual', args);
      if (result.status !== 'ok') throw new Error(`requests job failed: ${result.error}`);
      records += result.rows;
    }
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    storing = false;
    committedBefore += records;
    committed = committedBefore;
    return { records, seconds };
  }

  type Pass = { records: number; seconds: number; cpuMicros: number; machineMicros: number };
  const totals: Record<'paging' | 'mapping' | 'store', Pass> = {
    paging: { records: 0, seconds: 0, cpuMicros: 0, machineMicros: 0 },
    mapping: { records: 0, seconds: 0, cpuMicros: 0, machineMicros: 0 },
    store: { records: 0, seconds: 0, cpuMicros: 0, machineMicros: 0 },
  };
  const modes = ['paging', 'mapping', 'store'] as const;
  // The collector's event-loop delay per slice (p99 and max, ms): a long task holds both walks' next pages.
  const loopDelay: Record<(typeof modes)[number], number[]> = { paging: [], mapping: [], store: [] };
  gc();
  const { rss: idleRss, anon: idleAnon } = residentMemory();
  const idleHeap = process.memoryUsage().heapUsed;
  // Warm-up (JIT, connections) on six hours before the measured window.
  await pagingPass(true, dayChunks(new Date(spec.warmFrom), from));
  // The passes take turns day by day, each day in a rotated order, so the machine's drift and the simulator's
  // request cache weigh on all three alike.
  const slices = dayChunks(from, to);
  const storeStartRss = process.memoryUsage().rss;
  for (let i = 0; i < slices.length; i++) {
    for (let k = 0; k < modes.length; k++) {
      const mode = modes[(i + k) % modes.length];
      gc();
      // CPU of this process: the collector's thread and chDB's (insert, merges), not the simulator's.
      const cpu0 = process.cpuUsage();
      const machine0 = machineBusyMicros();
      const loop = monitorEventLoopDelay({ resolution: 1 });
      loop.enable();
      const r = mode === 'store' ? await storePass([slices[i]]) : await pagingPass(mode === 'mapping', [slices[i]]);
      const cpu = process.cpuUsage(cpu0);
      totals[mode].records += r.records;
      totals[mode].seconds += r.seconds;
      totals[mode].cpuMicros += cpu.user + cpu.system;
      totals[mode].machineMicros += machineBusyMicros() - machine0;
      loop.disable();
      loopDelay[mode].push(loop.percentile(99) / 1e6, loop.max / 1e6);
    }
  }
  clearInterval(sampler);
  clearInterval(progress);
  const stored = await countRows();
  if (stored !== totals.paging.records || totals.store.records !== totals.paging.records) {
    throw new Error(`stored ${stored} rows (job counted ${totals.store.records}), paged ${totals.paging.records}`);
  }
  const insertSeconds = await writerMetric('tallyhouse_writer_flush_duration_seconds', '_sum');
  const batches = await writerMetric('tallyhouse_writer_flush_duration_seconds', '_count');
  await platform.close();
  await closeRuntime(rt);
  rmSync(dataDir, { recursive: true, force: true });

  const deciles = new Array<number>(10).fill(0);
  const anonDeciles = new Array<number>(10).fill(0);
  for (const [n, rss, anon] of rssSamples) {
    const d = Math.min(9, Math.floor((n / stored) * 10));
    deciles[d] = Math.max(deciles[d], rss);
    anonDeciles[d] = Math.max(anonDeciles[d], anon);
  }
  const peak = Math.max(...rssSamples.map(([, rss]) => rss));
  const peakAnon = Math.max(...rssSamples.map(([, , anon]) => anon));
  const rate = (p: Pass) => Math.round(p.records / p.seconds);
  const round3 = (x: number) => Math.round(x * 1000) / 1000;
  return {
    requests: stored,
    paging_per_second: rate(totals.paging),
    paging_mapping_per_second: rate(totals.mapping),
    store_per_second: rate(totals.store),
    store_vs_paging: round3(rate(totals.store) / rate(totals.paging)),
    store_overhead: round3(1 - rate(totals.store) / rate(totals.paging)),
    mapping_overhead: round3(1 - rate(totals.mapping) / rate(totals.paging)),
    cpu_us_per_request: {
      paging: round3(totals.paging.cpuMicros / totals.paging.records),
      mapping: round3(totals.mapping.cpuMicros / totals.mapping.records),
      store: round3(totals.store.cpuMicros / totals.store.records),
    },
    // Every process's CPU (the simulator, the collector, the store, the kernel) per request, and the cores busy on
    // average: on this two-core machine, what the store pass adds to the paging pass.
    machine_cpu_us_per_request: {
      paging: round3(totals.paging.machineMicros / totals.paging.records),
      mapping: round3(totals.mapping.machineMicros / totals.mapping.records),
      store: round3(totals.store.machineMicros / totals.store.records),
    },
    machine_busy_cores: {
      paging: round3(totals.paging.machineMicros / 1e6 / totals.paging.seconds),
      mapping: round3(totals.mapping.machineMicros / 1e6 / totals.mapping.seconds),
      store: round3(totals.store.machineMicros / 1e6 / totals.store.seconds),
    },
    collector_loop_delay_ms: Object.fromEntries(modes.map((m) => [m, loopDelay[m].map(round3)])),
    store_seconds: round3(totals.store.seconds),
    store_insert_seconds: round3(insertSeconds),
    store_batches: batches,
    rss_idle_mb: mb(idleRss),
    anon_idle_mb: mb(idleAnon),
    heap_idle_mb: mb(idleHeap),
    peak_anon_mb: mb(peakAnon),
    anon_growth_mb: mb(peakAnon - idleAnon),
    anon_by_decile_mb: anonDeciles.map(mb),
    rss_before_store_mb: mb(storeStartRss),
    peak_rss_mb: mb(peak),
    peak_heap_used_mb: mb(peakHeap),
    rss_by_decile_mb: deciles.map(mb),
  };
}
