// Issue 16, acceptance 3: GET /api/v1/logs/stream delivers a line stored by the drain (and one filled from history),
// with the /logs filters; a client that disconnects frees its resources: after 100 connect/disconnect cycles no
// client, poller or keep-alive timer is left. The drain-to-client latency is measured and reported, not asserted.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiExtension } from '../../src/api/index.js';
import { logsRoutes } from '../../src/api/logs-routes.js';
import { logStreamRoutes } from '../../src/api/log-stream-route.js';
import { startDrainService, postSigned, line, type DrainService } from '../ingest/drain/helpers.js';
import { listenLogStream, type LogStreamListener } from '../support/log-stream.js';

let d: DrainService;
beforeAll(async () => {
  d = await startDrainService({}, {}, [apiExtension([logStreamRoutes, logsRoutes])]);
});
afterAll(async () => {
  await d?.close();
});

const listen = (query = ''): Promise<LogStreamListener> => listenLogStream(d.url, query);

async function clients(): Promise<number> {
  const metric = await d.service.registry.getSingleMetric('tallyhouse_log_stream_clients')!.get();
  return metric.values[0]?.value ?? 0;
}

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('GET /api/v1/logs/stream', () => {
  it('delivers a line stored by the drain, with the /logs filters', async () => {
    const all = await listen();
    const onlyBeta = await listen('?app=beta-app&level=warning');
    const alphaMessage = `alpha ${randomUUID()}`;
    const betaInfo = `beta info ${randomUUID()}`;
    const betaError = `beta error ${randomUUID()}`;
    const body = [
      line({ message: alphaMessage, svc_app_name: 'alpha-app', level: 'ERROR', svc_request_id: 'req-1' }),
      line({ message: betaInfo, svc_app_name: 'beta-app', level: 'INFO' }),
      line({ message: betaError, svc_app_name: 'beta-app', level: 'ERROR', svc_worker_id: 'w-7' }),
    ].join('\n');
    const postedAt = performance.now();
    const answer = await postSigned(d.drainUrl, body);
    expect(answer.status).toBe(200);
    const got = await all.next((e) => e.message === alphaMessage);
    const latencyMs = performance.now() - postedAt;
    expect(got).toMatchObject({ timestamp: '2026-11-21T10:00:00.123Z', level: 'ERROR', app: 'alpha-app', request_id: 'req-1', origin: 'drain', line: 1 });
    await all.next((e) => e.message === betaError);
    const beta = await onlyBeta.next((e) => e.message === betaError);
    expect(beta).toMatchObject({ app: 'beta-app', worker: 'w-7', level: 'ERROR' });
    // A later line that passes the filter: whatever the filter let through before it has arrived by then.
    const sentinel = `beta sentinel ${randomUUID()}`;
    expect((await postSigned(d.drainUrl, line({ message: sentinel, svc_app_name: 'beta-app', level: 'CRITICAL' }))).status).toBe(200);
    await onlyBeta.next((e) => e.message === sentinel);
    await all.next((e) => e.message === sentinel);
    expect(onlyBeta.events.map((e) => e.message)).toEqual([betaError, sentinel]);
    expect(all.events.map((e) => e.message)).toEqual([alphaMessage, betaInfo, betaError, sentinel]);
    console.log(`logs stream: drain POST to SSE event ${Math.round(latencyMs)} ms`);
    all.close();
    onlyBeta.close();
  });

  it('a bad filter is refused naming it', async () => {
    const res = await fetch(`${d.url}/api/v1/logs/stream?level=loud`);
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('level');
  });

  it('100 connect/disconnect cycles leave no client, poller or timer behind', async () => {
    for (let i = 0; i < 5; i++) (await listen()).close(); // warm up (first connections set up pools)
    for (let i = 0; i < 50 && (await clients()) > 0; i++) await new Promise((r) => setTimeout(r, 100));
    const baseline = timers();
    for (let i = 0; i < 100; i++) {
      const l = await listen();
      expect(await clients()).toBeGreaterThan(0);
      l.close();
    }
    for (let i = 0; i < 100 && (await clients()) > 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await clients()).toBe(0);
    expect(timers()).toBeLessThanOrEqual(baseline);
  });
});
