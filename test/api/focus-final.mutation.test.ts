// x_Final of the FOCUS export (src/api/focus.ts) with no store (issue 31: the mutation score of the money
// modules): a row is final when its UTC day is final for its product, i.e. a collection made after the day's
// late-billing window (LATE_BILLING_WINDOW_HOURS, 48 by default) agreed with the one before (src/insights/finality.ts).
// The stand-in client answers the two charge queries and the day-collection query; expected values by hand.
import { describe, expect, it } from 'vitest';
import { focusReport } from '../../src/api/focus.js';
import { focusServerlessCharges } from '../../src/store/tables/usage-buckets.js';
import { focusModelCharges } from '../../src/store/tables/model-usage.js';
import { dayCollections } from '../../src/store/tables/cost-day-collections.js';
import type { Store } from '../../src/store/client.js';

const OPTS = { billingAccountId: 'acct-1', billingAccountName: 'Acme', providerName: 'Svc', now: new Date('2026-12-02T06:00:00Z') };
const SERVERLESS = [{ day: '2026-04-03', app: 'acme/web', machine_type: 'CPU', is_surge: false, currency: 'USD', unit_price: '0.0005', percent_discount: null, quantity: '10', cost: '0.005' }];
const MODELS = [{
  day: '2026-04-03', endpoint_id: 'svc-ai/flux-dev', unit: 'image', currency: 'USD', api_key_id: 'k', login_username: '', api_key_label: '',
  price_key: '0.025|', unit_price: '0.025', percent_discount: null, quantity: '2', cost: '0.05',
}];
// 3 April's window ends 4 April + 48 h = 6 April 00:00; collections on 10 and 11 April agree.
const agreed = [
  { local_day: '2026-04-03', collected_text: '2026-04-10 00:00:00.000', fingerprint: 'f' },
  { local_day: '2026-04-03', collected_text: '2026-04-11 00:00:00.000', fingerprint: 'f' },
];

function fakeStore(finalFor: string[]) {
  const asked: Array<Record<string, unknown>> = [];
  const store = {
    client: {
      query: async ({ query, query_params }: { query: string; query_params: Record<string, unknown> }) => {
        let rows: unknown[] = [];
        if (query === focusServerlessCharges.sql) rows = SERVERLESS;
        else if (query === focusModelCharges.sql) rows = MODELS;
        else if (query === dayCollections.sql) {
          asked.push(query_params);
          rows = finalFor.includes(query_params.product as string) ? agreed : [];
        }
        return { json: async () => rows };
      },
    },
  } as unknown as Pick<Store, 'client'>;
  return { store, asked };
}

describe('FOCUS x_Final, by hand', () => {
  it('a row is final when its UTC day is final for its own product', async () => {
    const s = fakeStore(['serverless']);
    expect((await focusReport(s.store, '2026-04', OPTS)).map((r) => [r.x_Product, r.x_Final])).toEqual([['serverless', 'true'], ['model_api', 'false']]);
    expect(s.asked).toEqual([
      { product: 'serverless', timezone: 'UTC', from: '2026-04-01', to: '2026-05-01' },
      { product: 'model_api', timezone: 'UTC', from: '2026-04-01', to: '2026-05-01' },
    ]);
    const m = fakeStore(['model_api']);
    expect((await focusReport(m.store, '2026-04', OPTS)).map((r) => [r.x_Product, r.x_Final])).toEqual([['serverless', 'false'], ['model_api', 'true']]);
  });

  it('a wider late-billing window (200 h: to 12 April 08:00) makes the same collections too early', async () => {
    const s = fakeStore(['serverless', 'model_api']);
    expect((await focusReport(s.store, '2026-04', { ...OPTS, lateBillingWindowHours: 200 })).map((r) => r.x_Final)).toEqual(['false', 'false']);
    expect((await focusReport(s.store, '2026-04', { ...OPTS, lateBillingWindowHours: 48 })).map((r) => r.x_Final)).toEqual(['true', 'true']);
    expect((await focusReport(s.store, '2026-04', OPTS)).map((r) => r.x_Final)).toEqual(['true', 'true']);
  });
});
