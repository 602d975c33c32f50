// Issue 30 (4, 5, 9, 16): the README read as a newcomer reads it, checked against what it describes. Oracles: the
// files and documents the README describes (users.d/grafana.xml, the served OpenAPI document, the simulator's
// world), never the README's own words.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../src/service.js';
import { apiExtension } from '../src/api/index.js';
import { sessionRoutes } from '../src/api/session-routes.js';
import { analyticsRoutes } from '../src/api/analytics-routes.js';
import { logsRoutes } from '../src/api/logs-routes.js';
import { logStreamRoutes } from '../src/api/log-stream-route.js';
import { requestCostRoutes } from '../src/api/request-cost-routes.js';
import { efficiencyRoutes } from '../src/api/efficiency-routes.js';
import { createLogger } from '../src/log.js';
import { createRegistry } from '../src/metrics.js';
import { startSim } from '../src/sim/index.js';
import { testConfig } from './support/store.js';

const read = (path: string) => readFileSync(fileURLToPath(new URL(`../${path}`, import.meta.url)), 'utf8');
const readme = read('README.md');

let service: Service;
beforeAll(async () => {
  service = await startService(testConfig({ PORT: '0' }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension([requestCostRoutes, analyticsRoutes, logStreamRoutes, logsRoutes, sessionRoutes, efficiencyRoutes])],
  });
});
afterAll(async () => {
  await service?.close();
});

describe('the README for a newcomer', () => {
  it('creates the Grafana user as compose does: readonly 2 (the plugin sets settings per query; 1 breaks every panel)', () => {
    const sql = /CREATE USER grafana [^;]*SETTINGS readonly = (\d)/.exec(readme);
    const xml = /<readonly>(\d)<\/readonly>/.exec(read('dashboards/clickhouse/users.d/grafana.xml'));
    expect(xml?.[1]).toBe('2');
    expect(sql?.[1]).toBe(xml?.[1]);
  });

  it('tails an app the demo has (acme/flux-dev is not one: the tail ended on a 404)', async () => {
    const apps = [...readme.matchAll(/tallyhouse logs tail --app (\S+)/g)].map((m) => m[1]);
    expect(apps.length).toBeGreaterThan(0);
    // The demo's world: startSim's defaults, as the demo starts it (src/jobs/platform-source.ts).
    // wall-clock: the demo starts its world at the machine's clock; only the set of apps is checked (fixed by the seed)
    const sim = await startSim({ now: new Date(), port: 0, host: '127.0.0.1' });
    try {
      for (const app of apps) expect(sim.world.appByKey.has(app), app).toBe(true);
    } finally {
      await sim.close();
    }
  });

  it('says which routes answer CSV, as the OpenAPI document does', async () => {
    const doc = (await (await fetch(`${service.url}/api/v1/openapi.json`)).json()) as {
      paths: Record<string, { get: { responses: Record<string, { content?: Record<string, unknown> }> } }>;
    };
    const withoutCsv = Object.entries(doc.paths)
      .filter(([path]) => path !== '/api/v1' && path !== '/api/v1/openapi.json')
      .filter(([, item]) => !item.get.responses['200']?.content?.['text/csv'])
      .map(([path]) => path.replace(/^\/api\/v1/, ''))
      .sort();
    // "every route but `/logs/stream` (Server-Sent Events) and the two `/sessions` routes (JSON only)"
    const claim = /every route but `([^`]+)` \(Server-Sent Events\) and the two `\/sessions` routes \(JSON only\)/.exec(readme.replace(/\n/g, ' '));
    expect(claim).not.toBeNull();
    expect(withoutCsv).toEqual([claim![1], '/sessions', '/sessions/{session_id}'].sort());
  });

  it('leads with the current Node LTS (24) and says `to` is exclusive', () => {
    expect(readme).toMatch(/^Node\.js 24 \(the current LTS/m);
    expect(readme.replace(/\n/g, ' ')).toContain('`to` is not');
  });
});
