// Issue 49.6: one date and range parser for every route. For every GET operation of the OpenAPI document, every
// query parameter whose schema is a date (YYYY-MM-DD, or a date or date-time) or a month (YYYY-MM): an impossible
// day (2026-02-30) or month (2026-13) is a 400 naming that parameter, never a 200 or a 500; and every route with a
// from and a to refuses a range of 99 years (400 naming the limit). The review: /efficiency/hourly answered 200 for
// 1970-01-01..2026-02-31, /efficiency and /recommendations 500 to 2026-02-30 and 2026-13. Oracle: the document.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { analyticsRoutes } from '../../src/api/analytics-routes.js';
import { logsRoutes } from '../../src/api/logs-routes.js';
import { sessionRoutes } from '../../src/api/session-routes.js';
import { requestCostRoutes } from '../../src/api/request-cost-routes.js';
import { anomalyRoutes } from '../../src/api/anomaly-routes.js';
import { efficiencyRoutes } from '../../src/api/efficiency-routes.js';
import { createRegistry } from '../../src/metrics.js';
import { captureLog } from '../support/log-capture.js';
import { testConfig } from '../support/store.js';

let service: Service;
const log = captureLog('info');

beforeAll(async () => {
  const config = testConfig({ PORT: '0', JOBS_ENABLED: 'false', SVC_API_KEY: 'api-key-0123456789' });
  service = await startService(config, {
    logger: log.logger,
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension([requestCostRoutes, analyticsRoutes, logsRoutes, sessionRoutes, efficiencyRoutes, anomalyRoutes])],
    now: () => new Date('2026-06-15T12:00:00Z'),
  });
}, 120_000);
afterAll(async () => {
  await service?.close();
});

type Param = { name: string; in: string; required?: boolean; schema?: { type?: string; pattern?: string; enum?: string[]; default?: unknown } };
type Kind = 'date' | 'month';

function kindOf(p: Param): Kind | undefined {
  const pattern = p.schema?.pattern ?? '';
  if (pattern.startsWith('^\\d{4}-\\d{2}-\\d{2}')) return 'date';
  if (/^\^\\d\{4\}-(\(0\[1-9\]|\\d\{2\}\$)/.test(pattern)) return 'month';
  return undefined;
}

const GOOD: Record<Kind, (name: string) => string> = { date: (name) => (name === 'to' || name.endsWith('_to') ? '2026-01-02' : '2026-01-01'), month: () => '2026-01' };
const BAD: Record<Kind, string[]> = { date: ['2026-02-30', '2026-13-01'], month: ['2026-13', '2026-00'] };

async function operations(): Promise<Array<{ path: string; params: Param[] }>> {
  const doc = (await (await fetch(`${service.url}/api/v1/openapi.json`)).json()) as { paths: Record<string, { get?: { parameters?: Param[] } }> };
  return Object.entries(doc.paths)
    .filter(([, item]) => item.get?.parameters?.some((p) => p.in === 'query' && kindOf(p)))
    .map(([path, item]) => ({ path, params: item.get!.parameters! }));
}

/** A query where every parameter but `except` is valid: dates and months as GOOD, required others their first enum value or 'x'. */
function query(params: Param[], override: Record<string, string>): string {
  const q = new URLSearchParams();
  for (const p of params.filter((x) => x.in === 'query')) {
    const kind = kindOf(p);
    if (kind) q.set(p.name, GOOD[kind](p.name));
    else if (p.required) q.set(p.name, p.schema?.enum?.[0] ?? 'x');
  }
  for (const [k, v] of Object.entries(override)) q.set(k, v);
  return q.toString();
}

const url = (path: string, q: string) => `${service.url}${path.replace(/\{[^}]+\}/g, 'x')}?${q}`;

describe('every date and month parameter of the OpenAPI document', () => {
  it('an impossible day or month is a 400 naming the parameter (never 200 or 500); nothing logged with statement text', async () => {
    const ops = await operations();
    const checked: string[] = [];
    const wrong: string[] = [];
    for (const op of ops) {
      for (const p of op.params.filter((x) => x.in === 'query' && kindOf(x))) {
        for (const bad of BAD[kindOf(p)!]) {
          const res = await fetch(url(op.path, query(op.params, { [p.name]: bad })));
          const body = (await res.json()) as { error?: { parameter?: string } };
          checked.push(`${op.path} ${p.name}`);
          if (res.status !== 400 || body.error?.parameter !== p.name) wrong.push(`${op.path} ${p.name}=${bad}: ${res.status} ${JSON.stringify(body).slice(0, 160)}`);
        }
      }
    }
    // The routes the review named are among those checked.
    expect(checked).toEqual(expect.arrayContaining(['/api/v1/efficiency from', '/api/v1/efficiency/hourly to', '/api/v1/recommendations month', '/api/v1/cost from', '/api/v1/reports/finance month']));
    expect(wrong).toEqual([]);
    expect(log.lines.filter((l) => l.msg === 'request failed')).toEqual([]);
  }, 120_000);

  it('every route with a from and a to refuses a range of 99 years (400 naming to and the limit)', async () => {
    const ops = (await operations()).filter((op) => ['from', 'to'].every((n) => op.params.some((p) => p.name === n && kindOf(p))));
    const wrong: string[] = [];
    for (const op of ops) {
      const res = await fetch(url(op.path, query(op.params, { from: '2000-01-01', to: '2099-01-01' })));
      const body = (await res.json()) as { error?: { parameter?: string; message?: string } };
      if (res.status !== 400 || body.error?.parameter !== 'to' || !/MAX_RANGE_DAYS/.test(body.error?.message ?? '')) wrong.push(`${op.path}: ${res.status} ${JSON.stringify(body).slice(0, 160)}`);
    }
    expect(ops.map((op) => op.path)).toEqual(expect.arrayContaining(['/api/v1/efficiency', '/api/v1/efficiency/hourly', '/api/v1/cost']));
    expect(wrong).toEqual([]);
  }, 120_000);
});

describe('redactStatement (what a 500 logs of the store error)', () => {
  it('cuts the message at the first statement keyword, and at 500 characters', async () => {
    const { redactStatement } = await import('../../src/api/http.js');
    expect(redactStatement("Code: 6. DB::Exception: Cannot parse string '2026-02-30' as Date: while executing 'SELECT app, sum(cost) FROM usage WHERE day >= {from:Date}'")).toBe(
      "Code: 6. DB::Exception: Cannot parse string '2026-02-30' as Date: while executing '[statement redacted]",
    );
    expect(redactStatement('x'.repeat(600))).toHaveLength(500);
  });
});
