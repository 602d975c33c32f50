// The OpenAPI document of GET /cost/changes and GET /cost/requests (issue 31: the mutation score of src/api/*cost*):
// generated clients and readers rely on it, so it must describe what the routes answer. Oracles independent of the
// schemas' text: the keys of a real answer (from the handler, through a stand-in store) are exactly the documented
// properties at every level, each enum holds the value answered, and every parameter and documented field has a
// description that says something (an empty one tells a reader nothing).
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { costChangeRoutes } from '../../src/api/cost-changes-routes.js';
import { requestCostRoutes } from '../../src/api/request-cost-routes.js';
import { installErrorHandler, parseQuery } from '../../src/api/http.js';
import { RouteRegistry } from '../../src/api/routes.js';
import { createLogger } from '../../src/log.js';
import type { Runtime } from '../../src/runtime.js';

type Schema = { type?: string | string[]; properties?: Record<string, Schema>; items?: Schema; anyOf?: Schema[]; enum?: unknown[]; description?: string; additionalProperties?: Schema | boolean };
type Operation = { operationId: string; summary: string; description?: string; parameters: Array<{ name: string; description?: string }>; responses: Record<string, { content: Record<string, { schema: Schema }> }> };

let app: FastifyInstance;
let paths: Record<string, { get: Operation }>;

// Every status once: acme/a changed, acme/u unchanged, acme/g gone, acme/n new (baseline 1 November, current the 2nd).
const line = (app: string, quantity = '1', subtotal = '1') =>
  ({ g_app: app, g_endpoint: 'svc-ai/flux', app, machine_type: 'CPU', is_surge: true, currency: 'USD', quantity, subtotal, discount: '0.1', endpoint_id: 'svc-ai/flux', unit: 'image' });
const store = {
  client: {
    query: async ({ query, query_params }: { query: string; query_params: Record<string, unknown> }) => {
      let rows: unknown[] = [];
      if (query.includes('FROM cost_day_collections') && query.includes('collected_ms')) {
        // Coverage: every day of every range read whole on Nov 11 (issue 45.1).
        for (let d = Date.parse(`${String(query_params.from)}T00:00:00Z`); d < Date.parse(`${String(query_params.to)}T00:00:00Z`); d += 86_400_000) {
          rows.push({ local_day: new Date(d).toISOString().slice(0, 10), collected_ms: Date.parse('2026-11-11T00:00:00Z') });
        }
      } else if (query.includes('FROM usage_buckets') || query.includes('FROM model_usage_buckets')) {
        rows = query_params.from === '2026-11-01' ? [line('acme/a'), line('acme/u'), line('acme/g')] : [line('acme/a', '2', '3'), line('acme/u'), line('acme/n')];
      }
      return { json: async () => rows };
    },
  },
};

// Built inside each test, not in beforeAll nor once: a route that fails to register then fails a test, which
// Stryker counts (a failing hook left it counting no test at all), and each test covers the route specs it reads
// (per-test coverage gave a spec's lines to whichever test built the app first).
const ready = () => build();
async function build(): Promise<void> {
  await app?.close();
  app = Fastify();
  const rt = { store, writer: {}, config: { API_MAX_RANGE_DAYS: 31, LATE_BILLING_WINDOW_HOURS: 48, TIMEZONES: ['UTC'] }, logger: createLogger('silent'), now: () => new Date('2026-11-11T00:00:00Z') } as unknown as Runtime;
  installErrorHandler(app, rt);
  const registry = new RouteRegistry(parseQuery);
  costChangeRoutes(app, registry, rt, async () => {});
  requestCostRoutes(app, registry, rt);
  await app.ready();
  paths = (registry.openapi('/api/v1', { title: 't', version: '1' }, 'http://127.0.0.1') as { paths: typeof paths }).paths;
}
afterAll(async () => {
  await app?.close();
});

/** The value's keys are the schema's properties at every level; enums hold the value. */
function conforms(schema: Schema, value: unknown, at: string): void {
  if (schema.anyOf) {
    const options = schema.anyOf.filter((s) => (value === null ? s.type === 'null' : s.type !== 'null'));
    expect(options.length, `${at}: no schema for ${JSON.stringify(value)}`).toBeGreaterThan(0);
    return conforms(options[0], value, at);
  }
  if (schema.enum) expect(schema.enum, at).toContain(value);
  if (schema.type === 'object' && schema.properties) {
    expect(Object.keys(value as object).sort(), at).toEqual(Object.keys(schema.properties).sort());
    for (const [k, v] of Object.entries(value as object)) conforms(schema.properties[k], v, `${at}.${k}`);
  }
  if (schema.type === 'array' && schema.items) (value as unknown[]).forEach((v, i) => conforms(schema.items!, v, `${at}[${i}]`));
}

/** Every description in the schema, with where it is. */
function descriptions(schema: Schema, at: string, out: Array<[string, string]> = []): Array<[string, string]> {
  if (schema.description !== undefined) out.push([at, schema.description]);
  for (const [k, v] of Object.entries(schema.properties ?? {})) descriptions(v, `${at}.${k}`, out);
  if (schema.items) descriptions(schema.items, `${at}[]`, out);
  for (const s of schema.anyOf ?? []) descriptions(s, at, out);
  return out;
}

/** Where a schema (or a property's) says nothing of its values. */
function untyped(schema: Schema, at: string, out: string[] = []): string[] {
  const s = schema as Schema & { const?: unknown };
  if (s.type === undefined && s.enum === undefined && s.anyOf === undefined && s.const === undefined) out.push(at);
  for (const [k, v] of Object.entries(schema.properties ?? {})) untyped(v, `${at}.${k}`, out);
  if (schema.items) untyped(schema.items, `${at}[]`, out);
  for (const x of schema.anyOf ?? []) untyped(x, at, out);
  if (typeof schema.additionalProperties === 'object') untyped(schema.additionalProperties, `${at}{}`, out);
  return out;
}

describe('the OpenAPI document of the cost routes', () => {
  it.each([
    ['/api/v1/cost/changes', 'getCostChanges', '/cost/changes?from=2026-11-02&to=2026-11-03&group_by=app,endpoint,surge', 11],
    ['/api/v1/cost/requests', 'getRequestCost', '/cost/requests?from=2026-11-02&to=2026-11-03&group_by=day', 6],
  ])('%s: its operation, CSV, described parameters, and a schema the answer fits exactly', async (path, operationId, url, documentedFields) => {
    await ready();
    const op = paths[path].get;
    expect(op.operationId).toBe(operationId);
    expect(op.summary.length).toBeGreaterThan(20);
    expect((op.description ?? '').length).toBeGreaterThan(20);
    expect(Object.keys(op.responses['200'].content).sort()).toEqual(['application/json', 'text/csv']);
    // `format` is the shared parameter of every CSV route (src/api/http.ts), undescribed there; the routes' own are described.
    expect(op.parameters.filter((p) => p.name !== 'format' && (!p.description || p.description.trim() === '')).map((p) => p.name)).toEqual([]);
    const schema = op.responses['200'].content['application/json'].schema;
    const described = descriptions(schema, '$');
    expect(described.filter(([, d]) => d.trim() === '')).toEqual([]);
    // A description begins with what the field is: one that begins with punctuation lost its subject.
    expect(described.filter(([, d]) => !/^[\w(]/.test(d))).toEqual([]);
    expect(op.parameters.filter((p) => p.description !== undefined && !/^[\w(]/.test(p.description)).map((p) => p.name)).toEqual([]);
    // Every documented field says what it holds: a type, an enum or alternatives, never an empty schema.
    expect(untyped(schema, '$')).toEqual([]);
    expect(described.length).toBeGreaterThanOrEqual(documentedFields);
    for (const u of path.endsWith('changes') ? ['all', 'serverless', 'model_api'].map((p) => `${url}&product=${p}`) : [url]) {
      const res = await app.inject({ method: 'GET', url: u });
      expect(res.statusCode, u).toBe(200);
      conforms(schema, res.json(), '$');
    }
    if (path.endsWith('changes')) {
      const statuses = (await app.inject({ method: 'GET', url })).json().groups.map((g: { status: string }) => g.status).sort();
      // Serverless by app: acme/a changed, acme/g gone, acme/n new, acme/u unchanged; model APIs: svc-ai/flux changed.
      expect(statuses).toEqual(['changed', 'changed', 'gone', 'new', 'unchanged']);
    }
  });

  it('the change report answers a group and its item with every part, each documented', async () => {
    await ready();
    const body = (await app.inject({ method: 'GET', url: '/cost/changes?from=2026-11-02&to=2026-11-03' })).json();
    // One changed group: the schema's group and item objects were compared key by key above; here they are not empty.
    expect(Object.keys(body.groups[0]).sort()).toEqual(['baseline', 'currency', 'current', 'difference', 'discount', 'gone', 'group', 'items', 'new', 'not_collected', 'price', 'product', 'status', 'volume']);
    expect(Object.keys(body.groups[0].items[0]).sort()).toEqual(['baseline', 'current', 'difference', 'discount', 'gone', 'item', 'new', 'not_collected', 'price', 'volume']);
    expect(Object.keys(body.groups[0].items[0].baseline).sort()).toEqual(['cost', 'discount', 'quantity', 'subtotal', 'unit_price']);
    const props = paths['/api/v1/cost/changes'].get.responses['200'].content['application/json'].schema.properties!;
    const item = props.groups.items!.properties!.items.items!.properties!;
    for (const part of ['volume', 'price', 'discount', 'new', 'gone', 'not_collected', 'difference']) expect(item[part].description, part).toMatch(/\w{3}/);
  });

  it('every amount and quantity of the change report is documented as exact decimal text (CONTRIBUTING.md: money is exact)', async () => {
    await ready();
    const amounts = new Set(['subtotal', 'discount', 'cost', 'difference', 'volume', 'price', 'new', 'gone', 'not_collected', 'baseline_per_day', 'current_per_day', 'baseline', 'current', 'quantity']);
    const found: Array<[string, string | undefined]> = [];
    const walk = (schema: Schema, at: string) => {
      for (const [k, v] of Object.entries(schema.properties ?? {})) {
        if (amounts.has(k) && v.type === 'string') found.push([`${at}.${k}`, v.description]);
        walk(v, `${at}.${k}`);
      }
      if (schema.items) walk(schema.items, `${at}[]`);
    };
    walk(paths['/api/v1/cost/changes'].get.responses['200'].content['application/json'].schema, '$');
    // groups: 6 parts (not_collected too), difference, baseline and current figures (3 each); items: the same with 4
    // figures each; totals: baseline, current, difference, 6 parts and the 2 per-day figures.
    expect(found.length).toBe(6 + 1 + 3 + 3 + 6 + 1 + 4 + 4 + 11);
    expect(found.filter(([, d]) => !/^\w.*exact decimal text/.test(d ?? ''))).toEqual([]);
  });
});
