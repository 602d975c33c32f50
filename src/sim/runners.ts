// Runners and load. Traffic per (endpoint, hour) is a pure function of the seed; an app's load decides how many
// runner "slots" are active in each hour; consecutive active hours of a slot are one runner's life (split by a
// periodic rotation). Requests are then placed only inside the `running` segments of those runners, so usage
// (machine-seconds of runner time), requests (runner ids), analytics and runner history all agree.
import type { App, Endpoint, World } from './world.js';
import { HOUR_MS, DAY_MS } from './time.js';
import { Rng, hash3, hash4, hash5, mix, unit, uuidFrom, hex } from './prng.js';

export type RunnerState =
  | 'PENDING' | 'DOCKER_PULL' | 'SETUP' | 'running' | 'IDLE' | 'draining' | 'CRASH_BACKOFF' | 'TERMINATED' | 'DEAD';

/** Which runner-history bucket a state counts in (null: not counted). */
export function historyClass(state: RunnerState): 'running' | 'idle' | 'pending' | 'draining' | null {
  switch (state) {
    case 'running': return 'running';
    case 'IDLE': return 'idle';
    case 'PENDING': case 'DOCKER_PULL': case 'SETUP': case 'CRASH_BACKOFF': return 'pending';
    case 'draining': return 'draining';
    default: return null;
  }
}

export interface Runner {
  id: string;
  /** Integer key for hashing. */
  key: number;
  appIndex: number;
  slot: number;
  machineType: string;
  nodeId: string;
  /** Active hours of the run this runner serves, inclusive. */
  runStartHour: number;
  runEndHour: number;
  /** True for an attempt that never became ready (CRASH_BACKOFF twice, then terminated). */
  failed: boolean;
  /** When the run's first attempt entered PENDING (cold-boot requests arrive then). */
  runStartMs: number;
  startMs: number;
  /** Billing starts when a machine is attached (DOCKER_PULL, or SETUP when the image is cached). */
  billedFromMs: number;
  readyMs: number | null;
  drainingFromMs: number | null;
  /** TERMINATED (or legacy DEAD) from here. */
  endMs: number;
  startupPhases: Array<[RunnerState, number]>;
  terminationReason: string | null;
  finalState: 'TERMINATED' | 'DEAD';
  coldBootEndpoint: number;
  coldBoots: number;
}

export interface BusySegment {
  runner: Runner;
  startMs: number;
  endMs: number;
}

const SEGMENT_MS = 600_000;
/** Shortest usable running segment; durations are capped well below it so a request always fits. */
const MIN_SEGMENT_MS = 240_000;
export const MAX_DURATION_MS = 110_000;

function diurnal(hourOfDay: number): number {
  // Mean 1 over a day; quietest around 03:00, busiest around 15:00 (shifted per app).
  return (0.3 + 0.35 * (1 + Math.cos((2 * Math.PI * (hourOfDay - 15)) / 24))) / 0.65;
}

/** Requests (excluding cold-boot arrivals) of an endpoint that end in a given UTC hour. */
export function requestCount(world: World, ep: Endpoint, hour: number): number {
  if (hour < world.historyStartHour) return 0;
  let mean: number;
  if (ep.isModel) {
    mean = (world.requestsPerHour / 4) * ep.weight * diurnal(((hour % 24) + 24) % 24);
  } else {
    const app = world.apps[ep.appIndex];
    const day = Math.floor((hour * HOUR_MS) / DAY_MS);
    if (app.dormancy > 0 && unit(hash3(world.seed, 0xd0a, app.index * 100_003 + day)) < app.dormancy) return 0;
    const hod = (((hour + app.phaseHours) % 24) + 24) % 24;
    mean = world.requestsPerHour * ep.weight * app.trafficScale * diurnal(hod);
  }
  return new Rng(hash3(world.seed, ep.index, hour)).poisson(mean);
}

interface OpenRun {
  startHour: number;
  maxLenHours: number;
  machineType: string;
}

/** Runner state of one app, computed forward in time and extended on demand. */
export class AppRunners {
  readonly runners: Runner[] = [];
  private readonly loads: number[] = [];
  private readonly slotsActive: number[] = [];
  private readonly byHour = new Map<number, Runner[]>();
  private readonly startingAt = new Map<number, Runner[]>();
  private readonly open: Array<OpenRun | null>;
  private computedUntil: number;
  private readonly segmentCache = new Map<number, BusySegment[]>();
  private readonly timelineCache = new Map<string, Array<[RunnerState, number, number]>>();

  constructor(private readonly world: World, readonly app: App) {
    this.computedUntil = world.historyStartHour;
    this.open = new Array(app.maxConcurrency).fill(null);
  }

  /** Computes everything needed to answer questions about hours < `hour` (runs are at most 24 h). */
  ensure(hour: number): void {
    const target = hour + 26;
    while (this.computedUntil < target) this.step();
  }

  load(hour: number): number {
    if (hour < this.world.historyStartHour) return 0;
    this.ensure(hour + 1);
    return this.loads[hour - this.world.historyStartHour];
  }

  activeSlots(hour: number): number {
    if (hour < this.world.historyStartHour) return 0;
    this.ensure(hour + 1);
    return this.slotsActive[hour - this.world.historyStartHour];
  }

  /** Successful runners whose run covers `hour`. */
  runnersInHour(hour: number): Runner[] {
    this.ensure(hour + 1);
    return this.byHour.get(hour) ?? [];
  }

  /** Successful runners whose run starts in `hour` (their cold-boot requests belong to that hour). */
  runnersStartingIn(hour: number): Runner[] {
    this.ensure(hour + 1);
    return this.startingAt.get(hour) ?? [];
  }

  /** Every runner attempt that exists (has entered PENDING) before `untilMs`. */
  runnersUntil(untilMs: number): Runner[] {
    this.ensure(Math.floor(untilMs / HOUR_MS) + 1);
    return this.runners.filter((r) => r.startMs < untilMs);
  }

  private step(): void {
    const world = this.world;
    const app = this.app;
    const h = this.computedUntil;
    let load = 0;
    for (const ep of app.endpoints) load += requestCount(world, ep, h);
    const n = load > 0
      ? Math.min(app.maxConcurrency, Math.max(app.minConcurrency, Math.ceil(load / app.capacityPerRunnerHour)))
      : app.minConcurrency;
    this.loads.push(load);
    this.slotsActive.push(n);
    for (let s = 0; s < app.maxConcurrency; s++) {
      const active = s < n;
      const run = this.open[s];
      if (run && (!active || h - run.startHour >= run.maxLenHours)) {
        this.closeRun(s, run, h - 1, active ? 'rotation' : 'scaled_down');
        this.open[s] = null;
      }
      if (active && !this.open[s]) {
        const r = new Rng(hash4(world.seed, 0x5107, app.index * 64 + s, h));
        this.open[s] = {
          startHour: h,
          maxLenHours: r.range(4, 24),
          machineType: app.machineTypes.length > 1 && r.chance(0.35) ? app.machineTypes[1] : app.machineTypes[0],
        };
      }
    }
    this.computedUntil = h + 1;
  }

  private closeRun(slot: number, run: OpenRun, endHour: number, reason: string): void {
    const world = this.world;
    const app = this.app;
    const baseKey = hash4(world.seed, 0x7a11, app.index * 64 + slot, run.startHour);
    const r = new Rng(baseKey);
    const runStartMs = run.startHour * HOUR_MS + r.range(0, 240) * 1000;
    let t = runStartMs;
    const nodeId = (attempt: number): string => `node-${hex(mix(baseKey, 0x40de + attempt), 8)}`;
    const makeId = (attempt: number): string =>
      uuidFrom(mix(baseKey, attempt * 4 + 1), mix(baseKey, attempt * 4 + 2), mix(baseKey, attempt * 4 + 3), mix(baseKey, attempt * 4 + 4));
    const finalize = (endMs: number): 'TERMINATED' | 'DEAD' => (endMs < world.legacyCutoverMs ? 'DEAD' : 'TERMINATED');

    let attempt = 0;
    if (r.chance(0.03)) {
      // A first attempt that crashes twice during setup and is replaced.
      const phases: Array<[RunnerState, number]> = [['PENDING', t]];
      t += r.range(1, 20) * 1000;
      const billedFrom = t;
      const pull = r.chance(0.6) ? r.range(5, 60) : 0;
      if (pull) { phases.push(['DOCKER_PULL', t]); t += pull * 1000; }
      phases.push(['SETUP', t]); t += r.range(5, 60) * 1000;
      phases.push(['CRASH_BACKOFF', t]); t += r.range(10, 60) * 1000;
      phases.push(['SETUP', t]); t += r.range(5, 40) * 1000;
      phases.push(['CRASH_BACKOFF', t]); t += r.range(10, 60) * 1000;
      const runner: Runner = {
        id: makeId(attempt), key: mix(baseKey, attempt), appIndex: app.index, slot, machineType: run.machineType, nodeId: nodeId(attempt),
        runStartHour: run.startHour, runEndHour: endHour, failed: true, runStartMs, startMs: runStartMs, billedFromMs: billedFrom,
        readyMs: null, drainingFromMs: null, endMs: t, startupPhases: phases, terminationReason: 'startup_failure',
        finalState: finalize(t), coldBootEndpoint: -1, coldBoots: 0,
      };
      this.runners.push(runner);
      attempt++;
      t += r.range(1, 5) * 1000;
    }
    const startMs = t;
    const phases: Array<[RunnerState, number]> = [['PENDING', t]];
    t += r.range(1, 20) * 1000;
    const billedFrom = t;
    const pull = r.chance(0.6) ? r.range(5, 60) : 0;
    if (pull) { phases.push(['DOCKER_PULL', t]); t += pull * 1000; }
    phases.push(['SETUP', t]); t += r.range(5, 90) * 1000;
    if (r.chance(0.08)) {
      phases.push(['CRASH_BACKOFF', t]); t += r.range(10, 60) * 1000;
      phases.push(['SETUP', t]); t += r.range(5, 60) * 1000;
    }
    const readyMs = t;
    const drainingFromMs = (endHour + 1) * HOUR_MS + app.keepAliveSeconds * 1000;
    const endMs = drainingFromMs + r.range(1, 10) * 1000;
    const reasonRoll = r.next();
    const firstLoad = this.loads[run.startHour - world.historyStartHour];
    const runner: Runner = {
      id: makeId(attempt), key: mix(baseKey, attempt), appIndex: app.index, slot, machineType: run.machineType, nodeId: nodeId(attempt),
      runStartHour: run.startHour, runEndHour: endHour, failed: false, runStartMs, startMs, billedFromMs: billedFrom,
      readyMs, drainingFromMs, endMs, startupPhases: phases,
      terminationReason: reasonRoll < 0.1 ? null : reasonRoll < 0.15 ? 'unknown' : reason,
      finalState: finalize(endMs),
      coldBootEndpoint: firstLoad > 0 ? app.endpoints[r.int(app.endpoints.length)].index : -1,
      coldBoots: firstLoad > 0 ? r.range(1, 2) : 0,
    };
    this.runners.push(runner);
    for (let hour = run.startHour; hour <= endHour; hour++) {
      let list = this.byHour.get(hour);
      if (!list) this.byHour.set(hour, (list = []));
      list.push(runner);
    }
    let starting = this.startingAt.get(run.startHour);
    if (!starting) this.startingAt.set(run.startHour, (starting = []));
    starting.push(runner);
  }

  /** The runner's running/IDLE segments within an active hour of its run. */
  hourSegments(runner: Runner, hour: number): Array<{ startMs: number; endMs: number; busy: boolean }> {
    const hStart = hour * HOUR_MS;
    const hEnd = hStart + HOUR_MS;
    const u0 = Math.max(hStart, runner.readyMs ?? hEnd);
    if (u0 >= hEnd) return [];
    const bounds = [u0];
    for (let k = 1; k < 6; k++) {
      const b = hStart + k * SEGMENT_MS;
      if (b >= u0 + MIN_SEGMENT_MS) bounds.push(b);
    }
    bounds.push(hEnd);
    const load = this.load(hour);
    const n = Math.max(1, this.activeSlots(hour));
    const frac = Math.min(1, Math.max(0.2, load / (n * this.app.capacityPerRunnerHour)));
    const segs: Array<{ startMs: number; endMs: number; busy: boolean }> = [];
    let anyBusy = false;
    for (let j = 0; j + 1 < bounds.length; j++) {
      let busy = false;
      if (load > 0) {
        busy = unit(hash5(this.world.seed, runner.key, hour, j, 0xb05)) < frac;
        if (j === 0 && hour === runner.runStartHour) busy = true; // the cold-boot requests run here
      }
      anyBusy ||= busy;
      segs.push({ startMs: bounds[j], endMs: bounds[j + 1], busy });
    }
    if (load > 0 && !anyBusy) segs[hash3(this.world.seed, runner.key, hour) % segs.length].busy = true;
    return segs;
  }

  /** All `running` segments of the app's runners in an hour; requests are placed inside these. */
  busySegments(hour: number): BusySegment[] {
    let segs = this.segmentCache.get(hour);
    if (segs) return segs;
    segs = [];
    for (const runner of this.runnersInHour(hour)) {
      for (const s of this.hourSegments(runner, hour)) if (s.busy) segs.push({ runner, startMs: s.startMs, endMs: s.endMs });
    }
    if (this.segmentCache.size > 5000) this.segmentCache.clear();
    this.segmentCache.set(hour, segs);
    return segs;
  }

  /** State intervals [state, fromMs, toMs) of one runner; the last one (TERMINATED/DEAD) is open-ended. */
  timeline(runner: Runner): Array<[RunnerState, number, number]> {
    const cached = this.timelineCache.get(runner.id);
    if (cached) return cached;
    const out: Array<[RunnerState, number, number]> = [];
    const push = (state: RunnerState, a: number, b: number): void => {
      if (b <= a) return;
      const last = out[out.length - 1];
      if (last && last[0] === state && last[2] === a) last[2] = b;
      else out.push([state, a, b]);
    };
    const phases = runner.startupPhases;
    const phaseEnd = runner.readyMs ?? runner.endMs;
    for (let i = 0; i < phases.length; i++) push(phases[i][0], phases[i][1], i + 1 < phases.length ? phases[i + 1][1] : phaseEnd);
    if (runner.readyMs !== null && runner.drainingFromMs !== null) {
      for (let hour = runner.runStartHour; hour <= runner.runEndHour; hour++) {
        for (const s of this.hourSegments(runner, hour)) push(s.busy ? 'running' : 'IDLE', s.startMs, s.endMs);
      }
      push('IDLE', (runner.runEndHour + 1) * HOUR_MS, runner.drainingFromMs);
      push('draining', runner.drainingFromMs, runner.endMs);
    }
    out.push([runner.finalState, runner.endMs, Number.POSITIVE_INFINITY]);
    if (this.timelineCache.size > 20_000) this.timelineCache.clear();
    this.timelineCache.set(runner.id, out);
    return out;
  }

  stateAt(runner: Runner, ms: number): { state: RunnerState; sinceMs: number } | null {
    if (ms < runner.startMs) return null;
    for (const [state, a, b] of this.timeline(runner)) if (ms >= a && ms < b) return { state, sinceMs: a };
    return null;
  }
}

/** Lazily built runner models of every app. */
export class RunnerModel {
  private readonly byApp = new Map<number, AppRunners>();
  constructor(private readonly world: World) {}
  of(app: App | number): AppRunners {
    const index = typeof app === 'number' ? app : app.index;
    let ar = this.byApp.get(index);
    if (!ar) this.byApp.set(index, (ar = new AppRunners(this.world, this.world.apps[index])));
    return ar;
  }
}
