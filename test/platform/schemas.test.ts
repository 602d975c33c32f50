import { describe, expect, it } from 'vitest';
import {
  AnalyticsRow,
  AppsResponse,
  EventsPage,
  Jwks,
  LogsHistoryPage,
  MetaResponse,
  ModelsPage,
  QueueResponse,
  RevisionsPage,
  RunnersHistoryResponse,
  SeriesPage,
  UsageRow,
} from '../../src/platform/schemas.js';
import { toDecimalString } from '../../src/values.js';

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
  it('keep unknown fields of the series page envelope and of its buckets, and leave the rows to be checked one by one', () => {
    const page = SeriesPage.parse({
      next_cursor: 'abc',
      has_more: true,
      window: { tz: 'Europe/Paris' },
      summary: [usageRow, 'not a row'],
      time_series: [{ bucket: '2026-03-29T00:00:00+01:00', hours: 23, results: [usageRow, { quantity: 'x' }] }],
    });
    expect(page.window).toEqual({ tz: 'Europe/Paris' });
    expect(page.time_series?.[0].hours).toBe(23);
    // A malformed row does not fail its page: the collector rejects it alone.
    expect(page.summary).toEqual([usageRow, 'not a row']);
    expect(UsageRow.safeParse(page.time_series?.[0].results[1]).success).toBe(false);
    expect(SeriesPage.safeParse({ time_series: [{ bucket: 'b', results: 'x' }] }).success).toBe(false);
  });

  it('keep unknown fields of a usage row and pass its money on as the JSON numbers given, never coerced', () => {
    // Parsed from the wire text: trailing zeros and exponents are how the platform may print them.
    const raw: unknown = JSON.parse(
      '{"app":"acme/img","environment":null,"machine_type":"GPU-H100","unit":"second","quantity":3600.50,' +
        '"unit_price":5.75e-4,"cost_subtotal":2.07028750,"cost_total":1e-7,"cost":1e-7,"currency":"USD","is_surge":true,"region":"us-east"}',
    );
    const row = UsageRow.parse(raw);
    expect(row.region).toBe('us-east');
    expect([row.quantity, row.unit_price, row.cost_subtotal, row.cost_total].map((v) => toDecimalString(v!))).toEqual([
      '3600.5',
      '0.000575',
      '2.0702875',
      '0.0000001',
    ]);
    // Money as text is not a number the interface sends: refused, not coerced.
    expect(UsageRow.safeParse({ ...usageRow, cost: '1.86325875' }).success).toBe(false);
    expect(UsageRow.safeParse({ ...usageRow, unit_price: null }).success).toBe(false);
  });

  it('accept a usage row carrying only the interface fields', () => {
    const { percent_discount, cost_subtotal, cost_discount, cost_total, region, ...minimal } = usageRow;
    const row = UsageRow.parse(minimal);
    expect(row.cost_total).toBeUndefined();
    expect(row.cost).toBe(1.86325875);
  });

  it('keep analytics metrics the schema does not list; counts are whole numbers >= 0', () => {
    const row = { endpoint_id: 'acme/img', request_count: 10, p99_duration: null, p999_duration: 9.1 };
    expect(AnalyticsRow.parse(row)).toEqual(row);
    expect(AnalyticsRow.parse({ endpoint_id: 'acme/img/route', error_count: 1, p50_duration: 0.25 }).p50_duration).toBe(0.25);
    expect(AnalyticsRow.safeParse({ endpoint_id: 'acme/img', request_count: 1.5 }).success).toBe(false);
    expect(AnalyticsRow.safeParse({ endpoint_id: 'acme/img', error_count: -1 }).success).toBe(false);
    expect(AnalyticsRow.safeParse({ request_count: 1 }).success).toBe(false);
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
