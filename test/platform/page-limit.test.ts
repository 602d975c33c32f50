// Issue 49.2 (items per page): a page holding more items than the call asked for (`limit`) is refused with a named
// error (`page_over_limit`, not retried: the same call gets the same page), a metric and a log line; a page at the
// limit is read as before. A collector that pages with a limit sees the call fail with that error (the run fails
// naming it; the next run asks again), and nothing of the refused page is stored.
import { afterEach, describe, expect, it } from 'vitest';
import { PlatformClient, PlatformError } from '../../src/platform/index.js';
import { createRegistry } from '../../src/metrics.js';
import { collectRevisions } from '../../src/collectors/revisions.js';
import { captureLog } from '../support/log-capture.js';
import { fakeJob } from '../collectors/fake-job.js';
import { json, startScriptedServer } from './scripted-server.js';
import { z } from 'zod';

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  while (opened.length > 0) await opened.pop()?.close();
});

function client(baseUrl: string, opts: Partial<ConstructorParameters<typeof PlatformClient>[0]> = {}): PlatformClient {
  const c = new PlatformClient({ baseUrl, apiKey: 'api-key-1', adminKey: 'admin-key-1', backoffBaseMs: 5, maxBackoffMs: 20, random: () => 0.5, maxElapsedMs: 20_000, ...opts });
  opened.push(c);
  return c;
}

const Page = z.looseObject({ items: z.array(z.unknown()), has_more: z.boolean(), next_cursor: z.string().nullable() });
const items = (n: number) => Array.from({ length: n }, (_, i) => ({ request_id: `r${i}` }));

async function walk(c: PlatformClient, limit: number): Promise<number> {
  let n = 0;
  for await (const page of c.paginate('/v1/serverless/requests/by-endpoint', { query: { endpoint_id: ['acme/app'], limit }, schema: Page })) n += page.items.length;
  return n;
}

describe('items per page (issue 49.2)', () => {
  it('refuses a page with more items than asked for: one attempt, page_over_limit, a metric and a log line', async () => {
    const server = await startScriptedServer([json(200, { items: items(3), has_more: false, next_cursor: null })]);
    opened.push(server);
    const registry = createRegistry({ defaultMetrics: false });
    const { logger, lines } = captureLog('warn');
    const c = client(server.baseUrl, { registry, logger });
    const err = await walk(c, 2).then(
      () => { throw new Error('expected the walk to fail'); },
      (e: unknown) => e as PlatformError,
    );
    expect(err).toBeInstanceOf(PlatformError);
    expect([err.type, err.retryable, err.status]).toEqual(['page_over_limit', false, 200]);
    expect(err.message).toBe('GET /v1/serverless/requests/by-endpoint answered 200 with a page of 3 items, more than the 2 asked for (limit); refused');
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0].query.get('limit')).toBe('2');
    const metric = (await registry.getSingleMetric('tallyhouse_platform_page_over_limit_total')!.get()).values;
    expect(metric).toEqual([{ labels: { endpoint: '/v1/serverless/requests/by-endpoint' }, value: 1 }]);
    expect(lines.filter((l) => l.msg === 'platform page holds more items than asked for; refused')).toHaveLength(1);
  });

  it('reads pages at the limit, and pages of a call without a limit, as before', async () => {
    const server = await startScriptedServer([
      json(200, { items: items(2), has_more: true, next_cursor: 'c1' }),
      json(200, { items: items(1), has_more: false, next_cursor: null }),
    ]);
    opened.push(server);
    expect(await walk(client(server.baseUrl), 2)).toBe(3);
    const unlimited = await startScriptedServer([json(200, { items: items(500), has_more: false, next_cursor: null })]);
    opened.push(unlimited);
    let n = 0;
    for await (const page of client(unlimited.baseUrl).paginate('/v1/serverless/requests/by-endpoint', { query: {}, schema: Page })) n += page.items.length;
    expect(n).toBe(500);
  });

  it("checks the envelope's own list (revisions): the collector's call fails with the named error", async () => {
    const revisions = (n: number) => Array.from({ length: n }, (_, i) => ({ revision_id: `rev-${i}`, created_at: '2026-11-01T00:00:00Z' }));
    const server = await startScriptedServer([json(200, { revisions: revisions(101), has_more: false, next_cursor: null })]);
    opened.push(server);
    const job = fakeJob({ pages: () => [] });
    const ctx = { ...job.ctx, platform: client(server.baseUrl) };
    const err = await collectRevisions(ctx, [{ owner: 'acme', name: 'app', endpoint_id: 'acme/app' }]).then(
      () => { throw new Error('expected the collector to fail'); },
      (e: unknown) => e as PlatformError,
    );
    expect([err.type, err.message]).toEqual(['page_over_limit', 'GET /v1/serverless/apps/acme/app/revisions answered 200 with a page of 101 items, more than the 100 asked for (limit); refused']);
    expect(job.rows).toEqual({});
  });
});
