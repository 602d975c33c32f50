// The FOCUS 1.2 export row by row, with no store (so mutation testing, which runs tests in a worker thread, can run
// it): the two named queries answer fixed charges through a stand-in client, and every column of every row is
// compared with a value worked out by hand from the spec's definitions and focus.ts's stated rules (list and
// contracted costs are unit price x quantity exactly; the contracted price is the list price less the discount; a
// price delivered without one is cost / quantity rounded half up to 12 places; app-less usage names no resource).
import { describe, expect, it } from 'vitest';
import { focusReport, focusTable } from '../../src/api/focus.js';
import { FOCUS_COLUMNS, FocusNoDataError, focusOptions, type FocusRow } from '../../src/insights/focus.js';
import { toCsv } from '../../src/api/http.js';
import { focusServerlessCharges } from '../../src/store/tables/usage-buckets.js';
import { focusModelCharges } from '../../src/store/tables/model-usage.js';
import type { Store } from '../../src/store/client.js';
import { checkFocusCsv } from '../support/focus/check.js';

const OPTS = { billingAccountId: 'acct-1', billingAccountName: 'Acme Corp', providerName: 'Svc', now: new Date('2026-12-02T06:00:00Z') };

const SERVERLESS = [
  { day: '2026-04-03', app: 'acme/web', machine_type: 'CPU', is_surge: false, currency: 'USD', unit_price: '0.0005', percent_discount: '10', quantity: '3600', cost: '1.62' },
  { day: '2026-04-30', app: '', machine_type: 'GPU-A100', is_surge: true, currency: 'USD', unit_price: '0.002', percent_discount: null, quantity: '30', cost: '0.06' },
];
const model = (r: Partial<Record<string, string | null>>) => ({
  day: '2026-04-03', endpoint_id: 'svc-ai/flux-dev', unit: 'image', currency: 'USD', api_key_id: '', login_username: '', api_key_label: '',
  price_key: '', unit_price: null, percent_discount: null, quantity: '1', cost: '0', ...r,
});
const MODELS = [
  model({ api_key_id: 'key-1', api_key_label: 'Production Key', price_key: '0.025|20', unit_price: '0.025', percent_discount: '20', quantity: '40', cost: '0.8' }),
  model({ day: '2026-04-04', endpoint_id: 'svc-ai/recraft-v3', unit: 'seconds', currency: 'EUR', login_username: 'alice', price_key: 'legacy', quantity: '3', cost: '2' }),
  model({ quantity: '0', cost: '0' }), // no price, no quantity, no key
  model({ api_key_id: 'key-9', price_key: 'legacy', unit_price: '0.5', percent_discount: '10', quantity: '2', cost: '0.000000000001' }),
];

function fakeStore(serverless: unknown[], models: unknown[]) {
  const asked: Array<{ sql: string; params: unknown }> = [];
  const store = {
    client: {
      query: async ({ query, query_params }: { query: string; query_params: unknown }) => {
        asked.push({ sql: query, params: query_params });
        const rows = query === focusServerlessCharges.sql ? serverless : query === focusModelCharges.sql ? models : [];
        return { json: async () => rows };
      },
    },
  } as unknown as Pick<Store, 'client'>;
  return { store, asked };
}

const COMMON = {
  BillingAccountId: 'acct-1',
  BillingAccountName: 'Acme Corp',
  BillingPeriodStart: '2026-04-01T00:00:00Z',
  BillingPeriodEnd: '2026-05-01T00:00:00Z',
  ChargeCategory: 'Usage',
  ChargeClass: null,
  ChargeFrequency: 'Usage-Based',
  InvoiceIssuerName: 'Svc',
  ProviderName: 'Svc',
  PublisherName: 'Svc',
  SkuPriceDetails: null,
  // The fake store answers the finality queries with no rows: no day has had its agreeing re-collection yet.
  x_Final: 'false',
};
const SERVERLESS_SERVICE = { ServiceCategory: 'Compute', ServiceSubcategory: 'Serverless Compute', ServiceName: 'Serverless', SkuMeter: 'Machine Time', x_Product: 'serverless' };
const MODEL_SERVICE = {
  ServiceCategory: 'AI and Machine Learning', ServiceSubcategory: 'Generative AI', ServiceName: 'Model APIs', SkuMeter: 'Model Output', PricingCategory: 'Standard',
  ResourceType: 'Model Endpoint', x_Product: 'model_api', x_MachineType: null, x_IsSurge: null,
};

const EXPECTED: FocusRow[] = [
  {
    ...COMMON, ...SERVERLESS_SERVICE,
    BillingCurrency: 'USD', ChargePeriodStart: '2026-04-03T00:00:00Z', ChargePeriodEnd: '2026-04-04T00:00:00Z',
    ChargeDescription: 'CPU machine time of app acme/web',
    // 3600 s at 0.0005, 10 % off: list 1.8; contracted 0.0005 x 0.9 = 0.00045, x 3600 = 1.62.
    BilledCost: '1.62', EffectiveCost: '1.62', ListUnitPrice: '0.0005', ListCost: '1.8', ContractedUnitPrice: '0.00045', ContractedCost: '1.62',
    ConsumedQuantity: '3600', PricingQuantity: '3600', ConsumedUnit: 'Seconds', PricingUnit: 'Seconds', PricingCategory: 'Standard',
    ResourceId: 'acme/web', ResourceName: 'acme/web', ResourceType: 'Serverless App',
    SkuId: 'serverless/CPU', SkuPriceId: 'serverless/CPU/standard/0.0005',
    x_MachineType: 'CPU', x_IsSurge: 'false', x_ApiKeyId: null, x_ApiKeyLabel: null, x_LoginUsername: null, x_PercentDiscount: '10', x_UnitPriceDerived: 'false',
  },
  {
    ...COMMON, ...SERVERLESS_SERVICE,
    BillingCurrency: 'USD', ChargePeriodStart: '2026-04-30T00:00:00Z', ChargePeriodEnd: '2026-05-01T00:00:00Z',
    ChargeDescription: 'GPU-A100 machine time not attributed to an app at surge price',
    // 30 s at 0.002, no discount: 0.06 every way.
    BilledCost: '0.06', EffectiveCost: '0.06', ListUnitPrice: '0.002', ListCost: '0.06', ContractedUnitPrice: '0.002', ContractedCost: '0.06',
    ConsumedQuantity: '30', PricingQuantity: '30', ConsumedUnit: 'Seconds', PricingUnit: 'Seconds', PricingCategory: 'Dynamic',
    ResourceId: null, ResourceName: null, ResourceType: null,
    SkuId: 'serverless/GPU-A100', SkuPriceId: 'serverless/GPU-A100/surge/0.002',
    x_MachineType: 'GPU-A100', x_IsSurge: 'true', x_ApiKeyId: null, x_ApiKeyLabel: null, x_LoginUsername: null, x_PercentDiscount: null, x_UnitPriceDerived: 'false',
  },
  {
    ...COMMON, ...MODEL_SERVICE,
    BillingCurrency: 'USD', ChargePeriodStart: '2026-04-03T00:00:00Z', ChargePeriodEnd: '2026-04-04T00:00:00Z',
    ChargeDescription: 'svc-ai/flux-dev: 40 images (Production Key)',
    // 40 images at 0.025, 20 % off: list 1; contracted 0.025 x 0.8 = 0.02, x 40 = 0.8.
    BilledCost: '0.8', EffectiveCost: '0.8', ListUnitPrice: '0.025', ListCost: '1', ContractedUnitPrice: '0.02', ContractedCost: '0.8',
    ConsumedQuantity: '40', PricingQuantity: '40', ConsumedUnit: 'Images', PricingUnit: 'Images',
    ResourceId: 'svc-ai/flux-dev', ResourceName: 'svc-ai/flux-dev',
    SkuId: 'model_api/svc-ai/flux-dev/image', SkuPriceId: 'model_api/svc-ai/flux-dev/image/0.025',
    x_ApiKeyId: 'key-1', x_ApiKeyLabel: 'Production Key', x_LoginUsername: null, x_PercentDiscount: '20', x_UnitPriceDerived: 'false',
  },
  {
    ...COMMON, ...MODEL_SERVICE,
    BillingCurrency: 'EUR', ChargePeriodStart: '2026-04-04T00:00:00Z', ChargePeriodEnd: '2026-04-05T00:00:00Z',
    ChargeDescription: 'svc-ai/recraft-v3: 3 seconds (alice)',
    // Legacy (cost only): 2 / 3 = 0.666666666666|67 rounds half up to 0.666666666667; x 3 = 2.000000000001.
    BilledCost: '2', EffectiveCost: '2', ListUnitPrice: '0.666666666667', ListCost: '2.000000000001', ContractedUnitPrice: '0.666666666667', ContractedCost: '2.000000000001',
    ConsumedQuantity: '3', PricingQuantity: '3', ConsumedUnit: 'Seconds', PricingUnit: 'Seconds',
    ResourceId: 'svc-ai/recraft-v3', ResourceName: 'svc-ai/recraft-v3',
    SkuId: 'model_api/svc-ai/recraft-v3/seconds', SkuPriceId: 'model_api/svc-ai/recraft-v3/seconds/0.666666666667',
    x_ApiKeyId: null, x_ApiKeyLabel: null, x_LoginUsername: 'alice', x_PercentDiscount: null, x_UnitPriceDerived: 'true',
  },
  {
    ...COMMON, ...MODEL_SERVICE,
    BillingCurrency: 'USD', ChargePeriodStart: '2026-04-03T00:00:00Z', ChargePeriodEnd: '2026-04-04T00:00:00Z',
    ChargeDescription: 'svc-ai/flux-dev: 0 images (unknown key)',
    // No unit price delivered and nothing used: a price of 0, not a division by zero.
    BilledCost: '0', EffectiveCost: '0', ListUnitPrice: '0', ListCost: '0', ContractedUnitPrice: '0', ContractedCost: '0',
    ConsumedQuantity: '0', PricingQuantity: '0', ConsumedUnit: 'Images', PricingUnit: 'Images',
    ResourceId: 'svc-ai/flux-dev', ResourceName: 'svc-ai/flux-dev',
    SkuId: 'model_api/svc-ai/flux-dev/image', SkuPriceId: 'model_api/svc-ai/flux-dev/image/0',
    x_ApiKeyId: null, x_ApiKeyLabel: null, x_LoginUsername: null, x_PercentDiscount: null, x_UnitPriceDerived: 'true',
  },
  {
    ...COMMON, ...MODEL_SERVICE,
    BillingCurrency: 'USD', ChargePeriodStart: '2026-04-03T00:00:00Z', ChargePeriodEnd: '2026-04-04T00:00:00Z',
    ChargeDescription: 'svc-ai/flux-dev: 2 images (key-9)',
    // Legacy by its price key (its unit price and discount are not used): 0.000000000001 / 2 is exactly half of the
    // last place, which rounds up to 0.000000000001; x 2 = 0.000000000002.
    BilledCost: '0.000000000001', EffectiveCost: '0.000000000001', ListUnitPrice: '0.000000000001', ListCost: '0.000000000002',
    ContractedUnitPrice: '0.000000000001', ContractedCost: '0.000000000002',
    ConsumedQuantity: '2', PricingQuantity: '2', ConsumedUnit: 'Images', PricingUnit: 'Images',
    ResourceId: 'svc-ai/flux-dev', ResourceName: 'svc-ai/flux-dev',
    SkuId: 'model_api/svc-ai/flux-dev/image', SkuPriceId: 'model_api/svc-ai/flux-dev/image/0.000000000001',
    x_ApiKeyId: 'key-9', x_ApiKeyLabel: null, x_LoginUsername: null, x_PercentDiscount: null, x_UnitPriceDerived: 'true',
  },
];

describe('FOCUS rows, worked by hand', () => {
  it('every column of every row; serverless first, then model APIs; the queries asked for the month in UTC days', async () => {
    const { store, asked } = fakeStore(SERVERLESS, MODELS);
    const rows = await focusReport(store, '2026-04', OPTS);
    expect(rows).toEqual(EXPECTED);
    const charges = asked.filter((a) => a.sql === focusServerlessCharges.sql || a.sql === focusModelCharges.sql);
    expect(charges.map((a) => a.params)).toEqual([{ from: '2026-04-01', to: '2026-05-01' }, { from: '2026-04-01', to: '2026-05-01' }]);
    expect(checkFocusCsv(toCsv(focusTable(rows)))).toEqual([]);
  });

  it('December runs to the next year; the table has the FOCUS columns in order', async () => {
    const { store } = fakeStore([{ ...SERVERLESS[0], day: '2026-12-31' }], []);
    const [row] = await focusReport(store, '2026-12', OPTS);
    expect([row.BillingPeriodStart, row.BillingPeriodEnd, row.ChargePeriodStart, row.ChargePeriodEnd]).toEqual([
      '2026-12-01T00:00:00Z', '2027-01-01T00:00:00Z', '2026-12-31T00:00:00Z', '2027-01-01T00:00:00Z',
    ]);
    expect(focusTable([row]).columns).toEqual([...FOCUS_COLUMNS]);
    expect(Object.keys(row).sort()).toEqual([...FOCUS_COLUMNS].sort());
  });

  it('a month with nothing collected says how to collect it; a month that is not YYYY-MM is refused', async () => {
    const { store } = fakeStore([], []);
    const error = await focusReport(store, '2026-04', OPTS).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FocusNoDataError);
    expect((error as Error).name).toBe('FocusNoDataError');
    expect((error as Error).message).toBe(
      'no usage is collected in UTC for 2026-04 (a FOCUS file is in UTC days); collect it with: tallyhouse collect usage --timezone UTC ... and tallyhouse collect models --timezone UTC ..., or add UTC to TIMEZONES',
    );
    await expect(focusReport(store, '2026-13', OPTS)).rejects.toThrow('month must be YYYY-MM, got "2026-13"');
  });

  it('model APIs alone make a file; a derived price rounds down below the half; a contracted price keeps all 18 places', async () => {
    const { store } = fakeStore(
      [],
      [
        // 1 / 3 = 0.333333333333|33: below the half, rounds down.
        model({ price_key: 'legacy', quantity: '3', cost: '1' }),
        // 0.000000000001 at 12.3456 % off: 0.000000000001 x 0.876544 = 0.000000000000876544 (18 places), x 1000000.
        model({ price_key: '0.000000000001|12.3456', unit_price: '0.000000000001', percent_discount: '12.3456', quantity: '1000000', cost: '0.000000876544' }),
      ],
    );
    const rows = await focusReport(store, '2026-04', OPTS);
    const money = rows.map((r) => [r.ListUnitPrice, r.ListCost, r.ContractedUnitPrice, r.ContractedCost]);
    expect(money).toEqual([
      ['0.333333333333', '0.999999999999', '0.333333333333', '0.999999999999'],
      ['0.000000000001', '0.000001', '0.000000000000876544', '0.000000876544'],
    ]);
    expect(checkFocusCsv(toCsv(focusTable(rows)))).toEqual([]);
  });

  it('focusOptions: the account name defaults to its id', () => {
    expect(focusOptions({ FOCUS_BILLING_ACCOUNT_ID: 'acct-7', FOCUS_BILLING_ACCOUNT_NAME: undefined, FOCUS_PROVIDER_NAME: 'Svc' }, OPTS.now)).toEqual({
      billingAccountId: 'acct-7', billingAccountName: 'acct-7', providerName: 'Svc', now: OPTS.now,
    });
    expect(focusOptions({ FOCUS_BILLING_ACCOUNT_ID: 'acct-7', FOCUS_BILLING_ACCOUNT_NAME: 'Acme', FOCUS_PROVIDER_NAME: 'Svc' }, OPTS.now)).toEqual({
      billingAccountId: 'acct-7', billingAccountName: 'Acme', providerName: 'Svc', now: OPTS.now,
    });
  });
});
