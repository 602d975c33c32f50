// App metrics exposition (Prometheus text 0.0.4) computed at the virtual "now" from the same runners and
// requests as the other endpoints. prom-client renders the text; a fresh registry per scrape keeps it stateless.
import { Gauge, Registry } from 'prom-client';
import type { App, World } from './world.js';
import type { RunnerModel } from './runners.js';
import { historyClass } from './runners.js';
import type { RequestModel, Req } from './requests.js';
import { HOUR_MS } from './time.js';
import { Rng, hash4, unit, hash5 } from './prng.js';
import type { CacheSize, SimCaches } from './caches.js';

const LATENCY_BUCKETS = ['0.1', '0.5', '1', '2.5', '5', '10', '30', '60', '+Inf'];

/** Queue backlog of an app at a moment: a function of the load in that hour, stable within a minute. */
export function queueSize(world: World, runners: RunnerModel, app: App, nowMs: number): number {
  const hour = Math.floor(nowMs / HOUR_MS);
  const load = runners.of(app).load(hour);
  if (load === 0) return 0;
  return new Rng(hash4(world.seed, 0x9ee, app.index, Math.floor(nowMs / 60_000))).poisson(load / 120);
}

/** Requests of an app whose end (or start) falls in [fromMs, toMs). */
function appRequests(requests: RequestModel, app: App, fromMs: number, toMs: number, by: 'ended' | 'started'): Req[] {
  const out: Req[] = [];
  for (const ep of app.endpoints) {
    // A request's start can precede its hour by its prepare time (≤ 8 s), so look one hour further.
    const lastHour = Math.floor((toMs - 1) / HOUR_MS) + (by === 'started' ? 1 : 0);
    for (let h = Math.floor(fromMs / HOUR_MS); h <= lastHour; h++) {
      for (const r of requests.hour(ep, h)) {
        const t = by === 'ended' ? r.endedMs : r.startedMs;
        if (t >= fromMs && t < toMs) out.push(r);
      }
    }
  }
  return out;
}

export function inFlight(requests: RequestModel, app: App, nowMs: number): number {
  let n = 0;
  const hour = Math.floor(nowMs / HOUR_MS);
  for (const ep of app.endpoints) for (const r of requests.hour(ep, hour)) if (r.sentMs <= nowMs && r.endedMs > nowMs) n++;
  return n;
}

export function activeRunners(runners: RunnerModel, app: App, nowMs: number): number {
  const ar = runners.of(app);
  let n = 0;
  for (const rn of ar.runnersOverlapping(nowMs, nowMs + 1)) {
    const s = ar.stateAt(rn, nowMs);
    if (s && (s.state === 'running' || s.state === 'IDLE')) n++;
  }
  return n;
}

/** The simulator's own memory: what a year of serving must keep flat. */
export interface SimMemory {
  rssBytes: number;
  heapUsedBytes: number;
  caches: CacheSize[];
}

export function simMemory(caches: SimCaches): SimMemory {
  const m = process.memoryUsage();
  return { rssBytes: m.rss, heapUsedBytes: m.heapUsed, caches: caches.sizes() };
}

/**
 * The platform's app metrics at `nowMs`; with `self`, also the simulator's own memory (`sim_*` families). Those
 * vary from run to run, so only a standalone simulator adds them (in-process answers stay byte for byte).
 */
export async function renderMetrics(world: World, runners: RunnerModel, requests: RequestModel, nowMs: number, self?: SimMemory): Promise<{ text: string; contentType: string }> {
  const registry = new Registry();
  const g = (name: string, help: string, labelNames: string[]): Gauge<string> => new Gauge({ name, help, labelNames, registers: [registry] });
  const runnersG = g('svc_app_runners', 'Number of runners currently allocated, by state', ['application', 'state', 'machine_type']);
  const queueG = g('svc_app_queue_size', 'Requests waiting in queue', ['application']);
  const concurrentG = g('svc_app_concurrent_requests', 'Requests being actively processed', ['application']);
  const completedG = g('svc_app_requests_completed', 'Requests completed in the last minute', ['application', 'method', 'status']);
  const receivedG = g('svc_app_requests_received', 'Requests received in the last minute', ['application', 'method']);
  const latencyG = g('svc_app_request_latency', 'Requests completed in the last minute, cumulative by latency (seconds)', ['application', 'le']);
  const cpuG = g('svc_app_runners_cpu_usage_sum', 'CPU cores in use, summed over the app runners', ['application']);
  const memG = g('svc_app_runners_memory_usage_bytes_sum', 'Memory in use, summed over the app runners', ['application']);
  const gpuG = g('svc_app_runners_gpu_usage_sum', 'GPU utilisation (0-1 per GPU), summed over the app runners', ['application']);
  const vramG = g('svc_app_runners_vram_usage_bytes_sum', 'GPU memory in use, summed over the app runners', ['application']);

  for (const app of world.apps) {
    if (!app.ownedByCaller) continue;
    const application = app.endpointId;
    const ar = runners.of(app);
    const counts = new Map<string, number>();
    for (const mt of app.machineTypes) for (const st of ['running', 'idle', 'pending', 'draining']) counts.set(`${mt}|${st}`, 0);
    let cpu = 0;
    let mem = 0;
    let gpu = 0;
    let vram = 0;
    for (const rn of ar.runnersOverlapping(nowMs, nowMs + 1)) {
      const s = ar.stateAt(rn, nowMs);
      const cls = s ? historyClass(s.state) : null;
      if (!s || !cls) continue;
      counts.set(`${rn.machineType}|${cls}`, (counts.get(`${rn.machineType}|${cls}`) ?? 0) + 1);
      if (cls === 'pending' && s.state === 'PENDING') continue; // no machine attached yet
      const mt = world.machineTypeByName.get(rn.machineType)!;
      const busy = cls === 'running' ? 0.55 + 0.4 * unit(hash5(world.seed, rn.key, Math.floor(nowMs / 60_000), 1, 0)) : 0.05;
      cpu += Math.round(mt.cpuCores * busy * 1000) / 1000;
      mem += Math.round(mt.memoryBytes * (0.2 + busy * 0.5));
      gpu += mt.gpuCount * Math.round(busy * 1000) / 1000;
      vram += Math.round(mt.vramBytes * (cls === 'running' || cls === 'idle' ? 0.6 : 0.1));
    }
    for (const [key, v] of [...counts].sort()) {
      const [machine_type, state] = key.split('|');
      runnersG.set({ application, state, machine_type }, v);
    }
    queueG.set({ application }, queueSize(world, runners, app, nowMs));
    concurrentG.set({ application }, inFlight(requests, app, nowMs));
    const done = appRequests(requests, app, nowMs - 60_000, nowMs, 'ended');
    const byStatus = new Map<string, number>();
    for (const r of done) byStatus.set(String(r.statusCode), (byStatus.get(String(r.statusCode)) ?? 0) + 1);
    for (const [status, v] of [...byStatus].sort()) completedG.set({ application, method: 'POST', status }, v);
    receivedG.set({ application, method: 'POST' }, appRequests(requests, app, nowMs - 60_000, nowMs, 'started').length);
    for (const le of LATENCY_BUCKETS) {
      const limitMs = le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le) * 1000;
      latencyG.set({ application, le }, done.filter((r) => r.durationMs <= limitMs).length);
    }
    cpuG.set({ application }, Math.round(cpu * 1000) / 1000);
    memG.set({ application }, mem);
    gpuG.set({ application }, Math.round(gpu * 1000) / 1000);
    vramG.set({ application }, vram);
  }
  if (self) {
    g('sim_process_resident_memory_bytes', 'Resident memory of the simulator process', []).set(self.rssBytes);
    g('sim_process_heap_used_bytes', 'JavaScript heap in use in the simulator process', []).set(self.heapUsedBytes);
    const entries = g('sim_cache_entries', 'Entries held by a cache of generated data', ['cache']);
    const size = g('sim_cache_size', 'What a cache of generated data holds, in its unit (records, runners, rows, lines)', ['cache']);
    for (const c of self.caches) {
      entries.set({ cache: c.name }, c.entries);
      size.set({ cache: c.name }, c.size);
    }
  }
  return { text: await registry.metrics(), contentType: registry.contentType };
}
