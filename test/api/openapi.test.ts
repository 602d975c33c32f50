// The served OpenAPI document is worth generating a client from: redocly's recommended rules pass with no error
// and no warning, every operation has an operationId and typed 200/4xx answers, and GET /api/v1 links to it.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/service.js';
import { sessionRoutes } from '../../src/api/session-routes.js';
import { apiExtension } from '../../src/api/index.js';
import { analyticsRoutes } from '../../src/api/analytics-routes.js';
import { logsRoutes } from '../../src/api/logs-routes.js';
import { logStreamRoutes } from '../../src/api/log-stream-route.js';
import { requestCostRoutes } from '../../src/api/request-cost-routes.js';
import { efficiencyRoutes } from '../../src/api/efficiency-routes.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { testConfig } from '../support/store.js';

const REDOCLY = fileURLToPath(new URL('../../node_modules/.bin/redocly', import.meta.url));
let service: Service;
type Doc = { openapi: string; servers: Array<{ url: string }>; paths: Record<string, { get: Record<string, unknown> & { responses: Record<string, { content?: Record<string, { schema: { properties?: Record<string, unknown> } }> }> } }> };
let doc: Doc;

beforeAll(async () => {
  service = await startService(testConfig({ PORT: '0' }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension([requestCostRoutes, analyticsRoutes, logStreamRoutes, logsRoutes, sessionRoutes, efficiencyRoutes])],
  });
  doc = (await (await fetch(`${service.url}/api/v1/openapi.json`)).json()) as Doc;
});
afterAll(async () => {
  await service?.close();
});

describe('the OpenAPI document', () => {
  it('passes `redocly lint` (recommended rules) with no error and no warning', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'th-openapi-')), 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));
    const result = await promisify(execFile)(process.execPath, [REDOCLY, 'lint', file, '--format=stylish'], {
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
    }).catch((err: { stdout: string; stderr: string; code: number }) => err);
    const output = `${result.stdout}\n${result.stderr}`;
    expect(output).toContain('Your API description is valid');
    // Problems are lines like "1:2  error  no-empty-servers  ..." (a banner about the Node version is not one).
    expect(output).not.toMatch(/^\s*\d+:\d+\s+(error|warning)\s/m);
    expect(output).not.toMatch(/Validation failed/);
  });

  it('names every operation, serves from this service, and types its answers from the row schemas', () => {
    const operations = Object.entries(doc.paths).map(([path, p]) => [path, p.get.operationId]);
    expect(operations).toEqual([
      ['/api/v1/cost', 'getCost'],
      ['/api/v1/reports/finance', 'getFinanceReport'],
      ['/api/v1/reports/focus', 'getFocusReport'],
      ['/api/v1/cost/requests', 'getRequestCost'],
      ['/api/v1/latency', 'getLatency'],
      ['/api/v1/errors', 'getErrors'],
      ['/api/v1/runners', 'getRunners'],
      ['/api/v1/logs/stream', 'streamLogs'],
      ['/api/v1/logs', 'searchLogs'],
      ['/api/v1/sessions/{session_id}', 'getSession'],
      ['/api/v1/sessions', 'listSessions'],
      ['/api/v1/efficiency', 'getEfficiency'],
      ['/api/v1/efficiency/hourly', 'getEfficiencyHourly'],
      ['/api/v1/recommendations', 'getRecommendations'],
    ]);
    expect(doc.servers).toEqual([{ url: service.url, description: 'this Tallyhouse service' }]);
    const finance = doc.paths['/api/v1/reports/finance'].get.responses['200'].content!['application/json'].schema;
    expect(Object.keys(finance.properties ?? {})).toEqual(expect.arrayContaining(['rows', 'totals', 'reconciliation', 'month_complete']));
    const latency = JSON.stringify(doc.paths['/api/v1/latency'].get.responses['200']);
    expect(latency).toContain('p99_duration, in seconds');
    for (const p of Object.values(doc.paths)) expect(Object.keys(p.get.responses)).toEqual(['200', '400', '401', '404', '421', '422']);
    expect(Object.keys(doc.paths['/api/v1/logs/stream'].get.responses['200'].content!)).toEqual(['text/event-stream']);
  });

  it('GET /api/v1 links to the document and every route', async () => {
    const res = await fetch(`${service.url}/api/v1`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { openapi: string; routes: Array<{ path: string }> };
    expect(body.openapi).toBe('/api/v1/openapi.json');
    expect(body.routes.map((r) => r.path)).toEqual(Object.keys(doc.paths));
  });
});
