// The simulator's logs history and live stream hand out the records its drain pushes (one record, several ways
// in), newest first with a timestamp cursor for history; the queue backlog read matches the truth.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import { call, pageAll, qs } from './helpers.js';

let sim: Sim;
beforeAll(async () => {
  sim = await startSim({ seed: 11, apps: 12, now: '2026-11-21T12:00:00Z' });
});
afterAll(async () => {
  await sim.close();
});

/** A history item back in the drain's form (the truth's form): timestamp, message, level, labels flattened. */
function drainForm(item: { timestamp: string; level: string; message: string; labels: Record<string, unknown> }): Record<string, unknown> {
  return { timestamp: item.timestamp, message: item.message, level: item.level, ...item.labels };
}

describe('logs history', () => {
  it('pages newest first with a timestamp cursor; the pages together are the truth, none repeated', async () => {
    const from = '2026-11-21T09:00:00Z';
    const to = '2026-11-21T11:00:00Z';
    const pages = await pageAll(sim.url, `/v1/serverless/logs/history?${qs({ start: from, end: to, limit: 50 })}`, { key: sim.keys.api, method: 'POST' });
    expect(pages.length).toBeGreaterThan(3);
    for (const p of pages.slice(0, -1)) expect(Number.isFinite(Date.parse(p.next_cursor))).toBe(true);
    const items = pages.flatMap((p) => p.items);
    const times = items.map((i) => Date.parse(i.timestamp));
    for (let i = 1; i < times.length; i++) expect(times[i]).toBeLessThanOrEqual(times[i - 1]);
    const truth = sim.truth.logRecords({ from, to });
    expect(truth.length).toBeGreaterThan(150);
    // Same records: the truth is oldest first with ties in (app, seq) order; history newest first.
    const key = (r: Record<string, unknown>) => JSON.stringify(r);
    expect(items.map(drainForm).map(key).sort()).toEqual(truth.map(key).sort());
    // Keys the notes do not name travel in `labels`, as the drain sends them at top level.
    expect(items.some((i) => 'trace_id' in i.labels)).toBe(true);
  });

  it('a cursor that is not a timestamp is refused, naming the parameter', async () => {
    const r = await call(sim.url, `/v1/serverless/logs/history?${qs({ cursor: 'yesterday' })}`, { key: sim.keys.api, method: 'POST' });
    expect(r.status).toBe(400);
    expect(r.text).toContain('cursor');
  });

  it('filters by label (EXACT/CONTAINS or equals/in/not_equals/not_in), level and app', async () => {
    const app = sim.world.apps.find((a) => a.ownedByCaller && a.dormancy === 0)!;
    const from = '2026-11-21T06:00:00Z';
    const to = '2026-11-21T12:00:00Z';
    const filters = [{ key: 'svc_source', value: ['gateway'], condition_type: 'not_in' }];
    const pages = await pageAll(sim.url, `/v1/serverless/logs/history?${qs({ app_id: app.endpointId, start: from, end: to, level: 'INFO,ERROR', limit: 1000 })}`, {
      key: sim.keys.api, method: 'POST', body: filters,
    });
    const got = pages.flatMap((p) => p.items).map(drainForm);
    const truth = sim.truth
      .logRecords({ from, to, apps: [app.endpointId] })
      .filter((r) => r.svc_source !== 'gateway' && (r.level === 'INFO' || r.level === 'ERROR'));
    expect(truth.length).toBeGreaterThan(10);
    expect(got.map((r) => JSON.stringify(r)).sort()).toEqual(truth.map((r) => JSON.stringify(r)).sort());
  });
});

describe('logs stream', () => {
  it('sends each record once as the clock passes it, resumes from `start`, and can be dropped', async () => {
    const controller = new AbortController();
    const res = await fetch(`${sim.url}/v1/serverless/logs/stream`, {
      method: 'POST', headers: { authorization: `Key ${sim.keys.api}` }, signal: controller.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const t0 = sim.clock.now().toISOString();
    const received: Array<Record<string, unknown>> = [];
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    const truthCount = () => sim.truth.logRecords({ from: t0, to: sim.clock.now().toISOString() }).length;
    for (let step = 0; step < 4; step++) sim.clock.advance(10 * 60_000);
    const expected = truthCount();
    expect(expected).toBeGreaterThan(20);
    while (received.length < expected) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let at: number;
      while ((at = buffer.indexOf('\n\n')) >= 0) {
        const event = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        const data = event.split('\n').find((l) => l.startsWith('data:'))?.slice(5).trim();
        if (data) received.push(drainForm(JSON.parse(data)));
      }
    }
    expect(received).toEqual(sim.truth.logRecords({ from: t0, to: sim.clock.now().toISOString() }));
    expect(sim.logStream.open).toBe(1);
    expect(sim.logStream.drop()).toBe(1);
    await expect(reader.read()).rejects.toThrow();
    expect(sim.logStream.open).toBe(0);
  });
});

describe('queue backlog', () => {
  it('GET .../queue answers the truth at each instant', async () => {
    const apps = sim.world.apps.filter((a) => a.ownedByCaller).slice(0, 4);
    const seen: number[] = [];
    for (let i = 0; i < 5; i++) {
      for (const app of apps) {
        const r = await call(sim.url, `/v1/serverless/apps/${app.owner}/${app.name}/queue`, { key: sim.keys.api });
        expect(r.body).toEqual({ queue_size: sim.truth.queueSize(app.owner, app.name, sim.clock.now()) });
        seen.push(r.body.queue_size);
      }
      sim.clock.advance(7 * 60_000);
    }
    expect(seen.some((n) => n > 0)).toBe(true);
  });
});
