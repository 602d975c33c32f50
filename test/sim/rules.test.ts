// Rules enforced like the platform: auth (401/403), ownership, the 50-value limit, dates, page sizes, cursors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import { call, qs } from './helpers.js';

describe('simulator rules', () => {
  let sim: Sim;
  let own: string;
  let foreign: string;
  beforeAll(async () => {
    sim = await startSim({ seed: 2 });
    own = sim.world.apps.find((a) => a.ownedByCaller && a.dormancy === 0)!.endpointId;
    foreign = sim.world.apps.find((a) => !a.ownedByCaller)!.endpointId;
  });
  afterAll(async () => {
    await sim.close();
  });

  const raw = async (path: string, authorization?: string) => {
    const res = await fetch(sim.url + path, { headers: authorization ? { authorization } : {} });
    return { status: res.status, body: await res.json() as any, headers: res.headers };
  };

  it('401 for a missing key, a missing Key prefix and a wrong key; 403 for the wrong scope', async () => {
    const path = `/v1/serverless/requests/by-endpoint?endpoint_id=${own}`;
    for (const auth of [undefined, `Bearer ${sim.keys.api}`, sim.keys.api, 'Key not-a-key']) {
      const r = await raw(path, auth);
      expect(r.status).toBe(401);
      expect(r.body.error.type).toBe('authorization_error');
      expect(r.body.error.request_id).toMatch(/^req_[0-9a-f]{16}$/);
    }
    expect((await raw(path, `Key ${sim.keys.api}`)).status).toBe(200);
    expect((await raw(path, `Key ${sim.keys.admin}`)).status).toBe(200); // admin scope includes API scope
    const usage = await raw('/v1/serverless/usage', `Key ${sim.keys.api}`);
    expect(usage.status).toBe(403);
    expect(usage.body.error.type).toBe('authorization_error');
    expect(usage.body.error.message).toMatch(/ADMIN/);
    expect((await raw('/v1/serverless/usage', `Key ${sim.keys.admin}`)).status).toBe(200);
    expect((await raw('/_sim/clock', `Key ${sim.keys.api}`)).status).toBe(403);
    expect((await raw('/v1/meta')).status).toBe(200); // no key needed
    expect((await raw('/.well-known/jwks.json')).body.keys[0]).toMatchObject({ kty: 'OKP', crv: 'Ed25519' });
  });

  it('403 on serverless analytics unless the caller owns every endpoint listed, also for requests and apps', async () => {
    const key = `Key ${sim.keys.api}`;
    const both = await raw(`/v1/serverless/analytics?${qs({ endpoint_id: [own, foreign] })}`, key);
    expect(both.status).toBe(403);
    expect(both.body.error.type).toBe('authorization_error');
    expect(both.body.error.message).toContain(foreign);
    expect((await raw(`/v1/serverless/analytics?${qs({ endpoint_id: own })}`, key)).status).toBe(200);
    expect((await raw(`/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: foreign })}`, key)).status).toBe(403);
    const [o, n] = foreign.split('/');
    expect((await raw(`/v1/serverless/apps/${o}/${n}/events`, key)).status).toBe(403);
    expect((await raw(`/v1/serverless/apps/acme/no-such-app/events`, key)).body.error.type).toBe('not_found');
    const listed = await raw('/v1/serverless/apps', key);
    expect(listed.body.apps.map((a: any) => a.endpoint_id)).not.toContain(foreign);
    expect(listed.body.apps).toHaveLength(60);
  });

  it('more than 50 values in a multi-value parameter is a 400 validation_error naming it', async () => {
    const names = sim.world.apps.filter((a) => a.ownedByCaller).map((a) => a.name);
    expect(names.length).toBeGreaterThan(50);
    const tooMany = await raw(`/v1/serverless/usage?${qs({ app: names.slice(0, 51) })}`, `Key ${sim.keys.admin}`);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.type).toBe('validation_error');
    expect(tooMany.body.error.message).toMatch(/^app: at most 50/);
    const repeated = new URLSearchParams();
    for (const n of names.slice(0, 51)) repeated.append('app', n);
    expect((await raw(`/v1/serverless/usage?${repeated}`, `Key ${sim.keys.admin}`)).status).toBe(400);
    const fifty = await raw(`/v1/serverless/usage?${qs({ app: names.slice(0, 50), expand: 'summary' })}`, `Key ${sim.keys.admin}`);
    expect(fifty.status).toBe(200);
    expect(new Set(fifty.body.summary.map((r: any) => r.app)).size).toBeLessThanOrEqual(50);
    const eps = sim.world.endpoints.filter((e) => !e.isModel && sim.world.apps[e.appIndex].ownedByCaller).slice(0, 51).map((e) => e.id);
    const r = await raw(`/v1/serverless/analytics?${qs({ endpoint_id: eps })}`, `Key ${sim.keys.api}`);
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/^endpoint_id: at most 50/);
  });

  it('bad dates, page sizes and parameters are 400s that name the parameter', async () => {
    const key = `Key ${sim.keys.api}`;
    const cases: Array<[string, RegExp]> = [
      [`/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: own, start: '2026-13-01' })}`, /^start: expected/],
      [`/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: own, end: 'yesterday' })}`, /^end: expected/],
      [`/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: own, start: '2026-11-20', end: '2026-11-19' })}`, /^start: must be before end/],
      [`/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: own, limit: 101 })}`, /^limit: expected an integer from 1 to 100/],
      [`/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: own, limit: 'ten' })}`, /^limit:/],
      [`/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: own, status: 'failed' })}`, /^status:/],
      [`/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: own, sort_by: 'cost' })}`, /^sort_by:/],
      ['/v1/serverless/requests/by-endpoint', /^endpoint_id: required/],
      [`/v1/serverless/analytics?${qs({ endpoint_id: own, timezone: 'Mars/Olympus' })}`, /^timezone:/],
      [`/v1/serverless/analytics?${qs({ endpoint_id: own, timeframe: 'fortnight' })}`, /^timeframe:/],
      [`/v1/serverless/analytics?${qs({ endpoint_id: own, expand: 'p42_duration' })}`, /^expand: unknown value 'p42_duration'/],
      [`/v1/serverless/apps/${own}/events?${qs({ limit: 1001 })}`, /^limit:/],
      [`/v1/serverless/apps/${own}/revisions?${qs({ limit: 101 })}`, /^limit:/],
      [`/v1/serverless/apps/${own}/runners/history?${qs({ start: '2026-08-01' })}`, /^start: at most 90 days back/],
    ];
    for (const [path, message] of cases) {
      const r = await raw(path, key);
      expect(r.status, path).toBe(400);
      expect(r.body.error.type).toBe('validation_error');
      expect(r.body.error.message, path).toMatch(message);
    }
  });

  it('cursors are opaque: a forged or foreign cursor is a 400', async () => {
    const key = `Key ${sim.keys.api}`;
    const path = `/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: own, limit: 5 })}`;
    const first = await raw(path, key);
    expect(first.body.has_more).toBe(true);
    const cursor: string = first.body.next_cursor;
    expect((await raw(`${path}&cursor=${encodeURIComponent(cursor)}`, key)).status).toBe(200);
    const forged = Buffer.from(JSON.stringify({ q: 'x', u: 0, k: [0, ''] })).toString('base64url') + '.' + cursor.split('.')[1];
    const f = await raw(`${path}&cursor=${encodeURIComponent(forged)}`, key);
    expect(f.status).toBe(400);
    expect(f.body.error.message).toMatch(/^cursor:/);
    expect((await raw(`${path}&cursor=garbage`, key)).status).toBe(400);
    const other = sim.world.apps.filter((a) => a.ownedByCaller)[1].endpointId;
    const foreignCursor = await raw(`/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: other, limit: 5, cursor })}`, key);
    expect(foreignCursor.status).toBe(400);
    expect(foreignCursor.body.error.message).toMatch(/different query/);
    // Page size may change between pages; the cursor stays valid.
    expect((await raw(`/v1/serverless/requests/by-endpoint?${qs({ endpoint_id: own, limit: 7, cursor })}`, key)).status).toBe(200);
  });

  it('records what clients asked, for tests like "no call carried more than 50 app names"', async () => {
    const log = sim.requestLog();
    const usageCalls = log.filter((r) => r.path === '/v1/serverless/usage');
    expect(usageCalls.length).toBeGreaterThan(0);
    const appCounts = usageCalls.map((r) => [r.query.app ?? []].flat().flatMap((v) => String(v).split(',')).filter(Boolean).length);
    expect(Math.max(...appCounts)).toBe(51);
    expect(log.every((r) => !r.path.startsWith('/_sim/'))).toBe(true);
  });
});

describe('/_sim control endpoints', () => {
  it('serve the truth as JSON and move the clock, with the admin key only', async () => {
    const sim = await startSim({ seed: 2, apps: 6 });
    try {
      const admin = { key: sim.keys.admin };
      const usage = await call(sim.url, `/_sim/truth?${qs({ kind: 'usage', from: '2026-11-19', to: '2026-11-21', timezone: 'Asia/Kolkata' })}`, admin);
      expect(usage.status).toBe(200);
      expect(usage.body).toEqual(sim.truth.usage({ from: '2026-11-19', to: '2026-11-21', timezone: 'Asia/Kolkata' }));
      expect(usage.body.length).toBeGreaterThan(0);
      const app = sim.world.apps[0];
      const states = await call(sim.url, `/_sim/truth?${qs({ kind: 'runner_states', owner: app.owner, name: app.name })}`, admin);
      expect(states.body).toEqual(sim.truth.runnerStates({ owner: app.owner, name: app.name }));
      expect((await call(sim.url, '/_sim/truth?kind=requests', admin)).status).toBe(400);
      expect((await call(sim.url, '/_sim/truth?kind=apps', { key: sim.keys.api })).status).toBe(403);

      const moved = await call(sim.url, '/_sim/clock', { ...admin, method: 'POST', body: { advance_ms: 3_600_000 } });
      expect(moved.body.now).toBe('2026-11-21T13:00:00.000Z');
      expect(sim.clock.now().toISOString()).toBe('2026-11-21T13:00:00.000Z');
      await call(sim.url, '/_sim/clock', { ...admin, method: 'POST', body: { now: '2026-11-22T00:00:00Z' } });
      expect((await call(sim.url, '/_sim/clock', admin)).body.now).toBe('2026-11-22T00:00:00.000Z');
      expect((await call(sim.url, '/_sim/clock', { ...admin, method: 'POST', body: { now: 'soon' } })).status).toBe(400);
    } finally {
      await sim.close();
    }
  });
});

describe('faults', () => {
  it('are reproducible from the seed, never more than 3 in a row, and carry the documented shapes', async () => {
    const runs: string[][] = [];
    for (let run = 0; run < 2; run++) {
      const sim = await startSim({ seed: 9, faultRate: 0.9, faultKinds: ['rate_limit', 'server_error', 'platform_error', 'truncated', 'server_error_final', 'model_error'], retryAfterSeconds: 0 });
      const seen: string[] = [];
      try {
        for (let i = 0; i < 40; i++) {
          const res = await fetch(`${sim.url}/v1/meta`);
          const text = await res.text();
          seen.push(`${res.status}|${res.headers.get('x-svc-retryable')}|${res.headers.get('x-svc-error-type')}|${text}`);
        }
      } finally {
        await sim.close();
      }
      runs.push(seen);
    }
    expect(runs[0]).toEqual(runs[1]);
    const ok = runs[0].map((s) => s.startsWith('200|') && s.endsWith('}'));
    for (let i = 3; i < ok.length; i++) expect(ok[i] || ok[i - 1] || ok[i - 2] || ok[i - 3]).toBe(true);
    const bodies = runs[0].map((s) => s.split('|'));
    const rate = bodies.find((b) => b[0] === '429')!;
    expect(JSON.parse(rate.slice(3).join('|')).error).toMatchObject({ type: 'rate_limited', limit: 10 });
    const svc = bodies.find((b) => ['500', '502', '503'].includes(b[0]) && b[1] === 'true')!;
    const svcBody = JSON.parse(svc.slice(3).join('|'));
    expect(svcBody.error_type).toBe(svc[2]);
    expect(typeof svcBody.detail).toBe('string');
    const final = bodies.find((b) => b[1] === 'false' && b[0] !== '422')!;
    expect(JSON.parse(final.slice(3).join('|')).error_type).toBe(final[2]);
    const model = bodies.find((b) => b[0] === '422')!;
    expect(JSON.parse(model.slice(3).join('|')).detail[0]).toMatchObject({ loc: ['body'], type: 'feature_not_supported' });
    const platform = bodies.find((b) => b[0] === '500' && b[1] === 'null')!;
    expect(JSON.parse(platform.slice(3).join('|')).error.type).toBe('server_error');
    const truncated = bodies.find((b) => b[0] === '200' && !b.slice(3).join('|').endsWith('}'))!;
    expect(() => JSON.parse(truncated.slice(3).join('|'))).toThrow();
  });

  it('reset faults cut the connection mid-body and slow faults answer late; a retrying client gets through', async () => {
    // Slow answers wait far longer than the client's 2 s deadline, so each is cut off; the answer that gets through
    // has the same 2 s (never a sub-second deadline on the success path).
    const sim = await startSim({ seed: 4, faultRate: 1, faultKinds: ['reset', 'slow'], slowMs: 120_000 });
    try {
      const r = await call(sim.url, '/v1/meta', { maxAttempts: 4, timeoutMs: 2_000 });
      expect(r.status).toBe(200);
      expect(r.attempts).toBe(4);
      expect(r.body.webhook_ip_ranges).toContain('127.0.0.0/8');
      const injected = sim.stats().faultsInjected;
      expect((injected.reset ?? 0) + (injected.slow ?? 0)).toBe(3);
    } finally {
      await sim.close();
    }
  });
});
