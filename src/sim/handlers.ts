// The Platform API routes of the simulator. Each handler reads the model at the virtual "now" and returns the
// serialised JSON; paging state lives in opaque cursors that pin the time bound they were issued with, so the
// union of all pages is exactly the set even while the clock moves between pages.
import type { SimModel } from './model.js';
import type { App, Endpoint } from './world.js';
import type { Req } from './requests.js';
import { compareByEnded } from './requests.js';
import { CursorCodec, type CursorState } from './cursor.js';
import { ApiError, bad, Params } from './http-util.js';
import { computeUsage, usageRowJson, type UsageResult } from './usage.js';
import { billingEventJson, chargesBetween, computeModelUsage, modelPriceAt, modelUsageRowJson, pricingOf, type ModelUsageResult } from './model-billing.js';
import { ANALYTICS_METRICS, BASE_METRICS, INTERFACE_BASE_METRICS, INTERFACE_EXPAND_METRICS, computeAnalytics, computeRunnerHistory, type AnalyticsMetric, type AnalyticsRow, type ServedMetric } from './analytics.js';
import { bucketize, defaultTimeframe, HOUR_MS, DAY_MS, isoUtcMs, type Timeframe } from './time.js';
import { formatMilli, formatNanos, RawJson, toJson } from './money.js';
import { hashString, hex } from './prng.js';
import { activeRunners, queueSize } from './metrics.js';
import type { LogLine } from './activity.js';
import { logRecord } from './drain.js';
import type { LRUCache } from 'lru-cache';

export interface Reply {
  status: number;
  body: string;
  contentType?: string;
  headers?: Record<string, string>;
  /** Records (items, rows, events ...) in the body, for the records-served statistic. */
  records: number;
}

export const json = (value: unknown, records = 0, status = 200): Reply => ({ status, body: toJson(value), records });

export class Handlers {
  private readonly cursors: CursorCodec;
  // Answers computed once and paged from the cache (a cursor pins the "now" they were computed at).
  private readonly usageCache: LRUCache<string, UsageResult>;
  private readonly modelUsageCache: LRUCache<string, ModelUsageResult>;
  private readonly analyticsCache: LRUCache<string, { series: AnalyticsRow[]; summary: AnalyticsRow[] }>;
  private readonly durationSortCache: LRUCache<string, Req[]>;

  /**
   * `strict`: serve exactly what the interface lists (sim --strict-interface): `expand` only with the interface's
   * metric names (422 otherwise), rates where the notes give counts, runner history 24 hours back.
   */
  constructor(private readonly model: SimModel, private readonly strict = false) {
    this.cursors = new CursorCodec(model.world.seed);
    this.usageCache = model.caches.create('usageRows', (r) => r.series.length + r.summary.length);
    this.modelUsageCache = model.caches.create('modelUsageRows', (r) => r.series.length + r.summary.length);
    this.analyticsCache = model.caches.create('analyticsRows', (r) => r.series.length + r.summary.length);
    this.durationSortCache = model.caches.create('durationSorted', (list) => list.length);
  }

  private get world() {
    return this.model.world;
  }

  private owns(owner: string): boolean {
    return this.world.callerOwners.includes(owner);
  }

  private fingerprint(route: string, p: Params): string {
    return hex(hashString(route + '?' + p.canonical(['cursor', 'limit'])), 8);
  }

  private cursorState(p: Params, fp: string): CursorState | null {
    const c = p.one('cursor');
    if (c === undefined || c === '') return null;
    const s = this.cursors.decode(c, fp);
    if ('error' in s && typeof s.error === 'string') throw bad(s.error);
    return s as CursorState;
  }

  private ownedApps(): App[] {
    return this.world.apps.filter((a) => this.owns(a.owner));
  }

  private appFromPath(owner: string, name: string): App {
    const app = this.world.appByKey.get(`${owner}/${name}`);
    if (!app) throw new ApiError(404, 'not_found', `app '${owner}/${name}' does not exist`);
    if (!this.owns(app.owner)) throw new ApiError(403, 'authorization_error', `you do not own the app '${owner}/${name}'`);
    return app;
  }

  /** endpoint_id values → concrete endpoints; a bare owner/app stands for all of its routes. */
  private resolveEndpoints(p: Params, kind: 'serverless' | 'models'): Array<{ id: string; endpoints: Endpoint[] }> {
    const ids = p.list('endpoint_id');
    if (!ids || ids.length === 0) throw bad('endpoint_id: required; 1 to 50 endpoint ids (owner/app or owner/app/route)');
    const seen = new Set<string>();
    const out: Array<{ id: string; endpoints: Endpoint[] }> = [];
    for (const id of ids) {
      if (seen.has(id)) continue;
      seen.add(id);
      const ep = this.world.endpointById.get(id);
      if (!ep) throw new ApiError(404, 'not_found', `endpoint_id: no endpoint '${id}'`);
      if (kind === 'models') {
        if (!ep.isModel) throw new ApiError(404, 'not_found', `endpoint_id: '${id}' is not a public model endpoint`);
        out.push({ id, endpoints: [ep] });
        continue;
      }
      if (ep.isModel || !this.owns(ep.owner)) throw new ApiError(403, 'authorization_error', `endpoint_id: you do not own '${id}'`);
      out.push({ id, endpoints: ep.route === null ? this.world.apps[ep.appIndex].endpoints : [ep] });
    }
    return out;
  }

  meta(): Reply {
    return json({ webhook_ip_ranges: ['127.0.0.0/8', '::1/128', '203.0.113.0/24', '198.51.100.16/28'] });
  }

  models(p: Params, nowMs: number): Reply {
    const fp = this.fingerprint('models', p);
    const limit = p.int('limit', 50, 1, 100);
    const state = this.cursorState(p, fp);
    const offset = state ? Number(state.o) : 0;
    const all = this.world.models;
    const page = all.slice(offset, offset + limit);
    const hasMore = offset + limit < all.length;
    return json({
      models: page.map((m) => ({
        endpoint_id: m.endpointId,
        metadata: { display_name: m.displayName, category: m.category, description: m.description, status: m.status, tags: m.tags, updated_at: isoUtcMs(m.updatedAtMs) },
      })),
      next_cursor: hasMore ? this.cursors.encode({ q: fp, o: offset + limit }) : null,
      has_more: hasMore,
    }, page.length);
    void nowMs;
  }

  // ---- requests by endpoint ----

  requestsByEndpoint(p: Params, nowMs: number): Reply {
    const targets = this.resolveEndpoints(p, 'serverless');
    const eps = [...new Map(targets.flatMap((t) => t.endpoints).map((e) => [e.index, e])).values()].sort((a, b) => a.index - b.index);
    const setKey = eps.map((e) => e.index).join(',');
    const expand = p.list('expand') ?? [];
    for (const e of expand) if (e !== 'billing' && e !== 'payloads') throw bad(`expand: expected billing or payloads, got '${e}'`);
    const billing = expand.includes('billing');
    const status = p.one('status');
    if (status !== undefined && !['success', 'error', 'user_error'].includes(status)) throw bad(`status: expected success, error or user_error, got '${status}'`);
    const sortBy = p.oneOf('sort_by', ['ended_at', 'duration'] as const, 'ended_at');
    const limit = p.int('limit', 50, 1, 100);
    const requestId = p.one('request_id');
    const tz = p.timezone();
    const { startMs, endMs } = p.window(tz, nowMs);
    const fp = this.fingerprint('requests', p);
    const state = this.cursorState(p, fp);
    const upperMs = Math.min(state ? Number(state.u) : Math.min(endMs, nowMs), nowMs);
    const matches = (r: Req): boolean =>
      r.endedMs >= startMs && r.endedMs < upperMs && (status === undefined || r.statusClass === status) && (requestId === undefined || r.id === requestId);

    const items: Req[] = [];
    let hasMore = false;
    if (requestId !== undefined) {
      const r = this.model.requests.byId(requestId);
      if (r && eps.includes(r.endpoint) && matches(r) && !state) items.push(r);
    } else if (sortBy === 'ended_at') {
      const key = state ? (state.k as [number, string]) : null;
      let h = Math.floor((key ? key[0] : startMs) / HOUR_MS);
      outer: for (; h * HOUR_MS < upperMs; h++) {
        const list = this.model.requests.hourMerged(eps, setKey, h);
        let i = 0;
        if (key && Math.floor(key[0] / HOUR_MS) === h) {
          // first record strictly after the cursor key
          let lo = 0;
          let hi = list.length;
          while (lo < hi) {
            const mid = (lo + hi) >>> 1;
            const r = list[mid];
            if (r.endedMs < key[0] || (r.endedMs === key[0] && r.id <= key[1])) lo = mid + 1;
            else hi = mid;
          }
          i = lo;
        }
        for (; i < list.length; i++) {
          const r = list[i];
          if (r.endedMs >= upperMs) break outer;
          if (!matches(r)) continue;
          if (items.length === limit) {
            hasMore = true;
            break outer;
          }
          items.push(r);
        }
      }
    } else {
      const cacheKey = `${fp}|${upperMs}`;
      let all = this.durationSortCache.get(cacheKey);
      if (!all) {
        all = [];
        for (let h = Math.floor(startMs / HOUR_MS); h * HOUR_MS < upperMs; h++) {
          for (const r of this.model.requests.hourMerged(eps, setKey, h)) if (matches(r)) all.push(r);
        }
        all.sort((a, b) => a.durationMs - b.durationMs || compareByEnded(a, b));
        this.durationSortCache.set(cacheKey, all);
      }
      let i = 0;
      if (state) {
        const [d, e, id] = state.k as [number, number, string];
        let lo = 0;
        let hi = all.length;
        while (lo < hi) {
          const mid = (lo + hi) >>> 1;
          const r = all[mid];
          const after = r.durationMs > d || (r.durationMs === d && (r.endedMs > e || (r.endedMs === e && r.id > id)));
          if (!after) lo = mid + 1;
          else hi = mid;
        }
        i = lo;
      }
      for (const r of all.slice(i, i + limit)) items.push(r);
      hasMore = i + limit < all.length;
    }
    let body = '{"items":[';
    for (let i = 0; i < items.length; i++) {
      const r = items[i];
      body += (i ? ',' : '') + r.head;
      if (billing) body += r.billedAtMs <= nowMs ? ',"billable_units":' + formatMilli(r.billableMilli) + '}' : ',"billable_units":null}';
      else body += '}';
    }
    let next: string | null = null;
    if (hasMore) {
      const last = items[items.length - 1];
      next = this.cursors.encode(
        sortBy === 'ended_at' ? { q: fp, u: upperMs, k: [last.endedMs, last.id] } : { q: fp, u: upperMs, k: [last.durationMs, last.endedMs, last.id] },
      );
    }
    body += '],"next_cursor":' + (next ? '"' + next + '"' : 'null') + ',"has_more":' + hasMore + '}';
    return { status: 200, body, records: items.length };
  }

  // ---- usage ----

  usage(p: Params, nowMs: number): Reply {
    const tz = p.timezone();
    const names = p.list('app');
    const search = p.one('search')?.toLowerCase();
    const expand = p.list('expand') ?? [];
    let wantSeries = expand.includes('time_series');
    const wantSummary = expand.includes('summary');
    if (!wantSeries && !wantSummary) wantSeries = true;
    const { startMs, endMs } = p.window(tz, nowMs);
    const timeframe = p.timeframe() ?? defaultTimeframe(startMs, endMs);
    const bound = p.bool('bound_to_timeframe', true);
    const limit = p.int('limit', 100, 1, 1000);
    const fp = this.fingerprint('usage', p);
    const state = this.cursorState(p, fp);
    const pinnedNow = state ? Math.min(Number(state.n), nowMs) : nowMs;
    const offset = state ? Number(state.o) : 0;
    const apps = this.ownedApps().filter(
      (a) => (!names || names.includes(a.name)) && (!search || a.name.toLowerCase().includes(search)),
    );
    const cacheKey = `${fp}|${pinnedNow}`;
    let result = this.usageCache.get(cacheKey);
    if (!result) {
      const r = computeUsage(this.world, this.model.runners, { startMs, endMs, tz, timeframe, bound, apps, nowMs: pinnedNow });
      if (!r) throw bad(`timeframe: ${timeframe} buckets over this range exceed 10000; use a larger timeframe or a shorter range`);
      result = r;
      this.usageCache.set(cacheKey, result);
    }
    return this.seriesPage(result, { wantSummary, wantSeries, offset, limit, fp, pinnedNow }, usageRowJson);
  }

  /** One page of a usage answer: summary rows first, then the time series grouped by bucket. */
  private seriesPage<R extends { bucketIndex: number; bucket: string | null }>(
    result: { series: R[]; summary: R[] },
    o: { wantSummary: boolean; wantSeries: boolean; offset: number; limit: number; fp: string; pinnedNow: number },
    rowJson: (row: R) => Record<string, unknown>,
  ): Reply {
    const stream = [...(o.wantSummary ? result.summary : []), ...(o.wantSeries ? result.series : [])];
    const page = stream.slice(o.offset, o.offset + o.limit);
    const hasMore = o.offset + o.limit < stream.length;
    const out: Record<string, unknown> = {
      next_cursor: hasMore ? this.cursors.encode({ q: o.fp, n: o.pinnedNow, o: o.offset + o.limit }) : null,
      has_more: hasMore,
    };
    if (o.wantSummary) out.summary = page.filter((r) => r.bucketIndex < 0).map(rowJson);
    if (o.wantSeries) out.time_series = groupByBucket(page.filter((r) => r.bucketIndex >= 0), (r) => r.bucket!, rowJson);
    return json(out, page.length);
  }

  // ---- model APIs: usage, pricing, billing events ----

  private modelEndpoints(p: Params): Endpoint[] {
    const ids = p.list('endpoint_id');
    if (!ids) return this.world.endpoints.filter((e) => e.isModel);
    return this.resolveEndpoints(p, 'models').flatMap((t) => t.endpoints);
  }

  modelsUsage(p: Params, nowMs: number): Reply {
    const tz = p.timezone();
    const expand = p.list('expand') ?? [];
    for (const e of expand) {
      if (!['time_series', 'summary', 'auth_method', 'auth_method_structured'].includes(e)) {
        throw bad(`expand: expected time_series, summary, auth_method or auth_method_structured, got '${e}'`);
      }
    }
    let wantSeries = expand.includes('time_series');
    const wantSummary = expand.includes('summary');
    if (!wantSeries && !wantSummary) wantSeries = true;
    const expands = { authMethod: expand.includes('auth_method'), structured: expand.includes('auth_method_structured') };
    const { startMs, endMs } = p.window(tz, nowMs);
    const timeframe = p.timeframe() ?? defaultTimeframe(startMs, endMs);
    const bound = p.bool('bound_to_timeframe', true);
    const limit = p.int('limit', 100, 1, 1000);
    const endpoints = this.modelEndpoints(p);
    const fp = this.fingerprint('models-usage', p);
    const state = this.cursorState(p, fp);
    const pinnedNow = state ? Math.min(Number(state.n), nowMs) : nowMs;
    const offset = state ? Number(state.o) : 0;
    const cacheKey = `${fp}|${pinnedNow}`;
    let result = this.modelUsageCache.get(cacheKey);
    if (!result) {
      const r = computeModelUsage(this.world, this.model.requests, {
        startMs, endMs, tz, timeframe, bound, endpoints, nowMs: pinnedNow,
        byKey: expands.authMethod || expands.structured,
        apiKeyId: p.one('api_key_id'),
        loginUsername: p.one('login_username'),
      });
      if (!r) throw bad(`timeframe: ${timeframe} buckets over this range exceed 10000; use a larger timeframe or a shorter range`);
      result = r;
      this.modelUsageCache.set(cacheKey, result);
    }
    return this.seriesPage(result, { wantSummary, wantSeries, offset, limit, fp, pinnedNow }, (r) => modelUsageRowJson(r, expands));
  }

  modelsPricing(p: Params, nowMs: number): Reply {
    const targets = this.resolveEndpoints(p, 'models');
    const fp = this.fingerprint('models-pricing', p);
    const limit = p.int('limit', 50, 1, 100);
    const state = this.cursorState(p, fp);
    const offset = state ? Number(state.o) : 0;
    const all = targets.flatMap((t) => t.endpoints);
    const page = all.slice(offset, offset + limit);
    const hasMore = offset + limit < all.length;
    return json({
      prices: page.map((ep) => {
        const pricing = pricingOf(ep);
        return { endpoint_id: ep.id, unit_price: new RawJson(formatNanos(modelPriceAt(this.world, ep, nowMs))), unit: pricing.unit, currency: pricing.currency };
      }),
      next_cursor: hasMore ? this.cursors.encode({ q: fp, o: offset + limit }) : null,
      has_more: hasMore,
    }, page.length);
  }

  modelsBillingEvents(p: Params, nowMs: number): Reply {
    const { startMs, endMs } = p.window('UTC', nowMs);
    if (endMs - startMs > 90 * DAY_MS) throw bad('start, end: at most 90 days per call');
    const endpoints = this.modelEndpoints(p);
    const requestId = p.one('request_id');
    const apiKeyId = p.one('api_key_id');
    const login = p.one('login_username');
    const limit = p.int('limit', 1000, 1, 10_000);
    const fp = this.fingerprint('models-billing-events', p);
    const state = this.cursorState(p, fp);
    const pinnedNow = state ? Math.min(Number(state.n), nowMs) : nowMs;
    const offset = state ? Number(state.o) : 0;
    const events = [];
    for (const c of chargesBetween(this.world, this.model.requests, endpoints, startMs, Math.min(endMs, pinnedNow))) {
      if (requestId !== undefined && c.req.id !== requestId) continue;
      if (apiKeyId !== undefined && c.key.apiKeyId !== apiKeyId) continue;
      if (login !== undefined && c.key.loginUsername !== login) continue;
      events.push(c);
    }
    events.sort((a, b) => a.req.endedMs - b.req.endedMs || (a.req.id < b.req.id ? -1 : a.req.id > b.req.id ? 1 : 0));
    const page = events.slice(offset, offset + limit);
    const hasMore = offset + limit < events.length;
    return json({
      billing_events: page.map(billingEventJson),
      next_cursor: hasMore ? this.cursors.encode({ q: fp, n: pinnedNow, o: offset + limit }) : null,
      has_more: hasMore,
    }, page.length);
  }

  // ---- analytics ----

  analytics(p: Params, nowMs: number, kind: 'serverless' | 'models'): Reply {
    const targets = this.resolveEndpoints(p, kind);
    const tz = p.timezone();
    const expand = p.list('expand') ?? [];
    let wantSeries = false;
    let wantSummary = false;
    const metrics: AnalyticsMetric[] = [];
    for (const e of expand) {
      if (e === 'time_series') wantSeries = true;
      else if (e === 'summary') wantSummary = true;
      else if (this.strict && !(INTERFACE_EXPAND_METRICS as readonly string[]).includes(e)) {
        throw new ApiError(422, 'validation_error', `expand: '${e}' is not an analytics metric name; expected time_series, summary or one of ${INTERFACE_EXPAND_METRICS.join(', ')}`);
      } else if ((ANALYTICS_METRICS as readonly string[]).includes(e)) {
        if (!metrics.includes(e as AnalyticsMetric)) metrics.push(e as AnalyticsMetric);
      } else throw bad(`expand: unknown value '${e}'; expected time_series, summary or a metric name (${ANALYTICS_METRICS.join(', ')})`);
    }
    if (!wantSeries && !wantSummary) wantSeries = true;
    // The interface's base analytics come with every answer; the notes' platform serves its base set only when no
    // metric is named.
    const chosen: ServedMetric[] = this.strict ? [...INTERFACE_BASE_METRICS, ...metrics] : metrics.length ? metrics : BASE_METRICS;
    const { startMs, endMs } = p.window(tz, nowMs);
    const timeframe = p.timeframe() ?? defaultTimeframe(startMs, endMs);
    const bound = p.bool('bound_to_timeframe', true);
    const limit = p.int('limit', 100, 1, 1000);
    const fp = this.fingerprint(kind + '-analytics', p);
    const state = this.cursorState(p, fp);
    const pinnedNow = state ? Math.min(Number(state.n), nowMs) : nowMs;
    const offset = state ? Number(state.o) : 0;
    const cacheKey = `${fp}|${pinnedNow}`;
    let result = this.analyticsCache.get(cacheKey);
    if (!result) {
      const buckets = bucketize(startMs, endMs, timeframe, tz, bound, pinnedNow);
      if (!buckets) throw bad(`timeframe: ${timeframe} buckets over this range exceed 10000; use a larger timeframe or a shorter range`);
      result = computeAnalytics(this.model.requests, targets, buckets, chosen);
      this.analyticsCache.set(cacheKey, result);
    }
    const stream = [...(wantSummary ? result.summary : []), ...(wantSeries ? result.series : [])];
    const page = stream.slice(offset, offset + limit);
    const hasMore = offset + limit < stream.length;
    const rowJson = (r: AnalyticsRow): Record<string, unknown> => ({ endpoint_id: r.endpointId, ...r.values });
    const out: Record<string, unknown> = {
      next_cursor: hasMore ? this.cursors.encode({ q: fp, n: pinnedNow, o: offset + limit }) : null,
      has_more: hasMore,
    };
    if (wantSummary) out.summary = page.filter((r) => r.bucketIndex < 0).map(rowJson);
    if (wantSeries) out.time_series = groupByBucket(page.filter((r) => r.bucketIndex >= 0), (r) => r.bucket!, rowJson);
    return json(out, page.length);
  }

  // ---- apps ----

  appJson(app: App, nowMs: number, withEndpoints: boolean): Record<string, unknown> {
    const revs = this.model.activity.revisions(app).filter((r) => r.createdMs <= nowMs);
    return {
      endpoint_id: app.endpointId,
      app_id: app.appId,
      owner: app.owner,
      name: app.name,
      environment: app.environment,
      machine_type: app.machineTypes[0],
      machine_types: app.machineTypes,
      auth_mode: app.authMode,
      keep_alive: app.keepAliveSeconds,
      min_concurrency: app.minConcurrency,
      max_concurrency: app.maxConcurrency,
      request_timeout: app.requestTimeoutSeconds,
      startup_timeout: app.startupTimeoutSeconds,
      valid_regions: app.validRegions,
      updated_at: isoUtcMs(revs.length ? revs[revs.length - 1].createdMs : app.createdAtMs),
      active_runners: activeRunners(this.model.runners, app, nowMs),
      queue_size: queueSize(this.world, this.model.runners, app, nowMs),
      ...(withEndpoints ? { endpoints: app.endpoints.map((e) => e.id) } : {}),
    };
  }

  apps(p: Params, nowMs: number): Reply {
    const env = p.one('environment');
    const search = p.one('search')?.toLowerCase();
    const expand = p.list('expand') ?? [];
    const apps = this.ownedApps()
      .filter((a) => (!env || a.environment === env) && (!search || a.name.toLowerCase().includes(search)))
      .sort((a, b) => (a.endpointId < b.endpointId ? -1 : 1));
    return json({ apps: apps.map((a) => this.appJson(a, nowMs, expand.includes('endpoints'))) }, apps.length);
  }

  queue(owner: string, name: string, nowMs: number): Reply {
    const app = this.appFromPath(owner, name);
    return json({ queue_size: queueSize(this.world, this.model.runners, app, nowMs) }, 1);
  }

  events(owner: string, name: string, p: Params, nowMs: number): Reply {
    const app = this.appFromPath(owner, name);
    const { startMs, endMs } = p.window('UTC', nowMs);
    const categories = p.list('category');
    const limit = p.int('limit', 100, 1, 1000);
    const fp = this.fingerprint(`events/${app.endpointId}`, p);
    const state = this.cursorState(p, fp);
    const pinnedNow = state ? Math.min(Number(state.n), nowMs) : nowMs;
    const offset = state ? Number(state.o) : 0;
    const all = this.model.activity
      .events(app, pinnedNow, { fromMs: startMs, toMs: endMs })
      .filter((e) => e.createdMs >= startMs && e.createdMs < endMs && (!categories || categories.includes(e.category)));
    const page = all.slice(offset, offset + limit);
    const hasMore = offset + limit < all.length;
    return json({
      next_cursor: hasMore ? this.cursors.encode({ q: fp, n: pinnedNow, o: offset + limit }) : null,
      has_more: hasMore,
      endpoint_id: app.endpointId,
      events: page.map((e) => ({ event_id: e.eventId, category: e.category, created_at: isoUtcMs(e.createdMs), payload: e.payload })),
    }, page.length);
  }

  revisions(owner: string, name: string, p: Params, nowMs: number): Reply {
    const app = this.appFromPath(owner, name);
    const limit = p.int('limit', 50, 1, 100);
    const fp = this.fingerprint(`revisions/${app.endpointId}`, p);
    const state = this.cursorState(p, fp);
    const pinnedNow = state ? Math.min(Number(state.n), nowMs) : nowMs;
    const offset = state ? Number(state.o) : 0;
    const visible = this.model.activity.revisions(app).filter((r) => r.createdMs <= pinnedNow);
    const current = this.model.activity.revisionAt(app, pinnedNow);
    const newestFirst = [...visible].reverse();
    const page = newestFirst.slice(offset, offset + limit);
    const hasMore = offset + limit < newestFirst.length;
    return json({
      next_cursor: hasMore ? this.cursors.encode({ q: fp, n: pinnedNow, o: offset + limit }) : null,
      has_more: hasMore,
      revisions: page.map((r) => ({
        revision_id: r.revisionId, created_at: isoUtcMs(r.createdMs), is_current: r === current, message: r.message,
        annotations: r.annotations, status: r.status, deployed_by: r.deployedBy,
      })),
    }, page.length);
  }

  runnerHistory(owner: string, name: string, p: Params, nowMs: number): Reply {
    const app = this.appFromPath(owner, name);
    const tz = p.timezone();
    const { startMs, endMs } = p.window(tz, nowMs);
    if (this.strict && startMs < nowMs - DAY_MS) throw new ApiError(422, 'validation_error', 'start: runner history goes at most 24 hours back');
    if (startMs < nowMs - 90 * DAY_MS) throw bad('start: at most 90 days back');
    const timeframe: Timeframe = p.timeframe() ?? 'hour';
    const aggregation = p.oneOf('aggregation', ['max', 'avg'] as const, 'max');
    const buckets = bucketize(startMs, endMs, timeframe, tz, true, nowMs);
    if (!buckets) throw bad(`timeframe: ${timeframe} buckets over this range exceed 10000; use a larger timeframe or a shorter range`);
    const history = computeRunnerHistory(this.model.runners.of(app), buckets, aggregation);
    return json({ endpoint_id: app.endpointId, timeframe, aggregation, history }, history.length);
  }

  // ---- logs ----

  /**
   * What a logs history or stream call asks for (the same parameters and label-filter body): the apps, and a
   * test of a line's fields other than its time.
   */
  logSelection(p: Params, body: unknown): { apps: App[]; matches(l: LogLine): boolean } {
    const filters = parseLabelFilters(body);
    const ids = p.list('app_id');
    let apps: App[];
    if (ids) {
      apps = ids.map((id) => {
        const app = this.world.appByKey.get(id) ?? this.world.appById.get(id);
        if (!app) throw new ApiError(404, 'not_found', `app_id: no app '${id}'`);
        if (!this.owns(app.owner)) throw new ApiError(403, 'authorization_error', `app_id: you do not own '${id}'`);
        return app;
      });
    } else apps = this.ownedApps();
    apps = [...new Set(apps)].sort((a, b) => a.index - b.index);
    const revision = p.one('revision');
    const search = p.one('search')?.toLowerCase();
    const levels = p.list('level')?.map((l) => l.toUpperCase());
    const jobId = p.one('job_id');
    const requestId = p.one('request_id');
    const matches = (l: LogLine): boolean =>
      (!revision || l.revisionId === revision) &&
      (!search || l.message.toLowerCase().includes(search)) &&
      (!levels || levels.includes(l.level)) &&
      (!jobId || l.labels.svc_job_id === jobId) &&
      (!requestId || l.labels.svc_request_id === requestId) &&
      labelFiltersMatch(filters, l);
    return { apps, matches };
  }

  /** A log record as history and stream answer it: `labels` holds every key of the record but the first four. */
  logItem(l: LogLine): Record<string, unknown> {
    const { timestamp, level, message, ...labels } = logRecord(this.model, l);
    return { timestamp, level, message, app: this.world.apps[l.appIndex].name, revision: l.revisionId, labels };
  }

  /**
   * Newest first. `next_cursor` is the timestamp of the page's oldest record, the (exclusive) upper bound of the
   * next page; a page never splits the records of one millisecond, so it may hold a few more than `limit`.
   */
  logsHistory(p: Params, body: unknown, nowMs: number): Reply {
    const { apps, matches } = this.logSelection(p, body);
    const limit = p.int('limit', 100, 1, 1000);
    const { startMs, endMs } = p.window('UTC', nowMs);
    const cursor = p.one('cursor');
    const cursorMs = cursor === undefined ? undefined : Date.parse(cursor);
    if (cursorMs !== undefined && !Number.isFinite(cursorMs)) throw bad(`cursor: expected the next_cursor timestamp of a previous page, got '${cursor}'`);
    const upperMs = Math.min(endMs, nowMs, cursorMs ?? Infinity);
    const items: LogLine[] = [];
    let hasMore = false;
    outer: for (let h = Math.floor((upperMs - 1) / HOUR_MS); h >= Math.floor(startMs / HOUR_MS); h--) {
      const merged: LogLine[] = [];
      for (const app of apps) for (const l of this.model.activity.logs(app, h)) merged.push(l);
      merged.sort((a, b) => b.tsMs - a.tsMs || b.appIndex - a.appIndex || b.seq - a.seq);
      for (const l of merged) {
        if (l.tsMs >= upperMs || !matches(l)) continue;
        if (l.tsMs < startMs) break outer;
        if (items.length >= limit && l.tsMs !== items[items.length - 1].tsMs) {
          hasMore = true;
          break outer;
        }
        items.push(l);
      }
    }
    return json({
      next_cursor: hasMore ? isoUtcMs(items[items.length - 1].tsMs) : null,
      has_more: hasMore,
      items: items.map((l) => this.logItem(l)),
    }, items.length);
  }
}

function groupByBucket<R>(rows: R[], bucketOf: (r: R) => string, toJsonRow: (r: R) => Record<string, unknown>): Array<{ bucket: string; results: Array<Record<string, unknown>> }> {
  const out: Array<{ bucket: string; results: Array<Record<string, unknown>> }> = [];
  for (const r of rows) {
    const b = bucketOf(r);
    const last = out[out.length - 1];
    if (last && last.bucket === b) last.results.push(toJsonRow(r));
    else out.push({ bucket: b, results: [toJsonRow(r)] });
  }
  return out;
}

export interface LabelFilter {
  key: string;
  /** exact | contains | equals | in | not_equals | not_in */
  op: string;
  values: string[];
}

/** Accepts both notations: `{key, value, condition_type: EXACT|CONTAINS}` and `equals|in|not_equals|not_in`. */
export function parseLabelFilters(body: unknown): LabelFilter[] {
  if (body === undefined || body === null || body === '') return [];
  const list = Array.isArray(body) ? body : typeof body === 'object' && Array.isArray((body as { filters?: unknown }).filters) ? (body as { filters: unknown[] }).filters : null;
  if (!list) throw bad('body: expected a JSON array of label filters {key, value, condition_type}');
  return list.map((f, i) => {
    if (!f || typeof f !== 'object') throw bad(`body[${i}]: expected an object {key, value, condition_type}`);
    const o = f as Record<string, unknown>;
    if (typeof o.key !== 'string' || !o.key) throw bad(`body[${i}].key: expected a label name`);
    const op = String(o.condition_type ?? o.condition ?? 'EXACT').toLowerCase();
    if (!['exact', 'contains', 'equals', 'in', 'not_equals', 'not_in'].includes(op)) {
      throw bad(`body[${i}].condition_type: expected EXACT, CONTAINS, equals, in, not_equals or not_in, got '${String(o.condition_type ?? o.condition)}'`);
    }
    const raw = o.values ?? o.value;
    const values = Array.isArray(raw) ? raw.map(String) : raw === undefined || raw === null ? [] : [String(raw)];
    if (values.length === 0) throw bad(`body[${i}].value: required`);
    return { key: o.key, op, values };
  });
}

function labelValue(l: LogLine, key: string): string | undefined {
  if (key in l.labels) return l.labels[key];
  if (key === 'level') return l.level;
  if (key === 'message') return l.message;
  if (key === 'revision') return l.revisionId ?? undefined;
  return undefined;
}

/** Positive conditions (EXACT, CONTAINS, equals, in) are combined with OR; negative ones must all hold. */
export function labelFiltersMatch(filters: LabelFilter[], l: LogLine): boolean {
  let anyPositive = false;
  let positiveHit = false;
  for (const f of filters) {
    const v = labelValue(l, f.key);
    switch (f.op) {
      case 'exact': case 'equals': case 'in':
        anyPositive = true;
        if (v !== undefined && f.values.includes(v)) positiveHit = true;
        break;
      case 'contains':
        anyPositive = true;
        if (v !== undefined && f.values.some((x) => v.includes(x))) positiveHit = true;
        break;
      case 'not_equals': case 'not_in':
        if (v !== undefined && f.values.includes(v)) return false;
        break;
    }
  }
  return !anyPositive || positiveHit;
}
