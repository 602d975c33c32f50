// Acceptance 1: same seed, same bytes. Two simulators started with the same options answer every endpoint
// identically (bodies and the headers a client reads); another seed gives another world; and what the caches
// keep changes nothing (a simulator that keeps next to nothing regenerates the same bytes).
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MINIMAL_CACHE_LIMITS, startSim, type Sim } from '../../src/sim/index.js';
import { qs } from './helpers.js';

async function fingerprint(sim: Sim): Promise<{ hash: string; perPath: Record<string, string> }> {
  const owned = sim.world.apps.filter((a) => a.ownedByCaller);
  const app = owned.find((a) => a.dormancy === 0 && a.endpoints.length > 1) ?? owned[0];
  const [o, n] = app.endpointId.split('/');
  const eps = sim.world.endpoints.filter((e) => !e.isModel && sim.world.apps[e.appIndex].ownedByCaller).slice(0, 5).map((e) => e.id);
  const gets = [
    '/v1/meta',
    '/.well-known/jwks.json',
    '/v1/models?limit=5',
    `/v1/models/analytics?${qs({ endpoint_id: 'svc-ai/flux-dev', expand: 'summary,time_series,p50_duration,request_count' })}`,
    `/v1/serverless/usage?${qs({ start: '2026-11-01', end: '2026-11-21', timeframe: 'day', timezone: 'Europe/Berlin', expand: 'summary,time_series', limit: 50 })}`,
    `/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: app.endpointId, expand: 'billing', limit: 100 })}`,
    `/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: app.endpointId, sort_by: 'duration', status: 'error', start: '2026-11-15' })}`,
    `/v1/serverless/analytics?${qs({ endpoint_id: eps, timeframe: 'hour', expand: ['time_series', 'summary', 'request_count', 'p99_duration', 'cold_boot_count', 'p50_prepare_duration', 'runtime_error_count'].join(',') })}`,
    '/v1/serverless/apps?expand=endpoints',
    `/v1/serverless/apps/${o}/${n}/events?limit=50`,
    `/v1/serverless/apps/${o}/${n}/revisions`,
    `/v1/serverless/apps/${o}/${n}/runners/history?${qs({ timeframe: 'hour', aggregation: 'avg' })}`,
    `/v1/serverless/apps/${o}/${n}/queue`,
    '/metrics',
    '/v1/serverless/metrics',
    '/v1/serverless/usage?app=nope&app=' + 'x'.repeat(3), // an empty answer is deterministic too
  ];
  const perPath: Record<string, string> = {};
  const all = createHash('sha256');
  const record = async (label: string, res: Response) => {
    const body = await res.text();
    const headers = ['content-type', 'x-request-id', 'x-svc-retryable', 'x-svc-error-type', 'x-ratelimit-reset', 'retry-after'].map((h) => `${h}=${res.headers.get(h)}`).join(';');
    const h = createHash('sha256').update(`${res.status}\n${headers}\n${body}`).digest('hex');
    perPath[label] = h;
    all.update(label + h);
  };
  for (const path of gets) {
    // Follow one cursor too, so page 2 is compared as well.
    const res = await fetch(sim.url + path, { headers: { authorization: `Key ${sim.keys.admin}` } });
    const clone = res.clone();
    await record(path, res);
    const body = await clone.json().catch(() => null) as { next_cursor?: string } | null;
    if (body?.next_cursor) {
      const sep = path.includes('?') ? '&' : '?';
      await record(path + ' [page 2]', await fetch(`${sim.url}${path}${sep}cursor=${encodeURIComponent(body.next_cursor)}`, { headers: { authorization: `Key ${sim.keys.admin}` } }));
    }
  }
  const logs = await fetch(`${sim.url}/v1/serverless/logs/history?${qs({ app_id: app.endpointId, limit: 200 })}`, {
    method: 'POST',
    headers: { authorization: `Key ${sim.keys.api}`, 'content-type': 'application/json' },
    body: JSON.stringify([{ key: 'level', condition_type: 'not_in', value: ['DEBUG'] }]),
  });
  await record('logs', logs);
  return { hash: all.digest('hex'), perPath };
}

describe('determinism', () => {
  it('two runs with the same seed answer every endpoint byte for byte, with faults too', async () => {
    const results = [];
    for (let run = 0; run < 2; run++) {
      // Different keys per run: keys never appear in responses.
      const sim = await startSim({ seed: 42, apps: 60, faultRate: 0.2, faultKinds: ['rate_limit', 'server_error', 'platform_error', 'truncated'] });
      try {
        results.push(await fingerprint(sim));
      } finally {
        await sim.close();
      }
    }
    expect(results[0].perPath).toEqual(results[1].perPath);
    expect(Object.keys(results[0].perPath).length).toBeGreaterThan(18);
    expect(results[0].hash).toBe(results[1].hash);
  });

  it('another seed is another world', async () => {
    const a = await startSim({ seed: 1, apps: 10 });
    const b = await startSim({ seed: 2, apps: 10 });
    try {
      expect(a.world.apps.map((x) => x.name)).not.toEqual(b.world.apps.map((x) => x.name));
      const fa = await fingerprint(a);
      const fb = await fingerprint(b);
      expect(fa.hash).not.toBe(fb.hash);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a warm cache and no cache answer byte for byte: pages and truth are regenerated from the seed', async () => {
    const opts = { seed: 42, apps: 60, days: 20 };
    const warm = await startSim(opts);
    const cold = await startSim({ ...opts, cacheLimits: MINIMAL_CACHE_LIMITS });
    try {
      // Warm the caches over the same data through other calls (the fingerprint's own calls must stay first
      // calls: a repeated call gets another x-request-id).
      const owned = warm.world.apps.filter((a) => a.ownedByCaller);
      for (const app of owned.slice(0, 12)) {
        const [o, n] = app.endpointId.split('/');
        for (const path of [
          `/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: app.endpointId, expand: 'billing', limit: 37 })}`,
          `/v1/serverless/apps/${o}/${n}/events?limit=7`,
          `/v1/serverless/apps/${o}/${n}/runners/history?${qs({ timeframe: 'hour', aggregation: 'max' })}`,
        ]) await fetch(warm.url + path, { headers: { authorization: `Key ${warm.keys.admin}` } });
        warm.truth.requestList({ endpointId: app.endpointId, from: '2026-11-19', to: '2026-11-22' });
      }
      await fetch(`${warm.url}/metrics?warm=1`, { headers: { authorization: `Key ${warm.keys.admin}` } });

      const [w, c] = [await fingerprint(warm), await fingerprint(cold)];
      expect(Object.keys(w.perPath).length).toBeGreaterThan(18);
      expect(w.perPath).toEqual(c.perPath);

      const app = owned.find((a) => a.dormancy === 0) ?? owned[0];
      const [o, n] = app.endpointId.split('/');
      const truths = (sim: Sim) => ({
        usage: sim.truth.usage({ from: '2026-11-01', to: '2026-11-21', timezone: 'America/New_York' }),
        summary: sim.truth.usageSummary({ from: '2026-11-01', to: '2026-11-21' }),
        requests: sim.truth.requests({ from: '2026-11-01', to: '2026-11-22' }),
        list: sim.truth.requestList({ endpointId: app.endpointId, from: '2026-11-18', to: '2026-11-22' }),
        states: sim.truth.runnerStates({ owner: o, name: n }),
        events: sim.truth.events(o, n),
      });
      const [tw, tc] = [truths(warm), truths(cold)];
      expect(tw.usage.length).toBeGreaterThan(0);
      expect(tw.requests.length).toBeGreaterThan(0);
      expect(tw.list.length).toBeGreaterThan(0);
      expect(tw.states.length).toBeGreaterThan(0);
      expect(JSON.stringify(tw)).toBe(JSON.stringify(tc));
    } finally {
      await warm.close();
      await cold.close();
    }
  }, 180_000); // regenerating everything on every ask is slow by design
});
