// Acceptance 2: for every paged endpoint the union of all pages equals the truth (no row lost or repeated),
// without faults and with faults for a client that retries.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import { call, pageAll, qs } from './helpers.js';

describe.each([
  { faultRate: 0, label: 'no faults' },
  { faultRate: 0.25, label: 'retryable faults at 25%' },
])('paging union equals truth ($label)', ({ faultRate }) => {
  let sim: Sim;
  // Slow faults answer after 30 s; the client gives up on an attempt after 2 s (no sub-second deadline binds the
  // attempt that must succeed).
  const opts = () => ({ key: sim.keys.admin, maxAttempts: faultRate > 0 ? 8 : 1, timeoutMs: faultRate > 0 ? 2_000 : 20_000 });

  beforeAll(async () => {
    sim = await startSim({ seed: 7, faultRate, slowMs: 30_000, retryAfterSeconds: 0 });
  });
  afterAll(async () => {
    await sim.close();
  });

  it('requests by endpoint: a bare owner/app pages every request of its routes exactly once', async () => {
    const app = sim.world.apps.find((a) => a.ownedByCaller && a.endpoints.length > 1 && a.dormancy === 0)!;
    const from = '2026-11-20T00:00:00Z';
    const to = '2026-11-21T12:00:00Z';
    const pages = await pageAll(sim.url, `/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: app.endpointId, start: from, end: to, expand: 'billing', limit: 100 })}`, opts());
    const items = pages.flatMap((p) => p.items);
    const truth = sim.truth.requestList({ endpointId: app.endpointId, from, to });
    expect(truth.length).toBeGreaterThan(500);
    expect(items.length).toBe(truth.length);
    expect(new Set(items.map((i) => i.request_id)).size).toBe(truth.length);
    expect(items.map((i) => i.request_id)).toEqual(truth.map((t) => t.request_id));
    expect(new Set(items.map((i) => i.endpoint_id))).toEqual(new Set(app.endpoints.map((e) => e.id)));
    const now = sim.clock.now().toISOString();
    items.forEach((item, k) => {
      const t = truth[k];
      expect(item.ended_at).toBe(t.ended_at);
      expect(item.duration).toBe(t.duration);
      expect(item.status_code).toBe(t.status_code);
      expect(item.runner_id).toBe(t.runner_id);
      expect(item.billable_units).toBe(t.billed_at <= now ? t.billable_units : null);
    });
    if (faultRate > 0) expect(Object.values(sim.stats().faultsInjected).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  });

  it('requests sorted by duration page the same set', async () => {
    const ep = sim.world.apps.find((a) => a.ownedByCaller && a.dormancy === 0)!.endpoints[0];
    const from = '2026-11-21T00:00:00Z';
    const to = '2026-11-21T12:00:00Z';
    const pages = await pageAll(sim.url, `/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: ep.id, start: from, end: to, sort_by: 'duration', limit: 37 })}`, opts());
    const items = pages.flatMap((p) => p.items);
    const truth = sim.truth.requestList({ endpointId: ep.id, from, to });
    expect(items.length).toBe(truth.length);
    expect(new Set(items.map((i) => i.request_id))).toEqual(new Set(truth.map((t) => t.request_id)));
    for (let k = 1; k < items.length; k++) expect(items[k].duration).toBeGreaterThanOrEqual(items[k - 1].duration);
    expect(items[0]).not.toHaveProperty('billable_units');
  });

  it('usage: summary and time-series rows across pages equal the truth', async () => {
    const q = { start: '2026-11-10', end: '2026-11-21', timezone: 'America/New_York', timeframe: 'day', expand: 'summary,time_series', limit: 13 };
    const pages = await pageAll(sim.url, `/v1/serverless/usage?${qs(q)}`, opts());
    expect(pages.length).toBeGreaterThan(20);
    const summary = pages.flatMap((p) => p.summary);
    const series = pages.flatMap((p) => p.time_series.flatMap((b: any) => b.results.map((r: any) => ({ bucket: b.bucket, ...r }))));
    const tq = { from: q.start, to: q.end, timezone: q.timezone };
    const truthSeries = sim.truth.usage({ ...tq, timeframe: 'day' });
    const truthSummary = sim.truth.usageSummary(tq);
    const pick = (r: any) => [r.bucket ?? null, r.app, r.environment, r.machine_type, r.is_surge, r.quantity, r.unit_price, r.percent_discount, r.cost_subtotal, r.cost_discount, r.cost_total].join('|');
    expect(series.map(pick)).toEqual(truthSeries.map(pick));
    expect(summary.map(pick)).toEqual(truthSummary.map((r) => pick({ ...r, bucket: null })));
    for (const r of series) expect(r.cost).toBe(r.cost_total);
  });

  it('serverless analytics: every (bucket, endpoint) row exactly once, values as the truth', async () => {
    const eps = sim.world.endpoints.filter((e) => !e.isModel && sim.world.apps[e.appIndex].ownedByCaller).slice(0, 3).map((e) => e.id);
    const metrics = ['request_count', 'success_count', 'error_count', 'p50_duration', 'p99_duration', 'cold_boot_count', 'p90_cold_boot_duration', 'total_billable_duration', 'p95_prepare_duration'];
    const q = { endpoint_id: eps.join(','), start: '2026-11-20T00:00:00Z', end: '2026-11-21T00:00:00Z', timeframe: 'hour', expand: ['time_series', 'summary', ...metrics].join(','), limit: 10 };
    const pages = await pageAll(sim.url, `/v1/serverless/analytics?${qs(q)}`, opts());
    const series = pages.flatMap((p) => p.time_series.flatMap((b: any) => b.results.map((r: any) => ({ bucket: b.bucket, ...r }))));
    const truth = sim.truth.analytics({ endpointIds: eps, from: q.start, to: q.end, timeframe: 'hour' });
    expect(series.length).toBe(24 * 3);
    expect(series.length).toBe(truth.length);
    series.forEach((row, k) => {
      expect(row.bucket).toBe(truth[k].bucket);
      expect(row.endpoint_id).toBe(truth[k].endpoint_id);
      for (const m of metrics) expect(row[m]).toBe(truth[k][m]);
      expect(Object.keys(row).sort()).toEqual(['bucket', 'endpoint_id', ...metrics].sort());
    });
    const summary = pages.flatMap((p) => p.summary);
    expect(summary.map((s: any) => s.endpoint_id)).toEqual(eps);
    for (const s of summary) {
      const rows = truth.filter((t) => t.endpoint_id === s.endpoint_id);
      expect(s.request_count).toBe(rows.reduce((a, r) => a + (r.request_count as number), 0));
    }
  });

  it('models analytics pages the caller\'s calls to public model endpoints', async () => {
    const q = { endpoint_id: 'svc-ai/flux-dev,svc-ai/whisper', start: '2026-11-20', end: '2026-11-21', timeframe: 'hour', expand: 'request_count,p75_duration', limit: 9 };
    const pages = await pageAll(sim.url, `/v1/models/analytics?${qs(q)}`, { ...opts(), key: sim.keys.api });
    const series = pages.flatMap((p) => p.time_series.flatMap((b: any) => b.results.map((r: any) => ({ bucket: b.bucket, ...r }))));
    const truth = sim.truth.analytics({ endpointIds: ['svc-ai/flux-dev', 'svc-ai/whisper'], from: q.start, to: q.end, timeframe: 'hour', kind: 'models' });
    expect(series.map((r) => [r.bucket, r.endpoint_id, r.request_count, r.p75_duration])).toEqual(truth.map((r) => [r.bucket, r.endpoint_id, r.request_count, r.p75_duration]));
    expect(truth.reduce((a, r) => a + (r.request_count as number), 0)).toBeGreaterThan(0);
  });

  it('events (newest first) and revisions page to the truth', async () => {
    const app = sim.world.apps.find((a) => a.ownedByCaller && a.dormancy === 0)!;
    const start = '2026-11-18T00:00:00Z';
    const pages = await pageAll(sim.url, `/v1/serverless/apps/${app.owner}/${app.name}/events?${qs({ start, limit: 7 })}`, { ...opts(), key: sim.keys.api });
    const events = pages.flatMap((p) => p.events);
    const truth = sim.truth.events(app.owner, app.name).filter((e) => e.created_at >= start);
    expect(events.length).toBeGreaterThan(20);
    expect(events.map((e) => e.event_id)).toEqual(truth.map((e) => e.event_id));
    for (let k = 1; k < events.length; k++) expect(events[k].created_at <= events[k - 1].created_at).toBe(true);

    const revPages = await pageAll(sim.url, `/v1/serverless/apps/${app.owner}/${app.name}/revisions?limit=1`, { ...opts(), key: sim.keys.api });
    const revisions = revPages.flatMap((p) => p.revisions);
    expect(revisions).toEqual(sim.truth.revisions(app.owner, app.name).map((r) => ({
      revision_id: r.revision_id, created_at: r.created_at, is_current: r.is_current, message: r.message, annotations: r.annotations, status: r.status, deployed_by: r.deployed_by,
    })));
    expect(revisions.filter((r) => r.is_current)).toHaveLength(1);
  });

  it('logs history: small pages union to the same lines as one big page', async () => {
    const app = sim.world.apps.find((a) => a.ownedByCaller && a.dormancy === 0)!;
    const q = { app_id: app.endpointId, start: '2026-11-21T08:00:00Z', end: '2026-11-21T10:00:00Z' };
    const filters = [{ key: 'svc_source', value: 'runner', condition_type: 'EXACT' }, { key: 'level', value: 'ERROR', condition_type: 'EXACT' }];
    const small = await pageAll(sim.url, `/v1/serverless/logs/history?${qs({ ...q, limit: 25 })}`, { ...opts(), key: sim.keys.api, method: 'POST', body: filters });
    const big = await call(sim.url, `/v1/serverless/logs/history?${qs({ ...q, limit: 1000 })}`, { ...opts(), key: sim.keys.api, method: 'POST', body: filters });
    expect(big.body.has_more).toBe(false);
    const a = small.flatMap((p) => p.items);
    expect(a.length).toBeGreaterThan(25);
    expect(a).toEqual(big.body.items);
    for (const l of a) expect(l.labels.svc_source === 'runner' || l.level === 'ERROR').toBe(true);
  });

  it('models list pages every model once', async () => {
    const pages = await pageAll(sim.url, '/v1/models?limit=5', { ...opts(), key: sim.keys.api });
    expect(pages.flatMap((p) => p.models).map((m: any) => m.endpoint_id)).toEqual(sim.world.models.map((m) => m.endpointId));
  });
});

describe('paging while the clock advances', () => {
  it('a cursor pins the upper bound it was issued with', async () => {
    const sim = await startSim({ seed: 3, apps: 5 });
    try {
      const ep = sim.world.apps.find((a) => a.dormancy === 0)!.endpoints[0];
      const start = '2026-11-21T06:00:00Z';
      const now0 = sim.clock.now().toISOString();
      const first = await call(sim.url, `/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: ep.id, start, limit: 10 })}`, { key: sim.keys.api });
      const items = [...first.body.items];
      let cursor = first.body.next_cursor;
      sim.clock.advance(3 * 3_600_000);
      while (cursor) {
        const r = await call(sim.url, `/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: ep.id, start, limit: 10, cursor })}`, { key: sim.keys.api });
        items.push(...r.body.items);
        cursor = r.body.has_more ? r.body.next_cursor : null;
      }
      const truth = sim.truth.requestList({ endpointId: ep.id, from: start, to: now0 });
      expect(items.map((i) => i.request_id)).toEqual(truth.map((t) => t.request_id));
      // A fresh query (no cursor) sees the three new hours.
      const fresh = await pageAll(sim.url, `/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: ep.id, start, limit: 100 })}`, { key: sim.keys.api });
      expect(fresh.flatMap((p) => p.items).length).toBeGreaterThan(items.length);
    } finally {
      await sim.close();
    }
  });
});
