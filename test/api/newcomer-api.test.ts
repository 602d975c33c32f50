// Issue 30.9: the query API's answers to a newcomer's mistakes, requested as a user requests them (HTTP on
// 127.0.0.1): a missing parameter is named as required with what it takes (it said "Invalid input: expected string,
// received undefined"), an unknown route answers in the API's error shape (it was fastify's own), format=csv on a
// JSON-only route says so (it said "allowed: " with nothing after it), and the OpenAPI document says `to` is exclusive.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { sessionRoutes } from '../../src/api/session-routes.js';
import { requestCostRoutes } from '../../src/api/request-cost-routes.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { testConfig } from '../support/store.js';

let service: Service;
beforeAll(async () => {
  service = await startService(testConfig({ PORT: '0' }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension([requestCostRoutes, sessionRoutes])],
  });
});
afterAll(async () => {
  await service?.close();
});

async function get(path: string) {
  const res = await fetch(`${service.url}${path}`);
  return { status: res.status, body: (await res.json()) as unknown };
}

describe('the query API for a newcomer', () => {
  it('a missing month is named as required, with what it takes', async () => {
    expect(await get('/api/v1/reports/finance')).toEqual({
      status: 400,
      // RFC 9457 problem details, with the error object the API's clients have always read kept (issue 43).
      body: {
        type: 'urn:tallyhouse:problem:validation_error',
        title: 'Invalid parameter',
        status: 400,
        detail: 'month: required; expected a month YYYY-MM',
        instance: '/api/v1/reports/finance',
        error: { type: 'validation_error', message: 'month: required; expected a month YYYY-MM', parameter: 'month' },
      },
    });
  });

  it('an unknown route answers in the API\'s error shape, pointing at the route list', async () => {
    expect(await get('/api/v1/costs?from=2026-11-01')).toMatchObject({
      status: 404,
      body: { error: { type: 'not_found', message: 'no route GET /api/v1/costs; the routes are listed at /api/v1/openapi.json' } },
    });
  });

  it('format=csv on a JSON-only route says the route answers JSON only', async () => {
    expect(await get('/api/v1/sessions?format=csv')).toMatchObject({
      status: 400,
      body: { error: { type: 'validation_error', message: 'format: this route answers JSON only; allowed: app, from, to, limit', parameter: 'format' } },
    });
    expect(await get('/api/v1/sessions/abc?format=csv')).toMatchObject({
      status: 400,
      body: { error: { type: 'validation_error', message: 'format: this route answers JSON only; this route takes no query parameters', parameter: 'format' } },
    });
  });

  it('the OpenAPI document says `to` is exclusive on the date routes', async () => {
    const doc = (await get('/api/v1/openapi.json')).body as { paths: Record<string, { get: { parameters?: Array<{ name: string; description?: string; schema?: { description?: string } }> } }> };
    for (const path of ['/api/v1/cost', '/api/v1/cost/requests']) {
      const to = doc.paths[path].get.parameters?.find((p) => p.name === 'to');
      expect(to?.description ?? to?.schema?.description, path).toContain('exclusive');
    }
  });

  it('the finance route\'s summary names both product lines (issue 30.14: it omitted model APIs)', async () => {
    const doc = (await get('/api/v1/openapi.json')).body as { paths: Record<string, { get: { summary: string } }> };
    expect(doc.paths['/api/v1/reports/finance'].get.summary).toMatch(/serverless .*model APIs/);
  });
});
