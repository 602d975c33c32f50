// Per-runner resource metrics (GET /metrics/runners/{runner_id}) and what right-sizing should find. Each app
// runs one model whose weights take a fixed amount of VRAM per GPU once the runner is ready (a pure function of
// the seed and the app, drawn from its own hash so the rest of the world is unchanged); a planted share of GPU
// apps is over-provisioned: its model needs a small part of its machine's VRAM.
import { Gauge, Registry } from 'prom-client';
import type { App, World } from './world.js';
import type { Runner, RunnerModel } from './runners.js';
import { hash3, hash5, unit } from './prng.js';

const GIB = 2 ** 30;

export interface ModelFootprint {
  /** VRAM the loaded model uses on each GPU (bytes); 0 on a CPU machine. */
  vramNeedBytes: number;
  /** Planted: the model needs well under the VRAM of the app's machine types. */
  overProvisioned: boolean;
}

/** The VRAM each GPU of the app's runners holds once ready. Whole MiB, so every value is an exact integer. */
export function modelFootprint(world: World, app: App): ModelFootprint {
  const vrams = app.machineTypes.map((m) => world.machineTypeByName.get(m)!.vramBytes);
  const smallest = Math.min(...vrams);
  if (smallest === 0) return { vramNeedBytes: 0, overProvisioned: false };
  const h = hash3(world.seed, 0x7a3e, app.index);
  const overProvisioned = unit(h) < 0.3;
  const share = overProvisioned ? 0.1 + 0.15 * unit(hash3(world.seed, 0x7a3f, app.index)) : 0.7 + 0.2 * unit(hash3(world.seed, 0x7a40, app.index));
  // Over-provisioned models fit in 8-16 GiB whatever the machine (the smallest GPU in the catalogue has 40).
  const need = overProvisioned ? (8 + 8 * unit(hash3(world.seed, 0x7a41, app.index))) * GIB : smallest * share;
  return { vramNeedBytes: Math.floor(need / 2 ** 20) * 2 ** 20, overProvisioned };
}

export interface GpuSample {
  gpu: number;
  utilization: number;
  vramUsedBytes: number;
  vramTotalBytes: number;
}

export interface RunnerMetricsSample {
  runnerId: string;
  application: string;
  machineType: string;
  cpuSecondsTotal: number;
  memoryBytes: number;
  gpus: GpuSample[];
}

/** Finds a runner of the caller's apps alive (entered PENDING, not yet terminated) at `nowMs`. */
export function liveRunner(world: World, runners: RunnerModel, runnerId: string, nowMs: number): { app: App; runner: Runner } | null {
  for (const app of world.apps) {
    if (!app.ownedByCaller) continue;
    for (const r of runners.of(app).runnersOverlapping(nowMs, nowMs + 1)) if (r.id === runnerId) return { app, runner: r };
  }
  return null;
}

/** Every runner of the caller's apps alive at `nowMs` (the ids a complete scrape at that instant reaches). */
export function liveRunnerIds(world: World, runners: RunnerModel, nowMs: number): string[] {
  const out: string[] = [];
  for (const app of world.apps) {
    if (!app.ownedByCaller) continue;
    for (const r of runners.of(app).runnersOverlapping(nowMs, nowMs + 1)) out.push(r.id);
  }
  return out.sort();
}

/** The runner's metrics at `nowMs` (null once it has terminated or before it exists: the platform's 404). */
export function runnerMetricsAt(world: World, runners: RunnerModel, runnerId: string, nowMs: number): RunnerMetricsSample | null {
  const found = liveRunner(world, runners, runnerId, nowMs);
  if (!found) return null;
  const { app, runner } = found;
  const ar = runners.of(app);
  const mt = world.machineTypeByName.get(runner.machineType)!;
  const state = ar.stateAt(runner, nowMs)?.state ?? 'PENDING';
  // CPU seconds so far: 60 % of the cores while running, 2 % otherwise once a machine is attached.
  let cpuMilliSeconds = 0;
  for (const [s, a, b] of ar.timeline(runner)) {
    if (s === 'PENDING' || s === 'TERMINATED' || s === 'DEAD') continue;
    const e = Math.min(b, nowMs);
    if (e <= a) continue;
    cpuMilliSeconds += Math.round(((e - a) / 1000) * mt.cpuCores * (s === 'running' ? 600 : 20));
  }
  const minute = Math.floor(nowMs / 60_000);
  const busy = state === 'running' ? 0.55 + 0.4 * unit(hash5(world.seed, runner.key, minute, 7, 0)) : 0;
  const ready = state === 'running' || state === 'IDLE' || state === 'draining';
  const footprint = modelFootprint(world, app);
  const gpus: GpuSample[] = [];
  for (let g = 0; g < mt.gpuCount; g++) {
    gpus.push({
      gpu: g,
      utilization: Math.round((state === 'running' ? busy : state === 'draining' ? 0.02 : 0) * 1000) / 1000,
      vramUsedBytes: ready ? footprint.vramNeedBytes : 0,
      vramTotalBytes: mt.vramBytes / Math.max(1, mt.gpuCount),
    });
  }
  return {
    runnerId,
    application: app.endpointId,
    machineType: runner.machineType,
    cpuSecondsTotal: cpuMilliSeconds / 1000,
    memoryBytes: Math.round(mt.memoryBytes * (state === 'PENDING' ? 0 : 0.2 + busy * 0.5) / 4096) * 4096,
    gpus,
  };
}

/** The exposition of one runner: text format 0.0.4, rendered by prom-client as the app metrics are. */
export async function renderRunnerMetrics(sample: RunnerMetricsSample): Promise<{ text: string; contentType: string }> {
  const registry = new Registry();
  const labels = ['runner_id', 'application', 'machine_type'];
  const base = { runner_id: sample.runnerId, application: sample.application, machine_type: sample.machineType };
  const g = (name: string, help: string, extra: string[] = []): Gauge<string> => new Gauge({ name, help, labelNames: [...labels, ...extra], registers: [registry] });
  g('svc_runner_cpu_seconds_total', 'CPU seconds used by the runner since it started').set(base, sample.cpuSecondsTotal);
  g('svc_runner_memory_bytes', 'Memory in use by the runner').set(base, sample.memoryBytes);
  if (sample.gpus.length > 0) {
    const util = g('svc_runner_gpu_utilization', 'GPU utilisation (0-1)', ['gpu']);
    const used = g('svc_runner_vram_used_bytes', 'GPU memory in use', ['gpu']);
    const total = g('svc_runner_vram_total_bytes', 'GPU memory of the GPU', ['gpu']);
    for (const s of sample.gpus) {
      const l = { ...base, gpu: String(s.gpu) };
      util.set(l, s.utilization);
      used.set(l, s.vramUsedBytes);
      total.set(l, s.vramTotalBytes);
    }
  }
  return { text: await registry.metrics(), contentType: registry.contentType };
}

export interface RightSizingTruth {
  app: string;
  owner: string;
  machine_type: string;
  recommended_machine_type: string;
  peak_vram_bytes: number;
  planted: boolean;
  /** Machine-seconds the app ran on `machine_type` in the window. */
  quantity: number;
  /** quantity × (net price of machine_type − net price of the recommendation), non-surge, rounded half-up to nanos. */
  saving_nanos: bigint;
}

/** Net non-surge price of a machine type for an owner, in units of 1e-14 USD per machine-second (exact). */
function netPrice14(world: World, owner: string, machineType: string): bigint {
  const p = world.price(owner, machineType);
  const milli = BigInt(p.percentDiscountMilli ?? 0);
  return BigInt(p.unitPriceNanos) * (100_000n - milli);
}

/**
 * What right-sizing should recommend: for each of the caller's apps and machine type it ran on in the window,
 * the cheapest machine type among `candidates` (default: every type) whose total VRAM covers the model's peak ×
 * (1 + margin), when it is cheaper (net of the owner's discount) than the current one.
 */
export function rightSizingTruth(
  world: World,
  quantities: Array<{ app: App; machineType: string; quantity: number }>,
  opts: { margin: number; candidates?: readonly string[] },
): RightSizingTruth[] {
  const out: RightSizingTruth[] = [];
  const perKey = new Map<string, { app: App; machineType: string; quantity: number }>();
  for (const q of quantities) {
    const k = `${q.app.index}|${q.machineType}`;
    const e = perKey.get(k);
    if (e) e.quantity += q.quantity;
    else perKey.set(k, { ...q });
  }
  for (const { app, machineType, quantity } of perKey.values()) {
    const fp = modelFootprint(world, app);
    if (fp.vramNeedBytes === 0 || quantity === 0) continue;
    const required = fp.vramNeedBytes * (1 + opts.margin);
    let best: { name: string; net: bigint } | null = null;
    for (const mt of world.machineTypes) {
      if (opts.candidates && !opts.candidates.includes(mt.name)) continue;
      if (mt.vramBytes < required) continue;
      const net = netPrice14(world, app.owner, mt.name);
      if (!best || net < best.net) best = { name: mt.name, net };
    }
    const current = netPrice14(world, app.owner, machineType);
    if (!best || best.net >= current) continue;
    // 1e-14 USD → nanos: divide by 1e5, half up.
    const saving14 = BigInt(quantity) * (current - best.net);
    out.push({
      app: app.name, owner: app.owner, machine_type: machineType, recommended_machine_type: best.name,
      peak_vram_bytes: fp.vramNeedBytes, planted: fp.overProvisioned, quantity, saving_nanos: (saving14 + 50_000n) / 100_000n,
    });
  }
  return out.sort((a, b) => (a.app < b.app ? -1 : a.app > b.app ? 1 : a.machine_type < b.machine_type ? -1 : 1));
}
