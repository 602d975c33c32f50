// Runners and load. Traffic per (endpoint, hour) is a pure function of the seed; an app's load decides how many
// runner "slots" are active in each hour; consecutive active hours of a slot are one runner's life (split by a
// periodic rotation). Runners are regenerated per (app, day) from the slot state at midnight and cached in a
// bounded LRU, so a year of history costs a few integers per app and day. Requests are then placed only inside the `running` segments of those runners, so usage
// (machine-seconds of runner time), requests (runner ids), analytics and runner history all agree.
import type { App, Endpoint, World } from './world.js';
import { HOUR_MS, DAY_MS } from './time.js';
import type { LRUCache } from 'lru-cache';
import { Rng, hash3, hash4, hash5, mix, unit, uuidFrom, hex } from './prng.js';
import type { SimCaches } from './caches.js';

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
  /**
   * Billing starts when the runner is ready: the platform bills `running`, `IDLE` and `draining` only, never the
   * pending states (`PENDING`, `DOCKER_PULL`, `SETUP`, `CRASH_BACKOFF`). A failed attempt is never billed
   * (billedFromMs = endMs). From here to endMs the runner is in billed states only.
   */
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

/**
 * Mean requests per hour (cold-boot arrivals excluded) over whole days of the endpoints of the caller's apps:
 * the daily curve averages 1 and an app is dormant on a `dormancy` share of its days. Benchmarks size
 * `requestsPerHour` with it (it scales linearly).
 */
export function expectedOwnedRequestsPerHour(world: World): number {
  let sum = 0;
  for (const app of world.apps) {
    if (!app.ownedByCaller) continue;
    for (const ep of app.endpoints) sum += world.requestsPerHour * ep.weight * app.trafficScale * (1 - app.dormancy);
  }
  return sum;
}

/** Keys of the per-(app, day) and per-(app, hour) caches: hours and days since 1970 stay below this. */
const KEY_STRIDE = 10_000_000;

/** Slot state while stepping: the start hour of each slot's open run (-1: none) and that run's planned length. */
interface SlotState {
  start: Int32Array;
  maxLenHours: Int32Array;
}

export interface RunnerCaches {
  blocks: LRUCache<number, Runner[]>;
  segments: LRUCache<number, BusySegment[]>;
  timelines: LRUCache<string, Array<[RunnerState, number, number]>>;
}

/** Runners end in this order (the order every consumer sees): run end hour, slot, the failed attempt first. */
function closeOrder(a: Runner, b: Runner): number {
  return a.runEndHour - b.runEndHour || a.slot - b.slot || Number(!a.failed) - Number(!b.failed);
}

/**
 * Runner lives of one app. A slot's runs form a chain (a run ends when load no longer needs the slot or when it
 * has run its planned length), so the runs of a day follow from which runs are open at midnight: those start
 * hours are kept per day (a few integers, computed forward once), and the runners of a day are regenerated from
 * them when asked for and held only in a bounded cache.
 */
export class AppRunners {
  private readonly firstDay: number;
  /** Open-run start hours per slot at each midnight from `firstDay` on, `maxConcurrency` entries a day. */
  private readonly midnights: number[] = [];

  constructor(private readonly world: World, readonly app: App, private readonly caches: RunnerCaches) {
    this.firstDay = Math.floor(world.historyStartHour / 24);
  }

  /** Requests (cold-boot arrivals excluded) of all the app's endpoints that end in `hour`. */
  load(hour: number): number {
    if (hour < this.world.historyStartHour) return 0;
    let load = 0;
    for (const ep of this.app.endpoints) load += requestCount(this.world, ep, hour);
    return load;
  }

  activeSlots(hour: number): number {
    if (hour < this.world.historyStartHour) return 0;
    return this.slotsFor(this.load(hour));
  }

  private slotsFor(load: number): number {
    const app = this.app;
    return load > 0
      ? Math.min(app.maxConcurrency, Math.max(app.minConcurrency, Math.ceil(load / app.capacityPerRunnerHour)))
      : app.minConcurrency;
  }

  /** Successful runners whose run covers `hour`, in end order. */
  runnersInHour(hour: number): Runner[] {
    const day = Math.floor(hour / 24);
    // Runs last at most 24 hours: one covering `hour` started on its day or the day before.
    return [...this.startedOnDay(day - 1), ...this.startedOnDay(day)]
      .filter((r) => !r.failed && r.runStartHour <= hour && hour <= r.runEndHour)
      .sort(closeOrder);
  }

  /** Successful runners whose run starts in `hour` (their cold-boot requests belong to that hour). */
  runnersStartingIn(hour: number): Runner[] {
    return this.startedOnDay(Math.floor(hour / 24)).filter((r) => !r.failed && r.runStartHour === hour);
  }

  /** Every runner attempt alive at some moment of [fromMs, toMs) (entered PENDING before `toMs`, ended after `fromMs`), in end order. */
  runnersOverlapping(fromMs: number, toMs: number): Runner[] {
    const out: Runner[] = [];
    if (toMs <= fromMs) return out;
    // A runner ends less than two days after the midnight before its start (run ≤ 24 h, keep-alive, draining).
    const lastDay = Math.floor((toMs - 1) / DAY_MS);
    for (let day = Math.max(this.firstDay, Math.floor(fromMs / DAY_MS) - 2); day <= lastDay; day++) {
      for (const r of this.startedOnDay(day)) if (r.startMs < toMs && r.endMs > fromMs) out.push(r);
    }
    return out.sort(closeOrder);
  }

  /** Every runner attempt that exists (has entered PENDING) before `untilMs`, in end order. */
  runnersUntil(untilMs: number): Runner[] {
    return this.runnersOverlapping(this.world.historyStartHour * HOUR_MS, untilMs);
  }

  /** Runner attempts whose run starts in UTC day `day`, in end order; regenerated when not cached. */
  private startedOnDay(day: number): Runner[] {
    const key = this.app.index * KEY_STRIDE + day;
    let list = this.caches.blocks.get(key);
    if (list) return list;
    list = [];
    const first = Math.max(day * 24, this.world.historyStartHour);
    const end = (day + 1) * 24;
    if (first < end) {
      const state = this.midnight(day);
      // A run started by the day's last hour is closed at the latest 24 hours later.
      for (let h = first; h < end + 24; h++) {
        this.step(state, h, (slot, startHour, endHour, reason) => {
          if (startHour >= first && startHour < end) this.closeRun(list!, slot, startHour, endHour, reason);
        });
      }
    }
    this.caches.blocks.set(key, list);
    return list;
  }

  /** The slot state before the first hour of `day` (computing the midnights before it once, forward). */
  private midnight(day: number): SlotState {
    const m = this.app.maxConcurrency;
    const state: SlotState = { start: new Int32Array(m).fill(-1), maxLenHours: new Int32Array(m) };
    if (day <= this.firstDay) return state;
    if (this.midnights.length === 0) for (let s = 0; s < m; s++) this.midnights.push(-1);
    for (let known = this.midnights.length / m; this.firstDay + known <= day; known++) {
      const d = this.firstDay + known - 1;
      const s0 = this.restore((known - 1) * m);
      for (let h = Math.max(d * 24, this.world.historyStartHour); h < (d + 1) * 24; h++) this.step(s0, h, null);
      for (const x of s0.start) this.midnights.push(x);
    }
    return this.restore((day - this.firstDay) * m);
  }

  private restore(offset: number): SlotState {
    const m = this.app.maxConcurrency;
    const state: SlotState = { start: new Int32Array(m), maxLenHours: new Int32Array(m) };
    for (let s = 0; s < m; s++) {
      const start = this.midnights[offset + s];
      state.start[s] = start;
      if (start >= 0) state.maxLenHours[s] = this.plan(s, start).maxLenHours;
    }
    return state;
  }

  /** A run's planned length and machine type: a function of its slot and start hour. */
  private plan(slot: number, startHour: number): { maxLenHours: number; machineType: string } {
    const app = this.app;
    const r = new Rng(hash4(this.world.seed, 0x5107, app.index * 64 + slot, startHour));
    const maxLenHours = r.range(4, 24);
    const machineType = app.machineTypes.length > 1 && r.chance(0.35) ? app.machineTypes[1] : app.machineTypes[0];
    return { maxLenHours, machineType };
  }

  /** Moves the slots over hour `h`: runs no longer needed (or at their planned length) end, needed slots start one. */
  private step(state: SlotState, h: number, onClose: ((slot: number, startHour: number, endHour: number, reason: string) => void) | null): void {
    const n = this.slotsFor(this.load(h));
    for (let s = 0; s < this.app.maxConcurrency; s++) {
      const active = s < n;
      const start = state.start[s];
      if (start >= 0 && (!active || h - start >= state.maxLenHours[s])) {
        onClose?.(s, start, h - 1, active ? 'rotation' : 'scaled_down');
        state.start[s] = -1;
      }
      if (active && state.start[s] < 0) {
        state.start[s] = h;
        state.maxLenHours[s] = this.plan(s, h).maxLenHours;
      }
    }
  }

  private closeRun(out: Runner[], slot: number, startHour: number, endHour: number, reason: string): void {
    const world = this.world;
    const app = this.app;
    const machineType = this.plan(slot, startHour).machineType;
    const baseKey = hash4(world.seed, 0x7a11, app.index * 64 + slot, startHour);
    const r = new Rng(baseKey);
    const runStartMs = startHour * HOUR_MS + r.range(0, 240) * 1000;
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
      const pull = r.chance(0.6) ? r.range(5, 60) : 0;
      if (pull) { phases.push(['DOCKER_PULL', t]); t += pull * 1000; }
      phases.push(['SETUP', t]); t += r.range(5, 60) * 1000;
      phases.push(['CRASH_BACKOFF', t]); t += r.range(10, 60) * 1000;
      phases.push(['SETUP', t]); t += r.range(5, 40) * 1000;
      phases.push(['CRASH_BACKOFF', t]); t += r.range(10, 60) * 1000;
      out.push({
        id: makeId(attempt), key: mix(baseKey, attempt), appIndex: app.index, slot, machineType, nodeId: nodeId(attempt),
        runStartHour: startHour, runEndHour: endHour, failed: true, runStartMs, startMs: runStartMs, billedFromMs: t,
        readyMs: null, drainingFromMs: null, endMs: t, startupPhases: phases, terminationReason: 'startup_failure',
        finalState: finalize(t), coldBootEndpoint: -1, coldBoots: 0,
      });
      attempt++;
      t += r.range(1, 5) * 1000;
    }
    const startMs = t;
    const phases: Array<[RunnerState, number]> = [['PENDING', t]];
    t += r.range(1, 20) * 1000;
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
    const firstLoad = this.load(startHour);
    out.push({
      id: makeId(attempt), key: mix(baseKey, attempt), appIndex: app.index, slot, machineType, nodeId: nodeId(attempt),
      runStartHour: startHour, runEndHour: endHour, failed: false, runStartMs, startMs, billedFromMs: readyMs,
      readyMs, drainingFromMs, endMs, startupPhases: phases,
      terminationReason: reasonRoll < 0.1 ? null : reasonRoll < 0.15 ? 'unknown' : reason,
      finalState: finalize(endMs),
      coldBootEndpoint: firstLoad > 0 ? app.endpoints[r.int(app.endpoints.length)].index : -1,
      coldBoots: firstLoad > 0 ? r.range(1, 2) : 0,
    });
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
    const key = this.app.index * KEY_STRIDE + hour;
    let segs = this.caches.segments.get(key);
    if (segs) return segs;
    segs = [];
    for (const runner of this.runnersInHour(hour)) {
      for (const s of this.hourSegments(runner, hour)) if (s.busy) segs.push({ runner, startMs: s.startMs, endMs: s.endMs });
    }
    this.caches.segments.set(key, segs);
    return segs;
  }

  /** State intervals [state, fromMs, toMs) of one runner; the last one (TERMINATED/DEAD) is open-ended. */
  timeline(runner: Runner): Array<[RunnerState, number, number]> {
    const cached = this.caches.timelines.get(runner.id);
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
    this.caches.timelines.set(runner.id, out);
    return out;
  }

  stateAt(runner: Runner, ms: number): { state: RunnerState; sinceMs: number } | null {
    if (ms < runner.startMs) return null;
    for (const [state, a, b] of this.timeline(runner)) if (ms >= a && ms < b) return { state, sinceMs: a };
    return null;
  }
}

/** Runner models of every app (each holds only its midnight states); generated runners live in `caches`. */
export class RunnerModel {
  private readonly byApp = new Map<number, AppRunners>();
  private readonly caches: RunnerCaches;
  constructor(private readonly world: World, caches: SimCaches) {
    this.caches = {
      blocks: caches.create('runnerBlocks', (list) => list.length),
      segments: caches.create('busySegments', (list) => list.length),
      timelines: caches.create('timelines'),
    };
  }
  of(app: App | number): AppRunners {
    const index = typeof app === 'number' ? app : app.index;
    let ar = this.byApp.get(index);
    if (!ar) this.byApp.set(index, (ar = new AppRunners(this.world, this.world.apps[index], this.caches)));
    return ar;
  }
}
