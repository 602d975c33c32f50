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
import { anomalyRoutes } from '../../src/api/anomaly-routes.js';
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
    extensions: [apiExtension([requestCostRoutes, analyticsRoutes, logStreamRoutes, logsRoutes, sessionRoutes, efficiencyRoutes, anomalyRoutes])],
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
      ['/api/v1/cost/changes', 'getCostChanges'],
      ['/api/v1/budgets', 'getBudgets'],
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
      ['/api/v1/anomalies', 'getAnomalies'],
    ]);
    expect(doc.servers).toEqual([{ url: service.url, description: 'this Tallyhouse service' }]);
    const finance = doc.paths['/api/v1/reports/finance'].get.responses['200'].content!['application/json'].schema;
    expect(Object.keys(finance.properties ?? {})).toEqual(expect.arrayContaining(['rows', 'totals', 'reconciliation', 'month_complete']));
    const latency = JSON.stringify(doc.paths['/api/v1/latency'].get.responses['200']);
    expect(latency).toContain('p99_duration, in seconds');
    // Every status each route can send (issue 43), each a problem document: 404 only where nothing collected (or
    // no such session) is an answer, 429/503 where the log stream's limits are.
    const extra: Record<string, string[]> = {
      '/api/v1/reports/finance': ['404'],
      '/api/v1/reports/focus': ['404'],
      '/api/v1/sessions/{session_id}': ['404'],
      '/api/v1/logs/stream': ['429', '503'],
    };
    for (const [path, p] of Object.entries(doc.paths)) {
      expect(Object.keys(p.get.responses).sort(), path).toEqual(['200', '400', '401', '421', '422', '500', ...(extra[path] ?? [])].sort());
      for (const [status, r] of Object.entries(p.get.responses)) {
        if (status !== '200') expect(Object.keys(r.content!), `${path} ${status}`).toEqual(['application/problem+json']);
      }
    }
    // Dates say so: a day parameter is format date, a day-or-instant one either, and so are the fields of the answers.
    const params = (path: string) => Object.fromEntries((doc.paths[path].get.parameters as Array<{ name: string; schema: Record<string, unknown> }>).map((x) => [x.name, x.schema]));
    expect(params('/api/v1/cost').from).toMatchObject({ format: 'date' });
    expect(params('/api/v1/latency').from).toMatchObject({ anyOf: [{ format: 'date' }, { format: 'date-time' }] });
    expect(params('/api/v1/logs').to).toMatchObject({ anyOf: [{ format: 'date' }, { format: 'date-time' }] });
    expect(JSON.stringify(doc.paths['/api/v1/cost'].get.responses['200'].content!['application/json'].schema.properties!.from)).toContain('"format":"date"');
    expect(JSON.stringify(doc.paths['/api/v1/anomalies'].get.responses['200'])).toContain('"format":"date-time"');
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
