// Issue 31: FOCUS money bugs an audit planted that no test caught: ContractedUnitPrice with the discount added
// instead of subtracted, and a derived ListUnitPrice (legacy rows delivered with a cost only) truncated instead of
// rounded. The FOCUS check compares List/Contracted costs with the row's own unit prices, and BilledCost with the
// finance report, so both slipped through. Here every figure is worked by hand from the seeded rows (focus.ts's
// header: list and contracted costs are unit price x quantity, exactly; a derived price is cost / quantity rounded
// half up to 12 places).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseCsv } from 'csv-parse/sync';
import { focusReport, focusTable } from '../../src/api/focus.js';
import { toCsv } from '../../src/api/http.js';
import type { Runtime } from '../../src/runtime.js';
import { usageBuckets } from '../../src/store/tables/usage-buckets.js';
import { modelUsageBuckets, type ModelUsageBucketRow } from '../../src/store/tables/model-usage.js';
import { decimalToScaled } from '../../src/values.js';
import { closeRuntime, openTestRuntime } from '../support/store.js';
import { usageDayRow } from '../support/rows.js';
import { checkFocusCsv } from '../support/focus/check.js';

const OPTS = { billingAccountId: 'acct-1', billingAccountName: 'Acme', providerName: 'Svc', now: new Date('2026-12-02T06:00:00Z') };
let rt: Runtime;

function modelDayRow(day: string, overrides: Partial<ModelUsageBucketRow>): ModelUsageBucketRow {
  return {
    timezone: 'UTC',
    timeframe: 'day',
    bucket: `${day} 00:00:00.000`,
    bucket_offset_minutes: 0,
    bucket_date: day,
    endpoint_id: 'svc-ai/flux-dev',
    unit: 'image',
    currency: 'USD',
    api_key_id: 'key-1',
    login_username: '',
    api_key_label: 'Production Key',
    price_key: '',
    unit_price: null,
    percent_discount: null,
    quantity: '1',
    cost_subtotal: null,
    cost_discount: null,
    cost_total: '0',
    platform_rows: 1,
    raw: '{}',
    version: 1,
    is_deleted: 0,
    collected_at: '2026-01-01 00:00:00.000',
    ...overrides,
  };
}

beforeAll(async () => {
  rt = await openTestRuntime();
  const serverless = [
    // 3600 s at 0.0005 list, 10 % off: list 1.8; contracted 0.0005 x 0.9 = 0.00045 a second, 1.62 in all.
    usageDayRow('2026-04-03', { app: 'acme/web', quantity: '3600', unit_price: '0.0005', percent_discount: '10', cost_subtotal: '1.8', cost_discount: '0.18', cost_total: '1.62' }),
  ];
  const models = [
    // 40 images at 0.025 list, 20 % off: list 1.0; contracted 0.025 x 0.8 = 0.02 an image, 0.8 in all.
    modelDayRow('2026-04-03', { price_key: '0.025|20', unit_price: '0.025', percent_discount: '20', quantity: '40', cost_subtotal: '1', cost_discount: '0.2', cost_total: '0.8' }),
    // Legacy shape (cost only): 2 USD for 3 images: 0.666666666666|666... rounds half up to 0.666666666667 (12
    // places; truncation gives ...666); list and contracted cost 3 x 0.666666666667 = 2.000000000001.
    modelDayRow('2026-04-03', { endpoint_id: 'svc-ai/recraft-v3', price_key: 'legacy', quantity: '3', cost_total: '2' }),
  ];
  const a = rt.writer.insert(usageBuckets, serverless);
  const b = rt.writer.insert(modelUsageBuckets, models);
  await rt.writer.flush();
  await Promise.all([a, b]);
});
afterAll(async () => {
  if (rt) await closeRuntime(rt);
});

/** Exact decimal text as an integer at 18 places, so "1.80" and "1.8" compare equal. */
const dec = (text: string) => decimalToScaled(text, 18);
const money = (r: Record<string, string>) =>
  Object.fromEntries(['ListUnitPrice', 'ListCost', 'ContractedUnitPrice', 'ContractedCost', 'BilledCost', 'EffectiveCost'].map((c) => [c, dec(r[c])]));
const expected = (m: Record<string, string>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, dec(v)]));

describe('FOCUS money, worked by hand', () => {
  it('the discount comes off the contracted price; a derived list price is rounded half up, not truncated', async () => {
    const text = toCsv(focusTable(await focusReport(rt.store, '2026-04', OPTS)));
    expect(checkFocusCsv(text)).toEqual([]);
    const rows = parseCsv(text, { columns: true }) as Array<Record<string, string>>;
    const by = (id: string) => rows.find((r) => r.ResourceId === id)!;
    expect(rows).toHaveLength(3);
    expect(money(by('acme/web'))).toEqual(
      expected({ ListUnitPrice: '0.0005', ListCost: '1.8', ContractedUnitPrice: '0.00045', ContractedCost: '1.62', BilledCost: '1.62', EffectiveCost: '1.62' }),
    );
    expect(money(by('svc-ai/flux-dev'))).toEqual(
      expected({ ListUnitPrice: '0.025', ListCost: '1', ContractedUnitPrice: '0.02', ContractedCost: '0.8', BilledCost: '0.8', EffectiveCost: '0.8' }),
    );
    expect(money(by('svc-ai/recraft-v3'))).toEqual(
      expected({
        ListUnitPrice: '0.666666666667',
        ListCost: '2.000000000001',
        ContractedUnitPrice: '0.666666666667',
        ContractedCost: '2.000000000001',
        BilledCost: '2',
        EffectiveCost: '2',
      }),
    );
    expect(by('svc-ai/recraft-v3').x_UnitPriceDerived).toBe('true');
    expect(by('svc-ai/flux-dev').x_PercentDiscount).not.toBe('');
  });
});
