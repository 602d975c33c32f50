// Ground truth, computed from the world model (never from HTTP responses): what Tallyhouse should have stored,
// with money as exact integer nanos beside the number.
import type { SimModel } from './model.js';
import type { App } from './world.js';
import type { Webhooks, WebhookDelivery } from './webhooks.js';
import { logRecord, type Drain, type DrainRecord } from './drain.js';
import { queueSize } from './metrics.js';
import { computeUsage, type UsageRow } from './usage.js';
import { chargesBetween, computeModelUsage, type ModelUsageRow } from './model-billing.js';
import { ANALYTICS_METRICS, computeAnalytics, computeRunnerHistory, type RunnerHistoryPoint } from './analytics.js';
import { bucketize, bucketIndex, parseTimeParam, isoUtcMs, HOUR_MS, type Timeframe } from './time.js';
import { formatMilli } from './money.js';
import { liveRunnerIds, modelFootprint, rightSizingTruth, runnerMetricsAt, type RightSizingTruth, type RunnerMetricsSample } from './runner-metrics.js';
import { historyClass } from './runners.js';

/**
 * Busy, idle and draining cost of one usage row (day, app, machine type, surge): the row's cost split by the app's
 * state shares of that local day, the shares being the sums of the hourly `avg` runner history (thousandths of a
 * runner, as served). Split in pico-USD by largest remainder (ties: busy, idle, draining), so the three add up to
 * the row's cost exactly; a day whose history shows no billed runner counts all as idle.
 */
export interface EfficiencyTruthRow {
  day: string;
  app: string;
  owner: string;
  machine_type: string;
  is_surge: boolean;
  quantity: number;
  cost_total_picos: bigint;
  busy_picos: bigint;
  idle_picos: bigint;
  draining_picos: bigint;
  /** The app-day's state weights, thousandths of a runner-hour (sum of hourly avg × 1000). */
  weights_milli: { running: number; idle: number; draining: number };
  /** The exact billed runner-seconds of the app-day by state, from the runner timelines. */
  exact_seconds: { running: number; idle: number; draining: number };
}

export interface UsageTruthRow {
  /** Bucket start (ISO with offset); null for a summary row. */
  bucket: string | null;
  app: string;
  owner: string;
  environment: string;
  machine_type: string;
  is_surge: boolean;
  quantity: number;
  unit_price: number;
  unit_price_nanos: number;
  percent_discount: number | null;
  cost_subtotal_nanos: number;
  cost_discount_nanos: number;
  cost_total_nanos: number;
  cost_subtotal: number;
  cost_discount: number;
  cost_total: number;
  currency: 'USD';
}

export interface RequestDayTruth {
  endpoint_id: string;
  day: string;
  request_count: number;
  billed_count: number;
  unbilled_count: number;
  billable_units_billed: number;
  billable_units_all: number;
  /** The same sums in thousandths (exact integers). */
  billable_units_billed_milli: number;
  billable_units_all_milli: number;
}

export interface RequestTruth {
  request_id: string;
  gateway_request_id: string;
  endpoint_id: string;
  started_at: string;
  sent_at: string;
  ended_at: string;
  status_code: number;
  duration: number;
  runner_id: string | null;
  /** As billed (also when not billed yet at "now"). */
  billable_units: number;
  billed_at: string;
  error_type: string | null;
  prepare_duration: number;
  cold_boot_duration: number | null;
}

export interface AppTruth {
  endpoint_id: string;
  app_id: string;
  owner: string;
  name: string;
  environment: string;
  owned_by_caller: boolean;
  machine_types: string[];
  endpoints: string[];
  webhooks: boolean;
  billing: 'duration' | 'units';
  /** The app's settings as the platform lists them (seconds for keep-alive and the timeouts). */
  settings: {
    auth_mode: 'public' | 'private';
    keep_alive: number;
    min_concurrency: number;
    max_concurrency: number;
    request_timeout: number;
    startup_timeout: number;
    valid_regions: string[];
  };
}

export interface EventTruth {
  event_id: string;
  category: string;
  created_at: string;
  payload: Record<string, unknown>;
}

export interface RevisionTruth {
  revision_id: string;
  created_at: string;
  is_current: boolean;
  status: string;
  message: string;
  deployed_by: string;
  annotations: Record<string, string>;
}

/** A model usage row as billed (per day, endpoint, price, discount and key), money as integer nanos of `currency`. */
export interface ModelUsageTruthRow {
  bucket: string | null;
  endpoint_id: string;
  unit: string;
  currency: string;
  /** Whether the platform serves this bucket in the legacy shape (only `cost`). */
  legacy: boolean;
  api_key_id: string | null;
  login_username: string | null;
  api_key_label: string;
  quantity: number;
  unit_price_nanos: number;
  percent_discount: number | null;
  cost_subtotal_nanos: bigint;
  cost_discount_nanos: bigint;
  cost_total_nanos: bigint;
}

/** One billed model call. */
export interface ModelCallTruth {
  request_id: string;
  endpoint_id: string;
  ended_at: string;
  api_key_id: string | null;
  api_key_label: string;
  unit: string;
  currency: string;
  quantity: number;
  unit_price_nanos: number;
  cost_total_nanos: bigint;
}

export interface Truth {
  /** Model usage rows per key (as collected with the auth_method expands), daily unless `timeframe` says. */
  modelUsage(q: { from: string; to: string; timezone?: string; timeframe?: Timeframe }): ModelUsageTruthRow[];
  /** The platform's summary rows for the range, per key. */
  modelUsageSummary(q: { from: string; to: string; timezone?: string }): ModelUsageTruthRow[];
  /** Every billed model call that ended in [from, to) (UTC unless `timezone`). */
  modelCalls(q: { from: string; to: string; timezone?: string }): ModelCallTruth[];
  usage(q: { from: string; to: string; timezone?: string; timeframe?: Timeframe; apps?: string[] }): UsageTruthRow[];
  usageSummary(q: { from: string; to: string; timezone?: string; apps?: string[] }): UsageTruthRow[];
  requests(q: { from: string; to: string; timezone?: string; endpointIds?: string[] }): RequestDayTruth[];
  requestList(q: { endpointId: string; from: string; to: string }): RequestTruth[];
  analytics(q: { endpointIds: string[]; from: string; to: string; timezone?: string; timeframe?: Timeframe; kind?: 'serverless' | 'models' }): Array<{ bucket: string; endpoint_id: string; [metric: string]: unknown }>;
  /** The whole-range summary per endpoint id (expand=summary), from the raw requests: the range's own percentiles. */
  analyticsSummary(q: { endpointIds: string[]; from: string; to: string; timezone?: string; timeframe?: Timeframe; kind?: 'serverless' | 'models' }): Array<{ endpoint_id: string; [metric: string]: unknown }>;
  runnerHistory(q: { owner: string; name: string; from: string; to: string; timeframe?: Timeframe; aggregation?: 'max' | 'avg'; timezone?: string }): RunnerHistoryPoint[];
  runnerStates(q: { owner: string; name: string }): Array<{ runner_id: string; state: string; since: string; machine_type: string; termination_reason: string | null }>;
  apps(): AppTruth[];
  events(owner: string, name: string): EventTruth[];
  revisions(owner: string, name: string): RevisionTruth[];
  webhooksSent(): WebhookDelivery[];
  drainSent(): DrainRecord;
  /**
   * Every log record of the caller's apps logged in [from, to) (capped at the virtual now), oldest first, in the
   * drain's form: the same records history and the stream hand out.
   */
  logRecords(q: { from: string; to: string; apps?: string[] }): Array<Record<string, unknown>>;
  /** An app's queue backlog (`GET .../queue`) at an instant. */
  queueSize(owner: string, name: string, at: string | Date): number;
  /** What `GET /metrics/runners/{id}` answers at an instant (default now); null: 404. */
  runnerMetrics(runnerId: string, at?: string | Date): RunnerMetricsSample | null;
  /** Ids of every runner of the caller's apps alive at an instant (default now). */
  liveRunners(at?: string | Date): string[];
  /** Each of the caller's apps' model VRAM per GPU and whether it was planted over-provisioned. */
  modelFootprints(): Array<{ app: string; owner: string; machine_types: string[]; vram_need_bytes: number; over_provisioned: boolean }>;
  /** Busy, idle and draining cost per usage row of each local day in [from, to). */
  efficiency(q: { from: string; to: string; timezone?: string }): EfficiencyTruthRow[];
  /** Right-sizing over the usage of [from, to) (UTC days) at a VRAM margin (0.2 = 20 %), among `candidates` types. */
  rightSizing(q: { from: string; to: string; margin: number; candidates?: string[] }): RightSizingTruth[];
}

/** Largest-remainder split of `total` by integer weights; ties go to the earlier weight. */
function splitByWeights(total: bigint, weights: number[]): bigint[] {
  const sum = weights.reduce((a, b) => a + b, 0);
  if (sum === 0) return weights.map((_, i) => (i === 1 ? total : 0n));
  const parts = weights.map((w) => (total * BigInt(w)) / BigInt(sum));
  const rest = weights.map((w, i) => ({ i, r: (total * BigInt(w)) % BigInt(sum) }));
  let left = total - parts.reduce((a, b) => a + b, 0n);
  rest.sort((a, b) => (a.r === b.r ? a.i - b.i : a.r > b.r ? -1 : 1));
  for (const { i } of rest) {
    if (left <= 0n) break;
    parts[i] += 1n;
    left -= 1n;
  }
  return parts;
}

export function createTruth(model: SimModel, webhooks: Webhooks, drain: Drain): Truth {
  const world = model.world;
  const now = (): number => model.clock.nowMs();
  const time = (value: string, tz: string, name: string): number => {
    const ms = parseTimeParam(value, tz);
    if (ms === null) throw new Error(`truth: ${name} is not a date or ISO datetime: ${value}`);
    return ms;
  };
  const ownedApps = (names?: string[]): App[] =>
    world.apps.filter((a) => a.ownedByCaller && (!names || names.includes(a.name) || names.includes(a.endpointId)));
  const appOf = (owner: string, name: string): App => {
    const app = world.appByKey.get(`${owner}/${name}`);
    if (!app) throw new Error(`truth: no app ${owner}/${name}`);
    return app;
  };
  const usageRow = (r: UsageRow): UsageTruthRow => ({
    bucket: r.bucket,
    app: r.app.name,
    owner: r.app.owner,
    environment: r.app.environment,
    machine_type: r.machineType,
    is_surge: r.isSurge,
    quantity: r.quantity,
    unit_price: r.unitPriceNanos / 1e9,
    unit_price_nanos: r.unitPriceNanos,
    percent_discount: r.percentDiscount,
    cost_subtotal_nanos: Number(r.subtotalNanos),
    cost_discount_nanos: Number(r.discountNanos),
    cost_total_nanos: Number(r.totalNanos),
    cost_subtotal: Number(r.subtotalNanos) / 1e9,
    cost_discount: Number(r.discountNanos) / 1e9,
    cost_total: Number(r.totalNanos) / 1e9,
    currency: 'USD',
  });
  const usage = (q: { from: string; to: string; timezone?: string; timeframe?: Timeframe; apps?: string[] }) => {
    const tz = q.timezone ?? 'UTC';
    const r = computeUsage(world, model.runners, {
      startMs: time(q.from, tz, 'from'), endMs: time(q.to, tz, 'to'), tz, timeframe: q.timeframe ?? 'day', bound: true,
      apps: ownedApps(q.apps), nowMs: now(),
    });
    if (!r) throw new Error('truth: too many buckets');
    return r;
  };
  const endpointsOf = (ids?: string[]) => {
    const all = world.endpoints.filter((e) => !e.isModel && world.apps[e.appIndex].ownedByCaller);
    if (!ids) return all;
    return all.filter((e) => ids.includes(e.id) || (ids.includes(world.apps[e.appIndex].endpointId)));
  };

  const modelRow = (r: ModelUsageRow): ModelUsageTruthRow => ({
    bucket: r.bucket,
    endpoint_id: r.endpoint.id,
    unit: r.unit,
    currency: r.currency,
    legacy: r.legacy,
    api_key_id: r.key?.apiKeyId ?? null,
    login_username: r.key?.loginUsername ?? null,
    api_key_label: r.key?.label ?? '',
    quantity: r.quantity,
    unit_price_nanos: r.unitPriceNanos,
    percent_discount: r.percentDiscount,
    cost_subtotal_nanos: r.subtotalNanos,
    cost_discount_nanos: r.discountNanos,
    cost_total_nanos: r.totalNanos,
  });
  const modelUsage = (q: { from: string; to: string; timezone?: string; timeframe?: Timeframe }) => {
    const tz = q.timezone ?? 'UTC';
    const r = computeModelUsage(world, model.requests, {
      startMs: time(q.from, tz, 'from'), endMs: time(q.to, tz, 'to'), tz, timeframe: q.timeframe ?? 'day', bound: true,
      endpoints: world.endpoints.filter((e) => e.isModel), byKey: true, nowMs: now(),
    });
    if (!r) throw new Error('truth: too many buckets');
    return r;
  };

  return {
    modelUsage: (q) => modelUsage(q).series.map(modelRow),
    modelUsageSummary: (q) => modelUsage(q).summary.map(modelRow),
    modelCalls(q) {
      const tz = q.timezone ?? 'UTC';
      const eps = world.endpoints.filter((e) => e.isModel);
      const out: ModelCallTruth[] = [];
      for (const c of chargesBetween(world, model.requests, eps, time(q.from, tz, 'from'), Math.min(time(q.to, tz, 'to'), now()))) {
        out.push({
          request_id: c.req.id, endpoint_id: c.req.endpoint.id, ended_at: new Date(c.req.endedMs).toISOString(),
          api_key_id: c.key.apiKeyId, api_key_label: c.key.label, unit: c.unit, currency: c.currency,
          quantity: c.quantity, unit_price_nanos: c.unitPriceNanos, cost_total_nanos: c.totalNanos,
        });
      }
      return out;
    },
    usage: (q) => usage(q).series.map(usageRow),
    usageSummary: (q) => usage(q).summary.map(usageRow),

    requests(q) {
      const tz = q.timezone ?? 'UTC';
      const nowMs = now();
      const from = time(q.from, tz, 'from');
      const to = Math.min(time(q.to, tz, 'to'), nowMs);
      const days = bucketize(from, to, 'day', tz, false, to);
      const out: RequestDayTruth[] = [];
      if (!days || days.labels.length === 0) return out;
      for (const ep of endpointsOf(q.endpointIds)) {
        const acc = days.labels.map(() => ({ n: 0, billed: 0, billedMilli: 0, allMilli: 0 }));
        for (let h = Math.floor(from / HOUR_MS); h * HOUR_MS < to; h++) {
          for (const r of model.requests.hour(ep, h, false)) {
            if (r.endedMs < from || r.endedMs >= to) continue;
            const a = acc[bucketIndex(days.edges, r.endedMs)];
            a.n++;
            a.allMilli += r.billableMilli;
            if (r.billedAtMs <= nowMs) {
              a.billed++;
              a.billedMilli += r.billableMilli;
            }
          }
        }
        acc.forEach((a, i) => {
          if (a.n === 0) return;
          out.push({
            endpoint_id: ep.id,
            day: days.labels[i].slice(0, 10),
            request_count: a.n,
            billed_count: a.billed,
            unbilled_count: a.n - a.billed,
            billable_units_billed: Number(formatMilli(a.billedMilli)),
            billable_units_all: Number(formatMilli(a.allMilli)),
            billable_units_billed_milli: a.billedMilli,
            billable_units_all_milli: a.allMilli,
          });
        });
      }
      return out;
    },

    requestList(q) {
      const ep = world.endpointById.get(q.endpointId);
      if (!ep) throw new Error(`truth: no endpoint ${q.endpointId}`);
      const eps = ep.route === null && !ep.isModel ? world.apps[ep.appIndex].endpoints : [ep];
      const from = time(q.from, 'UTC', 'from');
      const to = Math.min(time(q.to, 'UTC', 'to'), now());
      const out: RequestTruth[] = [];
      const recs = [];
      for (const e of eps) for (let h = Math.floor(from / HOUR_MS); h * HOUR_MS < to; h++) for (const r of model.requests.hour(e, h)) if (r.endedMs >= from && r.endedMs < to) recs.push(r);
      recs.sort((a, b) => a.endedMs - b.endedMs || (a.id < b.id ? -1 : 1));
      for (const r of recs) {
        out.push({
          request_id: r.id, gateway_request_id: r.gatewayId, endpoint_id: r.endpoint.id, started_at: isoUtcMs(r.startedMs),
          sent_at: isoUtcMs(r.sentMs), ended_at: isoUtcMs(r.endedMs), status_code: r.statusCode, duration: r.durationMs / 1000,
          runner_id: r.runnerId, billable_units: r.billableMilli / 1000, billed_at: isoUtcMs(r.billedAtMs), error_type: r.errorType,
          prepare_duration: r.prepareMs / 1000, cold_boot_duration: r.coldBootMs >= 0 ? r.coldBootMs / 1000 : null,
        });
      }
      return out;
    },

    analytics(q) {
      const tz = q.timezone ?? 'UTC';
      const buckets = bucketize(time(q.from, tz, 'from'), time(q.to, tz, 'to'), q.timeframe ?? 'hour', tz, true, now());
      if (!buckets) throw new Error('truth: too many buckets');
      const targets = q.endpointIds.map((id) => {
        const ep = world.endpointById.get(id);
        if (!ep) throw new Error(`truth: no endpoint ${id}`);
        return { id, endpoints: ep.route === null && !ep.isModel ? world.apps[ep.appIndex].endpoints : [ep] };
      });
      return computeAnalytics(model.requests, targets, buckets, ANALYTICS_METRICS).series.map((r) => ({
        bucket: r.bucket!, endpoint_id: r.endpointId, ...r.values,
      }));
    },

    analyticsSummary(q) {
      const tz = q.timezone ?? 'UTC';
      const buckets = bucketize(time(q.from, tz, 'from'), time(q.to, tz, 'to'), q.timeframe ?? 'day', tz, true, now());
      if (!buckets) throw new Error('truth: too many buckets');
      const targets = q.endpointIds.map((id) => {
        const ep = world.endpointById.get(id);
        if (!ep) throw new Error(`truth: no endpoint ${id}`);
        return { id, endpoints: ep.route === null && !ep.isModel ? world.apps[ep.appIndex].endpoints : [ep] };
      });
      return computeAnalytics(model.requests, targets, buckets, ANALYTICS_METRICS).summary.map((r) => ({ endpoint_id: r.endpointId, ...r.values }));
    },

    runnerHistory(q) {
      const tz = q.timezone ?? 'UTC';
      const buckets = bucketize(time(q.from, tz, 'from'), time(q.to, tz, 'to'), q.timeframe ?? 'hour', tz, true, now());
      if (!buckets) throw new Error('truth: too many buckets');
      return computeRunnerHistory(model.runners.of(appOf(q.owner, q.name)), buckets, q.aggregation ?? 'max');
    },

    runnerStates(q) {
      const ar = model.runners.of(appOf(q.owner, q.name));
      const nowMs = now();
      return ar.runnersUntil(nowMs + 1).map((r) => {
        const s = ar.stateAt(r, nowMs)!;
        return { runner_id: r.id, state: s.state, since: isoUtcMs(s.sinceMs), machine_type: r.machineType, termination_reason: r.endMs <= nowMs ? r.terminationReason : null };
      });
    },

    apps: () =>
      world.apps.map((a) => ({
        endpoint_id: a.endpointId, app_id: a.appId, owner: a.owner, name: a.name, environment: a.environment,
        owned_by_caller: a.ownedByCaller, machine_types: a.machineTypes, endpoints: a.endpoints.map((e) => e.id),
        webhooks: a.webhooks, billing: a.billing,
        settings: {
          auth_mode: a.authMode, keep_alive: a.keepAliveSeconds, min_concurrency: a.minConcurrency, max_concurrency: a.maxConcurrency,
          request_timeout: a.requestTimeoutSeconds, startup_timeout: a.startupTimeoutSeconds, valid_regions: [...a.validRegions],
        },
      })),

    events: (owner, name) =>
      model.activity.events(appOf(owner, name), now()).map((e) => ({ event_id: e.eventId, category: e.category, created_at: isoUtcMs(e.createdMs), payload: e.payload })),

    revisions(owner, name) {
      const app = appOf(owner, name);
      const nowMs = now();
      const current = model.activity.revisionAt(app, nowMs);
      return model.activity.revisions(app).filter((r) => r.createdMs <= nowMs).reverse().map((r) => ({
        revision_id: r.revisionId, created_at: isoUtcMs(r.createdMs), is_current: r === current, status: r.status,
        message: r.message, deployed_by: r.deployedBy, annotations: r.annotations,
      }));
    },

    webhooksSent: () => webhooks.sent(),
    drainSent: () => drain.sent(),

    logRecords(q) {
      const toMs = Math.min(time(q.to, 'UTC', 'to'), now());
      return drain.collect(time(q.from, 'UTC', 'from'), toMs, q.apps).map((l) => logRecord(model, l));
    },

    queueSize(owner, name, at) {
      const ms = at instanceof Date ? at.getTime() : time(at, 'UTC', 'at');
      return queueSize(world, model.runners, appOf(owner, name), ms);
    },

    runnerMetrics(runnerId, at) {
      const ms = at === undefined ? now() : at instanceof Date ? at.getTime() : time(at, 'UTC', 'at');
      return runnerMetricsAt(world, model.runners, runnerId, ms);
    },

    liveRunners(at) {
      const ms = at === undefined ? now() : at instanceof Date ? at.getTime() : time(at, 'UTC', 'at');
      return liveRunnerIds(world, model.runners, ms);
    },

    modelFootprints: () =>
      ownedApps().map((a) => {
        const fp = modelFootprint(world, a);
        return { app: a.name, owner: a.owner, machine_types: [...a.machineTypes], vram_need_bytes: fp.vramNeedBytes, over_provisioned: fp.overProvisioned };
      }),

    efficiency(q) {
      const tz = q.timezone ?? 'UTC';
      const result = usage({ from: q.from, to: q.to, timezone: tz, timeframe: 'day' });
      const edges = result.buckets.edges;
      const out: EfficiencyTruthRow[] = [];
      const perAppDay = new Map<string, { w: number[]; exact: number[] }>();
      const dayOf = (app: App, i: number) => {
        const key = `${app.index}|${i}`;
        let v = perAppDay.get(key);
        if (v) return v;
        const ar = model.runners.of(app);
        const hours = bucketize(edges[i], edges[i + 1], 'hour', tz, true, now())!;
        const w = [0, 0, 0];
        for (const p of computeRunnerHistory(ar, hours, 'avg')) {
          w[0] += Math.round((p.running ?? 0) * 1000);
          w[1] += Math.round((p.idle ?? 0) * 1000);
          w[2] += Math.round((p.draining ?? 0) * 1000);
        }
        const exact = [0, 0, 0];
        const cap = Math.min(edges[i + 1], now());
        for (const r of ar.runnersOverlapping(edges[i], cap)) {
          for (const [state, a, b] of ar.timeline(r)) {
            const cls = historyClass(state);
            const k = cls === 'running' ? 0 : cls === 'idle' ? 1 : cls === 'draining' ? 2 : -1;
            if (k < 0) continue;
            const e = Math.min(b, cap) - Math.max(a, edges[i]);
            if (e > 0) exact[k] += e / 1000;
          }
        }
        perAppDay.set(key, (v = { w, exact }));
        return v;
      };
      for (const row of result.series) {
        const { w, exact } = dayOf(row.app, row.bucketIndex);
        const total = row.totalNanos * 1000n;
        const [busy, idle, draining] = splitByWeights(total, w);
        out.push({
          day: row.bucket!.slice(0, 10), app: row.app.name, owner: row.app.owner, machine_type: row.machineType, is_surge: row.isSurge,
          quantity: row.quantity, cost_total_picos: total, busy_picos: busy, idle_picos: idle, draining_picos: draining,
          weights_milli: { running: w[0], idle: w[1], draining: w[2] },
          exact_seconds: { running: exact[0], idle: exact[1], draining: exact[2] },
        });
      }
      return out;
    },

    rightSizing(q) {
      const result = usage({ from: q.from, to: q.to, timeframe: 'day' });
      const quantities = result.series.map((r) => ({ app: r.app, machineType: r.machineType, quantity: r.quantity }));
      return rightSizingTruth(world, quantities, { margin: q.margin, candidates: q.candidates });
    },
  };
}
