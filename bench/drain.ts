// `npm run bench -- drain [--lines N] [--batch B] [--senders S]`: the log drain end to end. The service (embedded
// store, log drain) runs as a child process; this process pushes N realistic drain lines (the simulator's
// shapes: svc_* labels, 10% with extra keys, some multi-line tracebacks) in signed batches of B lines from S
// concurrent senders over loopback, and measures lines/s until every line is visible in the store. The child
// then inserts the same NDJSON straight into the store (JSONEachRow into a table of the drain's keys, in
// batches as large as the spool replayer's) for the store's own rate, and the drain's own rows (mapLine's TabSeparated)
// into a copy of `logs` for the engine's rate on the drain's table. Prints one JSON line: the rates, their ratios
// (goal >= 0.6 to the file read), answer latency percentiles, the service's CPU-seconds, group commits and peak RSS
// (goal < 300 MB).
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { mulberry32 } from '../src/sim/prng.js';

const { values } = parseArgs({
  options: {
    role: { type: 'string', default: 'main' },
    lines: { type: 'string', default: '2000000' },
    batch: { type: 'string', default: '1000' },
    senders: { type: 'string', default: '4' },
    seed: { type: 'string', default: '1' },
    // The lines' first timestamp (ms since the epoch): the run's start, handed to the child, so both build the same bytes.
    epoch: { type: 'string' },
    'parser-threads': { type: 'string' },
    'replay-batch-mb': { type: 'string' },
    // embedded (default): the service's own chDB; http: a ClickHouse HTTP endpoint (chDB) in this process, so the
    // service's memory is the drain's alone (the endpoint is a test double: slower than a real server).
    store: { type: 'string', default: 'embedded' },
  },
});
const LINES = Number(values.lines);
const BATCH = Number(values.batch);
const SENDERS = Number(values.senders);
const SEED = Number(values.seed);
const SECRET = 'b'.repeat(64);
// Live lines, as a drain receives them: timestamped from the run's start. Lines more than a minute old send every
// replayed batch down the history-copies check (extension.ts dropHistoryCopies), the path of lines that waited out
// an outage, which a fixed past date made the only path this bench measured.
const EPOCH = values.epoch === undefined ? Date.now() : Number(values.epoch);
const BASELINE_BATCH_LINES = 100_000; // the replayer's largest batch

// ---- realistic lines, deterministic ----------------------------------------------------------------------


const hex = (r: () => number, n: number) => {
  let s = '';
  while (s.length < n) s += Math.floor(r() * 0x100000000).toString(16).padStart(8, '0');
  return s.slice(0, n);
};
const uuid = (r: () => number) => {
  const h = hex(r, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
};

const APPS = Array.from({ length: 40 }, (_, i) => {
  const r = mulberry32(1000 + i);
  const name = ['flux', 'sdxl', 'whisper', 'llama', 'caption', 'upscale', 'tts', 'embed'][i % 8] + `-${i}`;
  return { name, id: uuid(r), endpoint: `acme/${name}`, nodes: Array.from({ length: 4 }, () => `node-${hex(r, 6)}`), workers: Array.from({ length: 6 }, () => uuid(r)) };
});
const TRACEBACK = 'Traceback (most recent call last):\n  File "/app/main.py", line 42, in setup\n    self.pipe = load_pipeline()\nRuntimeError: CUDA error: out of memory';

/** Batch `b` of the run: the same bytes in both processes. */
function batchBody(b: number, lines: number): string {
  const r = mulberry32(SEED * 1_000_003 + b);
  const start = EPOCH + b * 40;
  const out: string[] = [];
  for (let i = 0; i < lines; i++) {
    const app = APPS[Math.floor(r() * APPS.length)];
    const requestId = uuid(r);
    const onRunner = r() < 0.7;
    const kind = r();
    const level = kind < 0.02 ? 'ERROR' : kind < 0.08 ? 'WARNING' : kind < 0.2 ? 'DEBUG' : 'INFO';
    const message =
      level === 'ERROR'
        ? r() < 0.5 ? TRACEBACK : `Request failed with status 500: runtime_error`
        : level === 'WARNING'
          ? `Cold start: waited ${(r() * 30).toFixed(3)}s for a runner`
          : level === 'DEBUG'
            ? 'Dispatched to runner'
            : r() < 0.5 ? `Received request ${requestId} for ${app.endpoint}` : `Request completed in ${(r() * 20).toFixed(3)}s`;
    const obj: Record<string, string> = {
      timestamp: new Date(start + i * 37 + Math.floor(r() * 30)).toISOString(),
      message,
      level,
      svc_app_name: app.name,
      svc_app_id: app.id,
      svc_endpoint: app.endpoint,
      svc_request_id: requestId,
      svc_job_id: requestId,
      svc_source: onRunner ? 'runner' : 'gateway',
    };
    if (onRunner) {
      obj.svc_node_id = app.nodes[Math.floor(r() * app.nodes.length)];
      obj.svc_worker_id = app.workers[Math.floor(r() * app.workers.length)];
      obj.svc_isolate_source = level === 'ERROR' ? 'stderr' : 'stdout';
    }
    if (r() < 0.1) {
      obj.svc_region = 'us-east';
      obj.trace_id = hex(r, 16);
    }
    out.push(JSON.stringify(obj));
  }
  return `${out.join('\n')}\n`;
}

const batches = Math.ceil(LINES / BATCH);
const linesOf = (b: number) => Math.min(BATCH, LINES - b * BATCH);

// ---- the service (child) ---------------------------------------------------------------------------------

async function serve(): Promise<void> {
  const { parseConfig } = await import('../src/config.js');
  const { startService } = await import('../src/service.js');
  const { logDrainExtension } = await import('../src/ingest/drain/extension.js');
  type Runtime = import('../src/runtime.js').Runtime;
  type App = import('fastify').FastifyInstance;
  const config = parseConfig(process.env);
  let rtRef: (Runtime & { app: App }) | undefined;
  let spoolRef: { commits?: number } | undefined;
  // Where the service's memory is (the main thread's V8 heap, Buffers outside it), at its peak: sampled while it works,
  // from V8's counters (process.memoryUsage() also reads /proc, which under load held the event loop: 8% of its samples
  // in a --cpu-prof run); the array buffers, which only it gives, less often.
  const peaks = { heap_total: 0, heap_used: 0, external: 0, array_buffers: 0 };
  // How long the event loop was held (a request's answer waits behind whatever holds it): reset when the senders start.
  const { monitorEventLoopDelay } = await import('node:perf_hooks');
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const { getHeapStatistics } = await import('node:v8');
  let tick = 0;
  setInterval(() => {
    const h = getHeapStatistics();
    peaks.heap_total = Math.max(peaks.heap_total, h.total_heap_size);
    peaks.heap_used = Math.max(peaks.heap_used, h.used_heap_size);
    peaks.external = Math.max(peaks.external, h.external_memory);
    if (++tick % 10 === 0) peaks.array_buffers = Math.max(peaks.array_buffers, process.memoryUsage().arrayBuffers);
  }, 50).unref();
  const benchRoutes = async (rt: Runtime & { app: App }) => {
    rtRef = rt;
    rt.app.get('/bench/count', async () => {
      const rs = await rt.store.client.query({ query: 'SELECT count() AS n FROM logs', format: 'JSONEachRow' });
      const [row] = await rs.json<{ n: string }>();
      return { n: Number(row.n) };
    });
    rt.app.get('/bench/memory', async () => {
      const status = readFileSync('/proc/self/status', 'utf8');
      const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
      const cpu = process.cpuUsage();
      const delay = { p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 };
      loopDelay.reset();
      return {
        peak_rss_bytes: kb('VmHWM') * 1024,
        rss_bytes: kb('VmRSS') * 1024,
        anon_bytes: kb('RssAnon') * 1024,
        file_bytes: kb('RssFile') * 1024,
        heap_bytes: process.memoryUsage().heapUsed,
        cpu_seconds: (cpu.user + cpu.system) / 1e6,
        spool_commits: spoolRef?.commits ?? NaN,
        peak_heap_total_bytes: peaks.heap_total,
        peak_heap_used_bytes: peaks.heap_used,
        peak_external_bytes: peaks.external,
        peak_array_buffers_bytes: peaks.array_buffers,
        loop_delay_p99_ms: delay.p99,
        loop_delay_max_ms: delay.max,
      };
    });
    // The store on its own, the same NDJSON, the replayer's batch size, into a table of the drain's keys, two ways:
    // `file` = it reads the NDJSON file itself (INSERT FROM INFILE: its fastest way in, what the replayer uses);
    // `client` = the rows passed through @clickhouse/client as the query's data (the usual path).
    // The engine on the drain's own rows and table: the same lines through mapLine (TabSeparated), read from a file
    // into a copy of `logs` (its sorting key, indexes and Map column cost the engine more than the baseline table).
    rt.app.post('/bench/logs-table', async () => {
      const store = rtRef!.store;
      const { mapLine, LOG_ROW_COLUMNS } = await import('../src/collectors/log-line.js');
      await store.client.command({ query: 'DROP TABLE IF EXISTS bench_drain_logs_copy' });
      await store.client.command({ query: 'CREATE TABLE bench_drain_logs_copy AS logs' });
      const ctx = { receivedAt: '2026-11-26 00:00:00.000', batchId: '6f0c1a52-9d44-4a8e-9d3b-4b2f4c1d2e3f' };
      const file = join(config.DATA_DIR, 'bench-baseline.tsv');
      const perInsert = Math.max(1, Math.floor(BASELINE_BATCH_LINES / BATCH));
      let seconds = 0;
      for (let b = 0; b < batches; b += perInsert) {
        const rows: string[] = [];
        for (let k = b; k < Math.min(batches, b + perInsert); k++) {
          const lines = batchBody(k, linesOf(k)).split('\n');
          for (let i = 0; i < lines.length; i++) {
            const outcome = lines[i] ? mapLine(lines[i], i + 1, ctx) : undefined;
            if (outcome?.ok) rows.push(outcome.row);
          }
        }
        writeFileSync(file, `${rows.join('\n')}\n`);
        const t = process.hrtime.bigint();
        await store.client.command({
          query: `INSERT INTO bench_drain_logs_copy (${LOG_ROW_COLUMNS.join(', ')}) FROM INFILE '${file}' FORMAT TabSeparated`,
          clickhouse_settings: { async_insert: 0, max_partitions_per_insert_block: '0' },
        });
        seconds += Number(process.hrtime.bigint() - t) / 1e9;
      }
      const rs = await store.client.query({ query: 'SELECT count() AS n FROM bench_drain_logs_copy', format: 'JSONEachRow' });
      const [row] = await rs.json<{ n: string }>();
      await store.client.command({ query: 'DROP TABLE bench_drain_logs_copy' });
      return { lines: Number(row.n), seconds };
    });
    rt.app.post<{ Querystring: { via: 'file' | 'client' } }>('/bench/baseline', async (req) => {
      const store = rtRef!.store;
      const table = `bench_drain_baseline_${req.query.via}`;
      await store.client.command({ query: `DROP TABLE IF EXISTS ${table}` });
      await store.client.command({
        query: `CREATE TABLE ${table} (
          timestamp DateTime64(3, 'UTC'), message String CODEC(ZSTD(3)), level LowCardinality(String),
          svc_app_name LowCardinality(String), svc_app_id LowCardinality(String), svc_endpoint LowCardinality(String),
          svc_request_id String, svc_job_id String, svc_source LowCardinality(String), svc_node_id LowCardinality(String),
          svc_worker_id String, svc_isolate_source LowCardinality(String))
          ENGINE = MergeTree PARTITION BY toDate(timestamp) ORDER BY (svc_app_name, timestamp)`,
      });
      const settings = { input_format_skip_unknown_fields: 1, date_time_input_format: 'best_effort', async_insert: 0 } as const;
      let seconds = 0;
      const perInsert = Math.max(1, Math.floor(BASELINE_BATCH_LINES / BATCH));
      const file = join(config.DATA_DIR, 'bench-baseline.ndjson');
      for (let b = 0; b < batches; b += perInsert) {
        const parts: string[] = [];
        for (let k = b; k < Math.min(batches, b + perInsert); k++) parts.push(batchBody(k, linesOf(k)));
        const body = parts.join('');
        if (req.query.via === 'file') writeFileSync(file, body);
        const t = process.hrtime.bigint();
        if (req.query.via === 'file') {
          await store.client.command({ query: `INSERT INTO ${table} FROM INFILE '${file}' FORMAT JSONEachRow`, clickhouse_settings: settings });
        } else {
          const result = await store.client.exec({ query: `INSERT INTO ${table} FORMAT JSONEachRow`, values: Readable.from([Buffer.from(body)]), clickhouse_settings: settings });
          await new Promise<void>((resolve, reject) => {
            result.stream.on('error', reject).on('end', resolve).resume();
          });
        }
        seconds += Number(process.hrtime.bigint() - t) / 1e9;
      }
      const rs = await store.client.query({ query: `SELECT count() AS n FROM ${table}`, format: 'JSONEachRow' });
      const [row] = await rs.json<{ n: string }>();
      await store.client.command({ query: `DROP TABLE ${table}` });
      return { lines: Number(row.n), seconds };
    });
  };
  const drain = logDrainExtension({
    parserThreads: values['parser-threads'] === undefined ? undefined : Number(values['parser-threads']),
    replayMaxBatchBytes: values['replay-batch-mb'] === undefined ? undefined : Number(values['replay-batch-mb']) * 1024 * 1024,
    onStarted: ({ spool }) => (spoolRef = spool as { commits?: number }),
  });
  const service = await startService(config, { extensions: [drain, benchRoutes] });
  console.log(JSON.stringify({ url: service.url })); // the log level may hide the service's own line
  process.once('SIGTERM', () => void service.close().then(() => process.exit(0)));
}

// ---- the senders (main) ----------------------------------------------------------------------------------

/**
 * CPU-seconds of each live thread of a process (Linux: /proc/<pid>/task/<tid>/stat, utime + stime), by thread id, with
 * its name: where the service's CPU went (the event loop, the drain's worker threads, the engine's thread pools).
 */
function threadCpu(pid: number): Map<string, { name: string; seconds: number }> {
  const out = new Map<string, { name: string; seconds: number }>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        out.set(tid, { name, seconds: (Number(fields[11]) + Number(fields[12])) / 100 });
      } catch {
        // the thread ended
      }
    }
  } catch {
    // not Linux
  }
  return out;
}

/** CPU-seconds spent between two threadCpu readings, summed by thread name (threads that ended between are missed). */
function cpuByThreadName(before: ReturnType<typeof threadCpu>, after: ReturnType<typeof threadCpu>, mainTid: string): Record<string, number> {
  const sums: Record<string, number> = {};
  for (const [tid, { name, seconds }] of after) {
    const key = tid === mainTid ? 'event loop' : name;
    sums[key] = (sums[key] ?? 0) + seconds - (before.get(tid)?.seconds ?? 0);
  }
  return Object.fromEntries(
    Object.entries(sums)
      .filter(([, s]) => s >= 0.05)
      .sort((a, b) => b[1] - a[1])
      .map(([k, s]) => [k, Math.round(s * 100) / 100]),
  );
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tallyhouse-bench-drain-'));
  let clickhouse: { url: string; close(): Promise<void> } | undefined;
  if (values.store === 'http') {
    const { startClickHouseHttp } = await import('../test/support/clickhouse-http.js');
    clickhouse = await startClickHouseHttp({ dataDir: mkdtempSync(join(tmpdir(), 'tallyhouse-bench-drain-ch-')) });
  }
  const extraNodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean); // e.g. --cpu-prof
  const passOn = (['parser-threads', 'replay-batch-mb'] as const).flatMap((k) => (values[k] === undefined ? [] : [`--${k}`, String(values[k])]));
  const child = spawn(process.execPath, [...extraNodeArgs, '--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), '--role', 'serve', '--lines', String(LINES), '--batch', String(BATCH), '--seed', String(SEED), '--epoch', String(EPOCH), ...passOn], {
    env: { ...process.env, NODE_ENV: 'production', LOG_LEVEL: 'warn', PORT: '0', DATA_DIR: dataDir, CLICKHOUSE_URL: clickhouse?.url, LOG_DRAIN_SECRET: SECRET, SVC_API_KEY: 'bench-not-used-0000', JOBS_ENABLED: 'false' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /"url":"(http:\/\/[^"]+)"/.exec(out);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`service exited (${code}):\n${out}`)));
  });
  const pool = new Pool(url, { connections: SENDERS, pipelining: 1 });
  const get = async <T>(path: string, method: 'GET' | 'POST' = 'GET'): Promise<T> => {
    const res = await pool.request({ method, path, headersTimeout: 600_000, bodyTimeout: 600_000 });
    return (await res.body.json()) as T;
  };

  // Bodies and signatures first: generating them is not what is measured.
  const bodies: Array<{ body: Buffer; signature: string }> = [];
  for (let b = 0; b < batches; b++) {
    const body = Buffer.from(batchBody(b, linesOf(b)));
    bodies.push({ body, signature: createHmac('sha256', SECRET).update(body).digest('hex') });
  }
  const bytes = bodies.reduce((n, b) => n + b.body.length, 0);

  const idle = await get<{ rss_bytes: number; anon_bytes: number; file_bytes: number; cpu_seconds: number }>('/bench/memory');
  if (process.env.BENCH_DEBUG) console.error('idle', idle);
  // The service's memory, sampled while it works: resident (VmRSS) and its private part (RssAnon; the rest is
  // mostly the mapped code of the embedded ClickHouse library).
  let peakRss = 0;
  let peakAnon = 0;
  // The same peaks while the senders are answered, and after (the replayer catching up on what the spool holds).
  const phasePeaks = { sending_rss: 0, sending_anon: 0 };
  let sending = true;
  const sampleMemory = () => {
    try {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      peakRss = Math.max(peakRss, Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0) * 1024);
      peakAnon = Math.max(peakAnon, Number(/^RssAnon:\s+(\d+)/m.exec(status)?.[1] ?? 0) * 1024);
      if (sending) phasePeaks.sending_rss = peakRss;
      if (sending) phasePeaks.sending_anon = peakAnon;
    } catch {
      // not Linux, or the child is gone
    }
  };
  const sampler = setInterval(sampleMemory, 20);
  const threads0 = threadCpu(child.pid!);
  const latenciesMs: number[] = [];
  const cpu0 = process.cpuUsage();
  let next = 0;
  let failures = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: SENDERS }, async () => {
      while (next < bodies.length) {
        const { body, signature } = bodies[next++];
        const started = process.hrtime.bigint();
        const res = await pool.request({
          method: 'POST',
          path: '/v1/drains/logs',
          headers: { 'content-type': 'application/x-ndjson', 'x-svc-signature': signature },
          body,
        });
        await res.body.dump();
        latenciesMs.push(Number(process.hrtime.bigint() - started) / 1e6);
        if (res.statusCode !== 200) failures++;
      }
    }),
  );
  const answeredSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
  sending = false;
  for (;;) {
    const { n } = await get<{ n: number }>('/bench/count');
    if (n >= LINES) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const visibleSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const senderCpu = process.cpuUsage(cpu0);
  const threads1 = threadCpu(child.pid!);
  clearInterval(sampler);
  sampleMemory();
  const memory = await get<{
    peak_rss_bytes: number;
    cpu_seconds: number;
    spool_commits: number;
    peak_heap_total_bytes: number;
    peak_heap_used_bytes: number;
    peak_external_bytes: number;
    peak_array_buffers_bytes: number;
    loop_delay_p99_ms: number;
    loop_delay_max_ms: number;
  }>('/bench/memory');
  const metricsText = await (await pool.request({ method: 'GET', path: '/metrics' })).body.text();
  const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metricsText)?.[1] ?? NaN);
  const replayBatches = metric('tallyhouse_drain_replay_batch_lines_count');
  const replaySeconds = metric('tallyhouse_drain_replay_batch_duration_seconds_sum');
  if (process.env.BENCH_DEBUG) console.error('after', memory);
  // The baselines need the embedded engine in the service (an INFILE is read by the process that runs chDB).
  const embedded = values.store !== 'http';
  const baseline = embedded ? await get<{ lines: number; seconds: number }>('/bench/baseline?via=file', 'POST') : { lines: NaN, seconds: NaN };
  const clientBaseline = await get<{ lines: number; seconds: number }>('/bench/baseline?via=client', 'POST');
  const logsTable = embedded ? await get<{ lines: number; seconds: number }>('/bench/logs-table', 'POST') : { lines: NaN, seconds: NaN };
  await pool.close();
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  await clickhouse?.close();
  rmSync(dataDir, { recursive: true, force: true });

  latenciesMs.sort((a, b) => a - b);
  const pct = (p: number) => Math.round(latenciesMs[Math.min(latenciesMs.length - 1, Math.floor((p / 100) * latenciesMs.length))] * 10) / 10;
  const rate = LINES / visibleSeconds;
  const storeRate = baseline.lines / baseline.seconds;
  console.log(
    JSON.stringify({
      bench: 'drain',
      store: values.store,
      lines: LINES,
      batch_lines: BATCH,
      senders: SENDERS,
      body_mb: Math.round(bytes / 1e6),
      failed_requests: failures,
      answered_seconds: Math.round(answeredSeconds * 100) / 100,
      visible_seconds: Math.round(visibleSeconds * 100) / 100,
      lines_per_second: Math.round(rate),
      store_lines_per_second: Math.round(storeRate),
      ratio: Math.round((rate / storeRate) * 100) / 100,
      store_client_path_lines_per_second: Math.round(clientBaseline.lines / clientBaseline.seconds),
      ratio_vs_client_path: Math.round((rate / (clientBaseline.lines / clientBaseline.seconds)) * 100) / 100,
      store_logs_table_lines_per_second: Math.round(logsTable.lines / logsTable.seconds),
      ratio_vs_logs_table: Math.round((rate / (logsTable.lines / logsTable.seconds)) * 100) / 100,
      service_cpu_seconds: Math.round((memory.cpu_seconds - idle.cpu_seconds) * 100) / 100,
      senders_cpu_seconds: Math.round(((senderCpu.user + senderCpu.system) / 1e6) * 100) / 100,
      replay_batches: replayBatches,
      replay_lines_per_batch: Math.round(LINES / replayBatches),
      replay_busy_seconds: Math.round(replaySeconds * 100) / 100,
      spool_commits: memory.spool_commits,
      service_cpu_seconds_by_thread: cpuByThreadName(threads0, threads1, String(child.pid)),
      // The event loop's delay from the first request until every line was visible (what an answer can wait behind).
      loop_delay_p99_ms: Math.round(memory.loop_delay_p99_ms * 10) / 10,
      loop_delay_max_ms: Math.round(memory.loop_delay_max_ms * 10) / 10,
      p50_ms: pct(50),
      p99_ms: pct(99),
      max_ms: pct(100),
      peak_rss_mb: Math.round(memory.peak_rss_bytes / 1e6),
      peak_rss_sampled_mb: Math.round(peakRss / 1e6),
      peak_anon_mb: Math.round(peakAnon / 1e6),
      peak_rss_while_sending_mb: Math.round(phasePeaks.sending_rss / 1e6),
      peak_anon_while_sending_mb: Math.round(phasePeaks.sending_anon / 1e6),
      peak_heap_total_mb: Math.round(memory.peak_heap_total_bytes / 1e6),
      peak_heap_used_mb: Math.round(memory.peak_heap_used_bytes / 1e6),
      peak_external_mb: Math.round(memory.peak_external_bytes / 1e6),
      peak_array_buffers_mb: Math.round(memory.peak_array_buffers_bytes / 1e6),
      idle_rss_mb: Math.round(idle.rss_bytes / 1e6),
      idle_anon_mb: Math.round(idle.anon_bytes / 1e6),
    }),
  );
}

await (values.role === 'serve' ? serve() : main());
