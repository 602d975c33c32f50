// wall-clock-file: a soak run is timed on the machine's clock (deadlines, phases); it asserts no date
// The soak (issue 19): the simulator with faults and a fast clock pushes drain batches, webhooks and front-end
// telemetry through a load balancer to two Tallyhouse instances (COLLECTOR_SHARD 0/2 and 1/2) sharing one store
// (the test ClickHouse endpoint in a process of its own). Instances are SIGKILLed and restarted, the store is
// stopped and started. At the end the clock stops, every job catches up, and every table is compared with the
// simulator's truth: one JSON line, each difference under a key ending in `_diff`.
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { DateTime } from 'luxon';
import { startSim, type Sim } from '../../src/sim/index.js';
import { mulberry32 } from '../../src/sim/prng.js';
import { decimalToScaled } from '../../src/values.js';
import { allJobs } from '../../jobs/index.js';
import { jobCronVariable } from '../../src/config.js';
import { runCli, type Spawned } from '../support/process.js';
import { freePort } from '../support/prometheus.js';

export interface SoakOptions {
  seed: number;
  /** Wall time of the faulty part, ms (the catch-up and the comparison come after). */
  durationMs: number;
  faultRate: number;
  /** Platform time per wall second, ms (default a day per 90 s). */
  speed?: number;
  /** Wall time of each store outage, ms (default 60 s). */
  outageMs?: number;
  /** Store outages (default 2) and instance kills (default 6). */
  outages?: number;
  kills?: number;
  apps?: number;
  /** Where the instances' output goes (default: kept in memory, printed when something fails). */
  log?: (line: string) => void;
}

export interface SoakResult {
  [key: string]: number | string | boolean;
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
/** The logs job leaves the newest minutes to the drain (its --settle-minutes, 5): logs are compared up to this far before the end. */
const LOGS_SETTLE_MS = 10 * MINUTE;
const FARO_KEY = 'soak-front-end-key-0123456789abcdef';
/** The drain URL's secret segment (LOG_DRAIN_URL_TOKEN): the soak runs the recommended setup. */
const DRAIN_URL_TOKEN = 'soak-drain-url-token-0123456789';

/**
 * Where the platform clock starts: midnight UTC far enough back that the fast clock ends a day before the wall clock.
 * Lines must not come from the future: the drain replayer takes a line younger than a wall-clock minute for one
 * the logs job cannot have filled from history yet, and the logs table's TTL (30 days) must keep them all.
 */
function startOfPlatform(durationMs: number, speed: number): Date {
  const span = (durationMs / 1000) * speed + 2 * DAY; // the faulty part, and room for the catch-up
  const start = Math.floor((Date.now() - span) / DAY) * DAY;
  if (Date.now() - start > 28 * DAY) throw new Error(`--duration too long for this speed: ${Math.round(span / DAY)} platform days would outlive the logs TTL (30 days)`);
  return new Date(start);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The store process: the test ClickHouse endpoint over chDB, stopped and started on request. */
class StoreProcess {
  private constructor(private readonly child: ChildProcess, readonly url: string) {}

  static async start(dataDir: string, port: number): Promise<StoreProcess> {
    const child = fork(join(ROOT, 'test/soak/store-process.ts'), [dataDir, String(port)], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const url = await new Promise<string>((resolve, reject) => {
      child.once('message', (m: { ready?: string }) => (m.ready ? resolve(m.ready) : reject(new Error(JSON.stringify(m)))));
      child.once('exit', (code) => reject(new Error(`the store process exited (${code}) before it listened`)));
    });
    return new StoreProcess(child, url);
  }

  private command(cmd: 'stop' | 'start' | 'close'): Promise<void> {
    return new Promise((resolve, reject) => {
      this.child.once('message', (m: { ok?: string; error?: string }) => (m.ok === cmd ? resolve() : reject(new Error(m.error ?? JSON.stringify(m)))));
      this.child.send({ cmd });
    });
  }

  stop = () => this.command('stop');
  start = () => this.command('start');
  async close(): Promise<void> {
    await this.command('close').catch(() => this.child.kill('SIGKILL'));
  }
}

/**
 * A round-robin load balancer in front of the instances. A request that cannot connect goes to the next instance
 * (nothing was sent); one that fails after it was sent is answered 502, as a proxy that does not retry a POST.
 */
class LoadBalancer {
  private next = 0;
  private server!: http.Server;
  url = '';
  readonly stats = { forwarded: 0, failedOver: 0, unanswered: 0 };

  constructor(private readonly ports: () => number[]) {}

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const ports = this.ports();
    const first = this.next++;
    for (let i = 0; i < ports.length; i++) {
      const port = ports[(first + i) % ports.length];
      const outcome = await this.forward(port, req, body, res);
      if (outcome === 'answered') {
        this.stats.forwarded++;
        return;
      }
      if (outcome === 'sent') break;
      this.stats.failedOver++;
    }
    this.stats.unanswered++;
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end('no instance answered');
    else res.destroy();
  }

  /** 'refused': never connected (try another); 'sent': failed after sending (answer 502); 'answered'. */
  private forward(port: number, req: http.IncomingMessage, body: Buffer, res: http.ServerResponse): Promise<'refused' | 'sent' | 'answered'> {
    return new Promise((resolve) => {
      let connected = false;
      const headers = { ...req.headers, host: `127.0.0.1:${port}`, 'content-length': String(body.length) };
      const out = http.request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers, timeout: 30_000 }, (answer) => {
        const parts: Buffer[] = [];
        answer.on('data', (d: Buffer) => parts.push(d));
        answer.on('end', () => {
          res.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(parts));
          resolve('answered');
        });
        answer.on('error', () => resolve('sent'));
      });
      // A kept-alive socket is connected already; a new one says so once it is.
      out.on('socket', (s) => (s.connecting ? s.once('connect', () => (connected = true)) : (connected = true)));
      out.on('timeout', () => out.destroy(new Error('timeout')));
      out.on('error', () => resolve(connected ? 'sent' : 'refused'));
      out.end(body);
    });
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

interface Instance {
  index: number;
  port: number;
  dataDir: string;
  proc?: Spawned;
  restarts: number;
}

/** Every job on a fast schedule: each job runs every few seconds of wall time (many platform minutes). */
function fastSchedules(): Record<string, string> {
  const env: Record<string, string> = {};
  allJobs.forEach((job, i) => {
    env[jobCronVariable(job.name)] = `${i % 3}-59/3 * * * * *`;
  });
  return env;
}

/** Counters of one instance's /metrics: `name{labels}` → value. */
async function metrics(port: number): Promise<Map<string, number>> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  const text = await res.text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

export async function runSoak(opts: SoakOptions): Promise<SoakResult> {
  const log = opts.log ?? (() => undefined);
  const rand = mulberry32(opts.seed); // the schedule of kills and outages follows the seed
  const speed = opts.speed ?? DAY / 90;
  const work = mkdtempSync(join(tmpdir(), 'tallyhouse-soak-'));
  const started = Date.now();
  const phase = (what: string) => log(`[soak +${((Date.now() - started) / 1000).toFixed(1)}s] ${what}`);

  const store = await StoreProcess.start(join(work, 'store'), await freePort());
  const sim = await startSim({
    seed: opts.seed,
    now: startOfPlatform(opts.durationMs, speed),
    days: 3,
    apps: opts.apps ?? 6,
    faultRate: opts.faultRate,
    slowMs: 1_500,
    webhookBackoffBaseMs: 200,
    webhookMaxBackoffMs: 5_000,
    webhookTimeoutMs: 10_000,
    drainMalformedRate: 0,
    requestLogLimit: 0,
  });
  const instances: Instance[] = [0, 1].map((index) => ({ index, port: 0, dataDir: join(work, `instance-${index}`), restarts: 0 }));
  for (const i of instances) i.port = await freePort();
  const up = new Set<number>();
  const lb = new LoadBalancer(() => instances.filter((i) => up.has(i.index)).map((i) => i.port));
  await lb.start();

  /** What a supervisor (compose's `restart:`, Kubernetes) does: starts the instance again when it exits while starting. */
  let supervisorRestarts = 0;
  const startInstance = async (i: Instance): Promise<void> => {
    const deadline = Date.now() + 300_000;
    for (;;) {
      i.proc = runCli(['serve'], {
        NODE_ENV: 'production',
        LOG_LEVEL: 'warn',
        HOST: '127.0.0.1',
        PORT: String(i.port),
        DATA_DIR: i.dataDir,
        CLICKHOUSE_URL: store.url,
        SVC_BASE_URL: sim.url,
        SVC_API_KEY: sim.keys.api,
        SVC_ADMIN_KEY: sim.keys.admin,
        PLATFORM_CLOCK: 'simulator',
        COLLECTOR_SHARD: `${i.index}/2`,
        LOG_DRAIN_SECRET: sim.drain.secret,
        LOG_DRAIN_URL_TOKEN: DRAIN_URL_TOKEN,
        FARO_APP_KEYS: `demo-web=${FARO_KEY}`,
        FARO_RATE_LIMIT_PER_SECOND: '100000',
        SCRAPE_SELF: 'false',
        WRITER_FLUSH_INTERVAL_MS: '200',
        SHUTDOWN_TIMEOUT_MS: '30000',
        ...fastSchedules(),
      });
      const proc = i.proc;
      proc.child.stderr!.on('data', (d: Buffer) => log(`[instance ${i.index}] ${d.toString().trimEnd()}`));
      // Ready: migrated and the store reachable. Started during a store outage, it gives up after
      // CLICKHOUSE_CONNECT_TIMEOUT_MS (30 s) and exits 1, naming the store: then it is started again.
      for (;;) {
        if (proc.child.exitCode !== null) break;
        const ready = await fetch(`http://127.0.0.1:${i.port}/readyz`).then((r) => r.ok, () => false);
        if (ready) {
          up.add(i.index);
          return;
        }
        if (Date.now() > deadline) throw new Error(`instance ${i.index} not ready after 300 s:\n${proc.stderr().slice(-4000)}`);
        await sleep(200);
      }
      if (Date.now() > deadline) throw new Error(`instance ${i.index} kept exiting while starting:\n${proc.stderr().slice(-4000)}`);
      supervisorRestarts++;
      log(`[soak] instance ${i.index} exited (${proc.child.exitCode}) while starting; starting it again: ${proc.stderr().trim().split('\n').pop()}`);
      await sleep(1_000);
    }
  };
  const kill = async (i: Instance): Promise<void> => {
    up.delete(i.index);
    i.proc?.child.kill('SIGKILL');
    await i.proc?.exited;
  };

  const result: SoakResult = { seed: opts.seed, fault_rate: opts.faultRate };
  let clockTimer: NodeJS.Timeout | undefined;
  try {
    // Instance 0 applies the migrations; instance 1 waits for them (ARCHITECTURE.md, several instances).
    phase(`store ${store.url}, simulator ${sim.url}, load balancer ${lb.url}`);
    await Promise.all(instances.map((i) => startInstance(i)));
    phase('both instances listening');
    sim.drain.setUrl(`${lb.url}/v1/drains/logs/${DRAIN_URL_TOKEN}`);
    sim.webhooks.setUrl(`${lb.url}/v1/webhooks/queue`);
    sim.frontEnd.setTarget({ url: `${lb.url}/v1/faro/collect`, key: FARO_KEY, record: true });
    const t0 = sim.clock.now().getTime();

    // The clock runs fast: every 250 ms of wall time, `speed / 4` of platform time.
    clockTimer = setInterval(() => sim.clock.advance(speed / 4), 250);

    // The faults' schedule, drawn from the seed: kills spread over the run, outages in its second and fourth fifths.
    const kills = opts.kills ?? 6;
    const outages = opts.outages ?? 2;
    const outageMs = opts.outageMs ?? 60_000;
    const events: Array<{ at: number; what: 'kill' | 'outage'; instance?: number }> = [];
    for (let k = 0; k < kills; k++) events.push({ at: opts.durationMs * (0.05 + 0.85 * ((k + rand()) / kills)), what: 'kill', instance: Math.floor(rand() * 2) });
    for (let o = 0; o < outages; o++) events.push({ at: opts.durationMs * (0.15 + (0.7 * o) / Math.max(1, outages)) + rand() * 5_000, what: 'outage' });
    events.sort((a, b) => a.at - b.at);

    let restarts = 0;
    let storeOutages = 0;
    const pending: Array<Promise<void>> = [];
    const begin = Date.now();
    for (const e of events) {
      await sleep(Math.max(0, begin + e.at - Date.now()));
      if (e.what === 'kill') {
        // One instance at a time: the load balancer always has one to send to (a restart waits for the store).
        const victim = instances[e.instance!];
        const other = instances[1 - e.instance!];
        for (const deadline = Date.now() + 300_000; !(up.has(victim.index) && up.has(other.index)); ) {
          if (Date.now() > deadline) throw new Error('an instance did not come back within 300 s of its restart');
          await sleep(200);
        }
        phase(`SIGKILL instance ${victim.index}`);
        await kill(victim);
        restarts++;
        victim.restarts++;
        pending.push(
          sleep(1_000 + rand() * 3_000).then(async () => {
            await startInstance(victim);
            phase(`instance ${victim.index} restarted`);
          }),
        );
      } else {
        phase(`store down for ${outageMs / 1000} s`);
        await store.stop();
        storeOutages++;
        pending.push(
          sleep(outageMs).then(async () => {
            await store.start();
            phase('store up');
          }),
        );
      }
    }
    await sleep(Math.max(0, begin + opts.durationMs - Date.now()));
    await Promise.all(pending);

    // The end: faults off, the clock stops, what the platform still pushes arrives.
    clearInterval(clockTimer);
    clockTimer = undefined;
    sim.setFaults(0);
    const tEnd = sim.clock.now().getTime();
    phase(`clock stopped at ${new Date(tEnd).toISOString()} (${((tEnd - t0) / DAY).toFixed(2)} platform days)`);
    await Promise.all([sim.drain.idle(), sim.webhooks.idle(), sim.frontEnd.idle()]);

    // Catch-up: every job of each instance succeeds twice more (the second run started after the clock stopped,
    // and after the instances read the stopped clock), and each spool is empty.
    await sleep(1_500);
    for (const i of instances) {
      const before = await metrics(i.port);
      const jobs = [...before.keys()].filter((k) => k.startsWith('tallyhouse_job_interval_seconds{')).map((k) => /job_name="([^"]+)"/.exec(k)![1]);
      const okRuns = (m: Map<string, number>, job: string) => m.get(`tallyhouse_job_runs_total{job_name="${job}",status="ok"}`) ?? 0;
      const deadline = Date.now() + 600_000;
      for (;;) {
        const now = await metrics(i.port);
        const behind = jobs.filter((j) => okRuns(now, j) < okRuns(before, j) + 2);
        const spooled = (now.get('tallyhouse_drain_spool_bytes') ?? 0) + (now.get('tallyhouse_faro_spool_bytes') ?? 0);
        if (behind.length === 0 && spooled === 0) break;
        if (Date.now() > deadline) throw new Error(`instance ${i.index}: jobs not caught up after 10 minutes: ${behind.join(', ')}; spooled ${spooled} bytes`);
        await sleep(500);
      }
    }
    phase('every job caught up');

    const client = createClient({ url: store.url, database: 'tallyhouse', request_timeout: 300_000 });
    try {
      Object.assign(result, await compare(client, sim, t0, tEnd, (line) => log(`[soak] ${line}`)));
    } finally {
      await client.close();
    }
    Object.assign(result, {
      platform_days: Number(((tEnd - t0) / DAY).toFixed(2)),
      restarts,
      supervisor_restarts: supervisorRestarts,
      store_outages: storeOutages,
      outage_seconds: outageMs / 1000,
      drain_disabled: sim.drain.disabled,
      faults_injected: Object.values(sim.stats().faultsInjected).reduce((a, b) => a + b, 0),
      lb_failed_over: lb.stats.failedOver,
      lb_unanswered: lb.stats.unanswered,
      wall_seconds: Math.round((Date.now() - started) / 1000),
    });
    return result;
  } finally {
    if (clockTimer) clearInterval(clockTimer);
    for (const i of instances) {
      up.delete(i.index);
      if (i.proc && i.proc.child.exitCode === null && i.proc.child.signalCode === null) {
        i.proc.child.kill('SIGTERM');
        await Promise.race([i.proc.exited, sleep(30_000)]);
        i.proc.child.kill('SIGKILL');
      }
    }
    await lb.close();
    await sim.close();
    await store.close();
    rmSync(work, { recursive: true, force: true });
  }
}

type Rows = Array<Record<string, string>>;
const query = async (client: ClickHouseClient, sql: string, params: Record<string, unknown> = {}): Promise<Rows> =>
  (await client.query({ query: sql, query_params: params, format: 'JSONEachRow' })).json<Record<string, string>>();

const chTime = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

/** Sum of |a - b| over the union of keys. */
function absDiff(a: Map<string, bigint>, b: Map<string, bigint>): bigint {
  let d = 0n;
  for (const k of new Set([...a.keys(), ...b.keys()])) {
    const x = (a.get(k) ?? 0n) - (b.get(k) ?? 0n);
    d += x < 0n ? -x : x;
  }
  return d;
}

/** Keys of `a` not in `b` (counted with multiplicity), and keys seen more than once in `a`. */
function multisetDiff(a: string[], b: string[]): { missing: number; duplicates: number } {
  const inB = new Map<string, number>();
  for (const k of b) inB.set(k, (inB.get(k) ?? 0) + 1);
  const inA = new Map<string, number>();
  for (const k of a) inA.set(k, (inA.get(k) ?? 0) + 1);
  let missing = 0;
  let duplicates = 0;
  for (const [k, n] of inA) {
    missing += Math.max(0, n - (inB.get(k) ?? 0));
    if (n > 1) duplicates += n - 1;
  }
  return { missing, duplicates };
}

const addTo = (m: Map<string, bigint>, k: string, v: bigint) => m.set(k, (m.get(k) ?? 0n) + v);

/** Every table against the truth, the clock stopped at tEnd. */
async function compare(client: ClickHouseClient, sim: Sim, t0: number, tEnd: number, log: (line: string) => void): Promise<SoakResult> {
  const out: SoakResult = {};
  const monthStart = DateTime.fromMillis(t0, { zone: 'UTC' }).startOf('month');
  const from = monthStart.toISO()!;
  const to = new Date(tEnd).toISOString();

  // Usage cost per UTC day, app and machine type, and model-API cost per UTC day, endpoint and currency, in
  // nano-dollars (the platform's own numbers).
  const cost = async (
    truthRows: Array<{ bucket: string | null; cost_total_nanos: bigint | number | string }>,
    truthKey: (r: any) => string,
    table: string,
    columns: string,
  ): Promise<{ truth: Map<string, bigint>; diff: bigint }> => {
    const truth = new Map<string, bigint>();
    for (const r of truthRows) addTo(truth, `${r.bucket!.slice(0, 10)}|${truthKey(r)}`, BigInt(r.cost_total_nanos));
    const stored = new Map<string, bigint>();
    const names = columns.split(', ');
    for (const r of await query(client, `SELECT toString(bucket_date) AS day, ${columns}, toString(sum(cost_total)) AS cost FROM ${table} FINAL
        WHERE timezone = 'UTC' AND timeframe = 'day' AND bucket_date >= {from:Date} GROUP BY day, ${columns}`, { from: monthStart.toISODate() })) {
      addTo(stored, [r.day, ...names.map((c) => r[c])].join('|'), decimalToScaled(r.cost, 9));
    }
    return { truth, diff: absDiff(truth, stored) };
  };
  const usage = await cost(sim.truth.usage({ from, to, timezone: 'UTC', timeframe: 'day' }), (r) => `${r.app}|${r.machine_type}`, 'usage_buckets', 'app, machine_type');
  const usageTruth = usage.truth;
  out.usage_cost_nanos = String([...usageTruth.values()].reduce((a, b) => a + b, 0n));
  out.usage_cost_diff = Number(usage.diff);
  const models = await cost(sim.truth.modelUsage({ from, to, timezone: 'UTC', timeframe: 'day' }), (r) => `${r.endpoint_id}|${r.currency}`, 'model_usage_buckets', 'endpoint_id, currency');
  const modelTruth = models.truth;
  out.model_cost_nanos = String([...modelTruth.values()].reduce((a, b) => a + b, 0n));
  out.model_cost_diff = Number(models.diff);

  // Requests that ended during the soak: each once, with its billable units.
  // An app's endpoint id covers its routes' requests (a route's own id would count them twice).
  const owned = sim.truth.apps().filter((a) => a.owned_by_caller).map((a) => a.endpoint_id);
  const requestTruth = owned.flatMap((id) => sim.truth.requestList({ endpointId: id, from: new Date(t0).toISOString(), to }));
  const requestRows = await query(client, `SELECT request_id, toString(billable_units) AS units, count() AS n FROM requests FINAL
      WHERE ended_at >= {from:DateTime64(3, 'UTC')} AND ended_at < {to:DateTime64(3, 'UTC')} GROUP BY request_id, units`, { from: chTime(t0), to: chTime(tEnd) });
  const storedUnits = new Map(requestRows.map((r) => [r.request_id, r.units]));
  out.requests = requestTruth.length;
  out.request_count_diff = Math.abs(requestTruth.length - new Set(requestRows.map((r) => r.request_id)).size) +
    requestTruth.filter((r) => !storedUnits.has(r.request_id)).length;
  // Units the platform had billed by the end; a request billed later reads null (as the platform answers it).
  const unitsAtEnd = (r: (typeof requestTruth)[number]) => (Date.parse(r.billed_at) <= tEnd ? r.billable_units : null);
  const unitsWrong = requestTruth.filter((r) => {
    if (!storedUnits.has(r.request_id)) return false;
    const stored = storedUnits.get(r.request_id);
    const expected = unitsAtEnd(r);
    return expected === null ? stored !== null : stored === null || Number(stored) !== expected;
  });
  out.requests_unbilled_at_end = requestTruth.filter((r) => unitsAtEnd(r) === null).length;
  out.billable_units_diff = unitsWrong.length;
  for (const r of unitsWrong.slice(0, 3)) log(`billable units differ: ${r.request_id} ended ${r.ended_at}: truth ${unitsAtEnd(r)}, stored ${storedUnits.get(r.request_id)}`);
  for (const r of requestTruth.filter((t) => !storedUnits.has(t.request_id)).slice(0, 3)) log(`request not stored: ${JSON.stringify(r)}`);

  // Log records of the soak (but the newest minutes, left to the drain): each stored once.
  const logsTo = tEnd - LOGS_SETTLE_MS;
  const logKey = (ts: string, app: unknown, requestId: unknown, worker: unknown, message: unknown) => JSON.stringify([ts, app, requestId, worker, message]);
  const logTruth = sim.truth.logRecords({ from: new Date(t0).toISOString(), to: new Date(logsTo).toISOString() })
    .map((r) => logKey(String(r.timestamp).slice(0, 23).replace('T', ' '), r.svc_app_name, r.svc_request_id ?? '', r.svc_worker_id ?? '', r.message));
  // As the query API reads them (FINAL: copies of a record are rows until a merge collapses them, sql/023).
  const logRows = await query(client, `SELECT toString(timestamp) AS ts, app, request_id, worker, message FROM logs FINAL
      WHERE timestamp >= {from:DateTime64(3, 'UTC')} AND timestamp < {to:DateTime64(3, 'UTC')}`, { from: chTime(t0), to: chTime(logsTo) });
  const logStored = logRows.map((r) => logKey(r.ts, r.app, r.request_id, r.worker, r.message));
  const logsLost = multisetDiff(logTruth, logStored);
  const logsExtra = multisetDiff(logStored, logTruth);
  for (const r of await query(client, `SELECT origin, count() AS n FROM logs FINAL WHERE timestamp >= {from:DateTime64(3, 'UTC')} AND timestamp < {to:DateTime64(3, 'UTC')} GROUP BY origin`, { from: chTime(t0), to: chTime(logsTo) })) {
    out[`log_records_by_${r.origin}`] = Number(r.n);
  }
  out.log_records_sent = logTruth.length;
  out.log_records_stored = logStored.length;
  out.log_records_lost_diff = logsLost.missing;
  out.log_records_unexpected_diff = logsExtra.missing;
  out.log_duplicates_diff = logsExtra.duplicates - logsLost.duplicates;

  // Webhooks the platform saw delivered (answered 200) against webhook_deliveries.
  const sent = sim.webhooks.sent();
  const delivered = new Set(sent.filter((d) => d.outcome === 'delivered').map((d) => d.requestId));
  const sentIds = new Set(sent.map((d) => d.requestId));
  const hookRows = await query(client, 'SELECT request_id, count() AS n FROM webhook_deliveries FINAL GROUP BY request_id');
  const hooksStored = new Set(hookRows.map((r) => r.request_id));
  out.webhooks_delivered = delivered.size;
  out.webhooks_stored = hooksStored.size;
  out.webhooks_lost_diff = [...delivered].filter((id) => !hooksStored.has(id)).length;
  out.webhooks_unexpected_diff = [...hooksStored].filter((id) => !sentIds.has(id)).length;
  out.webhook_duplicates_diff = hookRows.filter((r) => Number(r.n) > 1).length;

  // Front-end telemetry: every item of a payload answered 202 is stored once; nothing stored was never sent.
  const itemKeys = (p: Record<string, unknown>): string[] => {
    const session = String(((p.meta as { session?: { id?: string } })?.session?.id) ?? '');
    const events = (p.events as Array<{ attributes: { request_id: string } }> | undefined) ?? [];
    const exceptions = (p.exceptions as Array<{ context: { request_id: string } }> | undefined) ?? [];
    return [...events.map((e) => `${session}|event|${e.attributes.request_id}`), ...exceptions.map((e) => `${session}|exception|${e.context.request_id}`)];
  };
  const payloads = sim.frontEnd.sent();
  const accepted = payloads.filter((p) => p.status !== null && p.status >= 200 && p.status < 300).flatMap((p) => itemKeys(p.payload));
  const everSent = new Set(payloads.flatMap((p) => itemKeys(p.payload)));
  const faroRows = await query(client, "SELECT session_id, kind, request_id FROM faro_items WHERE kind IN ('event', 'exception')");
  const faroStored = faroRows.map((r) => `${r.session_id}|${r.kind}|${r.request_id}`);
  const faroLost = multisetDiff(accepted, faroStored);
  out.telemetry_accepted = accepted.length;
  out.telemetry_stored = faroStored.length;
  out.telemetry_lost_diff = faroLost.missing;
  out.telemetry_unexpected_diff = faroStored.filter((k) => !everSent.has(k)).length;
  out.telemetry_duplicates_diff = multisetDiff(faroStored, []).duplicates;
  out.telemetry_unanswered = payloads.filter((p) => p.status === null || p.status >= 300).length;

  // A comparison with an empty truth proves nothing (CONTRIBUTING.md, Tests): each kind must have had something.
  const empty = Object.entries({
    usage: usageTruth.size, models: modelTruth.size, requests: requestTruth.length, logs: logTruth.length,
    webhooks: delivered.size, telemetry: accepted.length,
  }).filter(([, n]) => n === 0).map(([k]) => k);
  if (empty.length > 0) log(`nothing to compare for ${empty.join(', ')} (this seed's world has none: choose another seed or more apps)`);
  out.empty_truth_diff = empty.length;
  return out;
}

/** The differences that are not zero. */
export const nonZeroDiffs = (r: SoakResult): string[] => Object.keys(r).filter((k) => k.endsWith('_diff') && r[k] !== 0);
