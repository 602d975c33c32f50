// Revisions, operational events and logs of an app, derived from the same runners and requests as everything
// else (a runner's events are its state changes; a request's log lines carry its id and runner).
import type { App, World } from './world.js';
import type { RunnerModel, Runner } from './runners.js';
import type { RequestModel } from './requests.js';
import { DAY_MS, HOUR_MS } from './time.js';
import { Rng, hash3, hash4, mix, uuidFrom, hex } from './prng.js';
import { formatMilli } from './money.js';
import type { LRUCache } from 'lru-cache';
import type { SimCaches } from './caches.js';

export interface Revision {
  revisionId: string;
  createdMs: number;
  status: 'DEPLOYED' | 'FAILED';
  message: string;
  annotations: Record<string, string>;
  deployedBy: string;
}

export interface AppEvent {
  eventId: string;
  category: string;
  createdMs: number;
  payload: Record<string, unknown>;
}

export interface LogLine {
  tsMs: number;
  appIndex: number;
  /** Position within the app's hour: with (tsMs, appIndex) a total order for paging. */
  seq: number;
  level: 'DEBUG' | 'INFO' | 'WARNING' | 'ERROR';
  message: string;
  revisionId: string | null;
  labels: Record<string, string>;
}

const MESSAGES = [
  'Bump model weights', 'Fix OOM on large batches', 'Enable fp8 inference', 'Raise max_concurrency',
  'Pin torch 2.5', 'Add caption route', 'Switch scheduler', 'Warm cache on setup', 'Rollback tokenizer change',
];
const DEPLOYERS = ['alice@acme.dev', 'bob@acme.dev', 'ci-bot', 'carol@acme.dev'];
const CONFIG_SETTINGS = ['max_concurrency', 'min_concurrency', 'keep_alive', 'request_timeout'];

export class ActivityModel {
  /** A few revisions per app: part of the world, kept for good. */
  private readonly revisionCache = new Map<number, Revision[]>();
  private readonly logCache: LRUCache<string, LogLine[]>;

  constructor(private readonly world: World, private readonly runners: RunnerModel, private readonly requests: RequestModel, caches: SimCaches) {
    this.logCache = caches.create('logLines', (lines) => lines.length);
  }

  /** Every revision of the app in creation order, including ones "after now" (callers filter by the clock). */
  revisions(app: App): Revision[] {
    let list = this.revisionCache.get(app.index);
    if (list) return list;
    const w = this.world;
    const r = new Rng(hash3(w.seed, 0x4e5, app.index));
    const count = r.range(2, 8);
    const span = w.initialNowMs + 30 * DAY_MS - w.historyStartMs;
    const times = [app.createdAtMs];
    for (let i = 1; i < count; i++) times.push(w.historyStartMs + Math.floor(r.next() * (span / 1000)) * 1000);
    times.sort((a, b) => a - b);
    const built: Revision[] = times.map((createdMs, i): Revision => ({
      revisionId: uuidFrom(hash4(w.seed, 0x4e6, app.index, i), hash4(w.seed, 0x4e7, app.index, i), hash4(w.seed, 0x4e8, app.index, i), hash4(w.seed, 0x4e9, app.index, i)),
      createdMs,
      status: i > 0 && r.chance(0.12) ? 'FAILED' : 'DEPLOYED',
      message: i === 0 ? 'Initial deployment' : r.pick(MESSAGES),
      annotations: r.chance(0.6) ? { git_sha: hex(r.u32(), 8) + hex(r.u32(), 8), branch: r.pick(['main', 'release', 'hotfix']) } : {},
      deployedBy: r.pick(DEPLOYERS),
    }));
    this.revisionCache.set(app.index, built);
    return built;
  }

  /** The revision serving at `ms`: the latest deployed one created at or before it. */
  revisionAt(app: App, ms: number): Revision | null {
    let cur: Revision | null = null;
    for (const rev of this.revisions(app)) {
      if (rev.createdMs > ms) break;
      if (rev.status === 'DEPLOYED') cur = rev;
    }
    return cur;
  }

  /**
   * Events that exist at `nowMs`, newest first. With a window, runner events are generated only for the runners
   * alive in it (the caller filters by the window; the rest of the history is not regenerated).
   */
  events(app: App, nowMs: number, window?: { fromMs: number; toMs: number }): AppEvent[] {
    const w = this.world;
    const out: AppEvent[] = [];
    const ev = (key: number, n: number, category: string, createdMs: number, payload: Record<string, unknown>): void => {
      if (createdMs > nowMs) return;
      out.push({ eventId: uuidFrom(mix(key, n), mix(key, n + 100), mix(key, n + 200), mix(key, n + 300)), category, createdMs, payload });
    };
    const ar = this.runners.of(app);
    // A runner's events fall within [startMs, endMs], ends included.
    const runners = window
      ? ar.runnersOverlapping(window.fromMs - 1, Math.min(window.toMs, nowMs + 1))
      : ar.runnersUntil(nowMs + 1);
    for (const runner of runners) {
      const base = { runner_id: runner.id, machine_type: runner.machineType, node_id: runner.nodeId };
      let n = 0;
      for (const [state, at] of runner.startupPhases) {
        const category = state === 'PENDING' ? 'runner_pending' : state === 'DOCKER_PULL' ? 'docker_pull' : state === 'SETUP' ? 'setup' : 'startup_failure';
        ev(runner.key, n++, category, at, { ...base, state });
      }
      if (runner.readyMs !== null) ev(runner.key, 20, 'runner_started', runner.readyMs, { ...base, state: 'IDLE' });
      if (runner.failed) {
        ev(runner.key, 21, 'runner_failed', runner.endMs, { ...base, state: runner.finalState, termination_reason: runner.terminationReason });
        continue;
      }
      if (runner.drainingFromMs !== null) {
        ev(runner.key, 22, 'draining', runner.drainingFromMs, { ...base, state: 'draining' });
        if (runner.endMs - 1000 > runner.drainingFromMs) ev(runner.key, 23, 'stopping', runner.endMs - 1000, { ...base, state: 'draining' });
      }
      ev(runner.key, 24, 'runner_finished', runner.endMs, { ...base, state: runner.finalState, termination_reason: runner.terminationReason });
    }
    this.revisions(app).forEach((rev, i) => {
      const key = hash4(w.seed, 0xde9, app.index, i);
      ev(key, 0, 'deployment_started', rev.createdMs, { revision_id: rev.revisionId, deployed_by: rev.deployedBy });
      const done = rev.createdMs + (30 + (key % 90)) * 1000;
      if (rev.status === 'FAILED') ev(key, 1, 'deployment_failed', done, { revision_id: rev.revisionId, reason: 'setup failed: health check did not pass' });
      else ev(key, 1, 'deployment_ended', done, { revision_id: rev.revisionId });
    });
    const r = new Rng(hash3(w.seed, 0xc0f, app.index));
    const changes = r.range(0, 3);
    for (let i = 0; i < changes; i++) {
      const at = w.historyStartMs + Math.floor(r.next() * ((w.initialNowMs + 30 * DAY_MS - w.historyStartMs) / 1000)) * 1000;
      const setting = r.pick(CONFIG_SETTINGS);
      ev(hash4(w.seed, 0xc10, app.index, i), 0, 'config_changed', at, { setting, old_value: r.range(0, 5), new_value: r.range(0, 5) });
    }
    out.sort((a, b) => b.createdMs - a.createdMs || (a.eventId < b.eventId ? 1 : a.eventId > b.eventId ? -1 : 0));
    return out;
  }

  /** Log lines of one app in one UTC hour, in (timestamp, seq) order. */
  logs(app: App, hour: number): LogLine[] {
    const key = `${app.index}|${hour}`;
    const cached = this.logCache.get(key);
    if (cached) return cached;
    const w = this.world;
    const hStart = hour * HOUR_MS;
    const hEnd = hStart + HOUR_MS;
    const ar = this.runners.of(app);
    const runnerById = new Map<string, Runner>();
    for (const rn of ar.runnersOverlapping(hStart - HOUR_MS, hEnd)) runnerById.set(rn.id, rn);
    const lines: Array<Omit<LogLine, 'seq'>> = [];
    const base = (ts: number): Pick<LogLine, 'tsMs' | 'appIndex' | 'revisionId'> => ({
      tsMs: ts, appIndex: app.index, revisionId: this.revisionAt(app, ts)?.revisionId ?? null,
    });
    for (const ep of app.endpoints) {
      for (const req of this.requests.hour(ep, hour)) {
        const runner = req.runnerId ? runnerById.get(req.runnerId) : undefined;
        const labels: Record<string, string> = {
          svc_app_name: app.name, svc_app_id: app.appId, svc_endpoint: ep.id, svc_request_id: req.id, svc_job_id: req.gatewayId,
        };
        const gateway = { ...labels, svc_source: 'gateway' };
        const onRunner = runner
          ? { ...labels, svc_source: 'runner', svc_node_id: runner.nodeId, svc_worker_id: runner.id, svc_isolate_source: 'stdout' }
          : gateway;
        lines.push({ ...base(Math.max(req.startedMs, hStart)), level: 'INFO', message: `Received request ${req.id} for ${ep.id}`, labels: gateway });
        if (runner) lines.push({ ...base(req.sentMs), level: req.coldBootMs >= 0 ? 'WARNING' : 'DEBUG', message: req.coldBootMs >= 0 ? `Cold start: waited ${formatMilli(req.coldBootMs)}s for a runner` : 'Dispatched to runner', labels: onRunner });
        if (req.statusClass === 'success') {
          lines.push({ ...base(req.endedMs), level: 'INFO', message: `Request completed in ${formatMilli(req.durationMs)}s`, labels: onRunner });
        } else {
          const msg = `Request failed with status ${req.statusCode}${req.errorType ? `: ${req.errorType}` : ''}`;
          lines.push({ ...base(req.endedMs), level: req.statusClass === 'error' ? 'ERROR' : 'WARNING', message: msg, labels: runner ? { ...onRunner, svc_isolate_source: 'stderr' } : gateway });
        }
      }
    }
    for (const runner of runnerById.values()) {
      const labels = { svc_app_name: app.name, svc_app_id: app.appId, svc_source: 'runner', svc_node_id: runner.nodeId, svc_worker_id: runner.id };
      for (const [state, at] of runner.startupPhases) {
        if (at < hStart || at >= hEnd) continue;
        if (state === 'CRASH_BACKOFF') {
          lines.push({ ...base(at), level: 'ERROR', message: 'Traceback (most recent call last):\n  File "/app/main.py", line 42, in setup\n    self.pipe = load_pipeline()\nRuntimeError: CUDA error: out of memory', labels: { ...labels, svc_isolate_source: 'stderr' } });
        } else if (state === 'SETUP') {
          lines.push({ ...base(at), level: 'INFO', message: 'Running setup()', labels: { ...labels, svc_isolate_source: 'stdout' } });
        }
      }
      if (runner.readyMs !== null && runner.readyMs >= hStart && runner.readyMs < hEnd) {
        lines.push({ ...base(runner.readyMs), level: 'INFO', message: 'Application startup complete', labels: { ...labels, svc_isolate_source: 'stdout' } });
      }
      if (runner.drainingFromMs !== null && runner.drainingFromMs >= hStart && runner.drainingFromMs < hEnd) {
        lines.push({ ...base(runner.drainingFromMs), level: 'INFO', message: 'Received SIGTERM, draining', labels: { ...labels, svc_isolate_source: 'stdout' } });
      }
    }
    // Stable order: by time, then by generation order (Array.prototype.sort is stable).
    const order = lines.map((l, i) => [l, i] as const).sort((a, b) => a[0].tsMs - b[0].tsMs || a[1] - b[1]);
    const out: LogLine[] = order.map(([l], seq) => ({ ...l, seq }));
    this.logCache.set(key, out);
    return out;
  }
}
