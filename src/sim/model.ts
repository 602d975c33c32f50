// The simulated platform's state: the world, the lazily generated runners/requests/activity, and the virtual
// clock. The HTTP server, the truth API and the pushers all read this one model.
import { buildWorld, type World, type WorldOptions } from './world.js';
import { RunnerModel } from './runners.js';
import { RequestModel } from './requests.js';
import { ActivityModel } from './activity.js';
import { SimCaches, type CacheLimits } from './caches.js';
import { attachScenario, type Scenario } from './scenario.js';
import { MODEL_KEYS } from './model-billing.js';

export type ClockListener = (fromMs: number, toMs: number) => void;

export class SimClock {
  private baseMs: number;
  private realBaseMs = 0;
  private readonly listeners: ClockListener[] = [];

  /** With `realtime` the virtual clock also moves with wall time (the sandbox); tests keep it still. */
  constructor(startMs: number, private readonly realtime = false) {
    this.baseMs = startMs;
    if (realtime) this.realBaseMs = Date.now();
  }

  nowMs(): number {
    return this.realtime ? this.baseMs + (Date.now() - this.realBaseMs) : this.baseMs;
  }

  now(): Date {
    return new Date(this.nowMs());
  }

  set(t: string | Date | number): void {
    const ms = typeof t === 'number' ? t : t instanceof Date ? t.getTime() : Date.parse(t);
    if (!Number.isFinite(ms)) throw new Error(`clock: not a time: ${String(t)}`);
    const from = this.nowMs();
    this.baseMs = ms;
    if (this.realtime) this.realBaseMs = Date.now();
    for (const l of this.listeners) l(from, ms);
  }

  advance(ms: number): void {
    this.set(this.nowMs() + ms);
  }

  onChange(listener: ClockListener): void {
    this.listeners.push(listener);
  }
}

export class SimModel {
  readonly world: World;
  readonly runners: RunnerModel;
  readonly requests: RequestModel;
  readonly activity: ActivityModel;
  readonly clock: SimClock;
  /** Everything generated that is kept, all of it bounded. */
  readonly caches: SimCaches;

  constructor(opts: WorldOptions & { realtime?: boolean; cacheLimits?: CacheLimits; scenario?: Scenario }) {
    this.world = buildWorld(opts);
    if (opts.scenario) attachScenario(this.world, opts.scenario, MODEL_KEYS.flatMap((k) => (k.apiKeyId ? [k.apiKeyId] : [])));
    this.caches = new SimCaches(opts.cacheLimits);
    this.runners = new RunnerModel(this.world, this.caches);
    this.requests = new RequestModel(this.world, this.runners, this.caches);
    this.activity = new ActivityModel(this.world, this.runners, this.requests, this.caches);
    this.clock = new SimClock(opts.nowMs, opts.realtime ?? false);
  }
}
