import { describe, expect, it } from 'vitest';
import {
  AnalyticsPage,
  AppsResponse,
  EventsPage,
  Jwks,
  LogsHistoryPage,
  MetaResponse,
  ModelsPage,
  QueueResponse,
  RequestsPage,
  RevisionsPage,
  RunnersHistoryResponse,
  UsagePage,
} from '../../src/platform/schemas.js';

const usageRow = {
  app: 'acme/img',
  environment: null,
  machine_type: 'GPU-H100',
  unit: 'second',
  quantity: 3600.5,
  unit_price: 0.000575,
  percent_discount: 10,
  cost_subtotal: 2.07028750,
  cost_discount: 0.20702875,
  cost_total: 1.86325875,
  cost: 1.86325875,
  currency: 'USD',
  is_surge: true,
  region: 'us-east', // unknown field
};

describe('response schemas', () => {
  it('keep unknown fields at every level of the usage page, and money exactly as given', () => {
    const page = UsagePage.parse({
      next_cursor: 'abc',
      has_more: true,
      window: { tz: 'Europe/Paris' },
      summary: [usageRow],
      time_series: [{ bucket: '2026-03-29T00:00:00+01:00', hours: 23, results: [usageRow] }],
    });
    expect(page.window).toEqual({ tz: 'Europe/Paris' });
    expect(page.summary?.[0]).toEqual(usageRow);
    expect(page.summary?.[0].cost_subtotal).toBe(2.0702875);
    expect(page.time_series?.[0].hours).toBe(23);
    expect(page.time_series?.[0].results[0].region).toBe('us-east');
  });

  it('accept a usage row carrying only the interface fields', () => {
    const { percent_discount, cost_subtotal, cost_discount, cost_total, region, ...minimal } = usageRow;
    const page = UsagePage.parse({ next_cursor: null, has_more: false, summary: [minimal] });
    expect(page.summary?.[0].cost_total).toBeUndefined();
    expect(page.summary?.[0].cost).toBe(1.86325875);
  });

  it('take billable_units as a number, null or absent', () => {
    const base = { request_id: 'r', endpoint_id: 'acme/img', ended_at: '2026-03-01T00:00:01Z', status_code: 200, duration: 1.5 };
    const page = RequestsPage.parse({
      next_cursor: null,
      has_more: false,
      items: [
        { ...base, billable_units: 4 },
        { ...base, billable_units: null, started_at: '2026-03-01T00:00:00Z', cache_hit: false },
        base,
      ],
    });
    expect(page.items.map((i) => i.billable_units)).toEqual([4, null, undefined]);
    expect(page.items[1].cache_hit).toBe(false);
    expect(RequestsPage.safeParse({ items: [{ ...base, status_code: 'x' }] }).success).toBe(false);
  });

  it('keep analytics metrics the schema does not list', () => {
    const page = AnalyticsPage.parse({
      summary: [{ endpoint_id: 'acme/img', request_count: 10, p99_duration: null, p999_duration: 9.1 }],
      time_series: [{ bucket: '2026-03-01T00:00:00Z', results: [{ endpoint_id: 'acme/img/route', error_count: 1 }] }],
    });
    expect(page.summary?.[0]).toEqual({ endpoint_id: 'acme/img', request_count: 10, p99_duration: null, p999_duration: 9.1 });
    expect(page.time_series?.[0].results[0].error_count).toBe(1);
  });

  it('parse the other responses of the notes, keeping unknown fields', () => {
    expect(MetaResponse.parse({ webhook_ip_ranges: ['10.0.0.0/8'], extra: 1 }).extra).toBe(1);
    expect(Jwks.parse({ keys: [{ kty: 'OKP', crv: 'Ed25519', x: 'abc', use: 'sig' }] }).keys[0].use).toBe('sig');
    const apps = AppsResponse.parse({
      apps: [{ endpoint_id: 'acme/img', owner: 'acme', name: 'img', endpoints: ['acme/img/a'], gpu_count: 2 }],
    });
    expect(apps.apps[0].endpoints).toEqual(['acme/img/a']);
    expect(apps.apps[0].gpu_count).toBe(2);
    expect(QueueResponse.parse({ queue_size: 3 }).queue_size).toBe(3);
    const history = RunnersHistoryResponse.parse({
      endpoint_id: 'acme/img',
      timeframe: 'hour',
      aggregation: 'max',
      history: [{ timestamp: '2026-03-01T00:00:00Z', running: 1, idle: 0, pending: 0, draining: 0, crash_backoff: 2 }],
    });
    expect(history.history[0].crash_backoff).toBe(2);
    const events = EventsPage.parse({
      next_cursor: null,
      has_more: false,
      events: [{ event_id: 'e1', category: 'runner_brand_new', created_at: '2026-03-01T00:00:00Z', payload: { state: 'DEAD' } }],
    });
    expect(events.events[0]).toEqual({ event_id: 'e1', category: 'runner_brand_new', created_at: '2026-03-01T00:00:00Z', payload: { state: 'DEAD' } });
    const revisions = RevisionsPage.parse({
      revisions: [{ revision_id: 'v1', created_at: 't', is_current: true, message: null, annotations: { a: 1 }, status: 'DEPLOYED', deployed_by: 'me', build_s: 3 }],
    });
    expect(revisions.revisions[0].build_s).toBe(3);
    const logs = LogsHistoryPage.parse({
      items: [{ timestamp: 't', level: 'INFO', message: 'hi', app: 'img', revision: 'v1', labels: { svc_request_id: 'r' }, node: 'n1' }],
    });
    expect(logs.items[0].node).toBe('n1');
    const models = ModelsPage.parse({ models: [{ endpoint_id: 'svc/flux', metadata: { display_name: 'Flux', category: 'image' } }] });
    expect(models.models[0].metadata?.display_name).toBe('Flux');
  });
});
