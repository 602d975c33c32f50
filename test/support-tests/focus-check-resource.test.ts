// The FOCUS checker's resource rules (test/support/focus/check.ts, from resourcetype.md and resourcename.md of
// FOCUS_Spec v1.2): ResourceType null exactly when ResourceId is null; ResourceName null when ResourceId is null.
// Rows written by hand from the spec.
import { describe, expect, it } from 'vitest';
import { checkFocusCsv } from '../support/focus/check.js';

const HEADER = [
  'BilledCost', 'BillingAccountId', 'BillingAccountName', 'BillingCurrency', 'BillingPeriodEnd', 'BillingPeriodStart',
  'ChargeCategory', 'ChargeClass', 'ChargeDescription', 'ChargePeriodEnd', 'ChargePeriodStart', 'ConsumedQuantity',
  'ConsumedUnit', 'ContractedCost', 'ContractedUnitPrice', 'EffectiveCost', 'InvoiceIssuerName', 'ListCost',
  'ListUnitPrice', 'PricingCategory', 'PricingQuantity', 'PricingUnit', 'ProviderName', 'PublisherName',
  'ResourceId', 'ResourceName', 'ResourceType', 'ServiceCategory', 'ServiceName', 'ServiceSubcategory', 'SkuId', 'SkuPriceId',
];
// 3600 seconds at 0.0005: 1.8.
const USAGE: Record<string, string> = {
  BilledCost: '1.8', BillingAccountId: 'acct-1', BillingAccountName: 'Acme', BillingCurrency: 'USD',
  BillingPeriodEnd: '2026-11-01T00:00:00Z', BillingPeriodStart: '2026-10-01T00:00:00Z', ChargeCategory: 'Usage',
  ChargeClass: '', ChargeDescription: 'GPU time', ChargePeriodEnd: '2026-10-02T00:00:00Z',
  ChargePeriodStart: '2026-10-01T00:00:00Z', ConsumedQuantity: '3600', ConsumedUnit: 'Seconds', ContractedCost: '1.8',
  ContractedUnitPrice: '0.0005', EffectiveCost: '1.8', InvoiceIssuerName: 'Svc', ListCost: '1.8', ListUnitPrice: '0.0005',
  PricingCategory: 'Standard', PricingQuantity: '3600', PricingUnit: 'Seconds', ProviderName: 'Svc', PublisherName: 'Svc',
  ResourceId: 'acme/web', ResourceName: 'acme/web', ResourceType: 'Serverless App',
  ServiceCategory: 'Compute', ServiceName: 'Serverless', ServiceSubcategory: 'Serverless Compute', SkuId: 'gpu', SkuPriceId: 'gpu-std',
};
const csv = (rows: Array<Record<string, string>>) => [HEADER.join(','), ...rows.map((r) => HEADER.map((h) => r[h] ?? '').join(','))].join('\r\n');

describe('the FOCUS 1.2 checker: resource columns', () => {
  it('accepts a row with a resource and a row related to none (all three null)', () => {
    expect(checkFocusCsv(csv([USAGE, { ...USAGE, ResourceId: '', ResourceName: '', ResourceType: '' }]))).toEqual([]);
  });

  it.each([
    ['a ResourceType without a ResourceId', { ResourceId: '', ResourceName: '' }, /ResourceType "Serverless App": must be null exactly when ResourceId is null \(resourcetype.md\)/],
    ['a ResourceId without a ResourceType', { ResourceType: '' }, /ResourceType "": must be null exactly when ResourceId is null/],
    ['a ResourceName without a ResourceId', { ResourceId: '', ResourceType: '' }, /ResourceName "acme\/web": must be null when ResourceId is null \(resourcename.md\)/],
  ])('finds %s', (_name, change, expected) => {
    const problems = checkFocusCsv(csv([{ ...USAGE, ...change }]));
    expect(problems.some((p) => expected.test(p)), problems.join('\n')).toBe(true);
  });
});
