// The FOCUS checker (test/support/focus/check.ts) itself: a file written by hand from the spec conforms, and each
// mutation breaks the rule it names. So a clean result on Tallyhouse's export means something.
import { describe, expect, it } from 'vitest';
import { checkFocusCsv } from '../support/focus/check.js';

const HEADER = [
  'BilledCost', 'BillingAccountId', 'BillingAccountName', 'BillingCurrency', 'BillingPeriodEnd', 'BillingPeriodStart',
  'ChargeCategory', 'ChargeClass', 'ChargeDescription', 'ChargePeriodEnd', 'ChargePeriodStart', 'ConsumedQuantity',
  'ConsumedUnit', 'ContractedCost', 'ContractedUnitPrice', 'EffectiveCost', 'InvoiceIssuerName', 'ListCost',
  'ListUnitPrice', 'PricingCategory', 'PricingQuantity', 'PricingUnit', 'ProviderName', 'PublisherName',
  'ServiceCategory', 'ServiceName', 'ServiceSubcategory', 'SkuId', 'SkuPriceId', 'x_Team',
];
// A usage charge: 3600 seconds at 0.0005 list, 10 % negotiated: contracted 0.00045; list 1.8, contracted 1.62.
const USAGE: Record<string, string> = {
  BilledCost: '1.62', BillingAccountId: 'acct-1', BillingAccountName: 'Acme', BillingCurrency: 'USD',
  BillingPeriodEnd: '2026-11-01T00:00:00Z', BillingPeriodStart: '2026-10-01T00:00:00Z', ChargeCategory: 'Usage',
  ChargeClass: '', ChargeDescription: 'GPU time', ChargePeriodEnd: '2026-10-02T00:00:00Z',
  ChargePeriodStart: '2026-10-01T00:00:00Z', ConsumedQuantity: '3600', ConsumedUnit: 'Seconds', ContractedCost: '1.62',
  ContractedUnitPrice: '0.00045', EffectiveCost: '1.62', InvoiceIssuerName: 'Svc', ListCost: '1.8', ListUnitPrice: '0.0005',
  PricingCategory: 'Standard', PricingQuantity: '3600', PricingUnit: 'Seconds', ProviderName: 'Svc', PublisherName: 'Svc',
  ServiceCategory: 'Compute', ServiceName: 'Serverless', ServiceSubcategory: 'Serverless Compute', SkuId: 'gpu',
  SkuPriceId: 'gpu-std', x_Team: 'ml',
};
const csv = (rows: Array<Record<string, string>>, header = HEADER) =>
  [header.join(','), ...rows.map((r) => header.map((h) => (/[",]/.test(r[h] ?? '') ? `"${(r[h] ?? '').replace(/"/g, '""')}"` : (r[h] ?? ''))).join(','))].join('\r\n');

describe('the FOCUS 1.2 checker', () => {
  it('accepts a conforming file written by hand from the spec', () => {
    expect(checkFocusCsv(csv([USAGE, { ...USAGE, ChargePeriodStart: '2026-10-02T00:00:00Z', ChargePeriodEnd: '2026-10-03T00:00:00Z' }]))).toEqual([]);
  });

  it.each([
    ['a missing Mandatory column', csv([USAGE], HEADER.filter((h) => h !== 'EffectiveCost')), /EffectiveCost: Mandatory, missing/],
    ['a custom column without x_', csv([{ ...USAGE, Team: 'ml' }], [...HEADER, 'Team']), /"Team": not a FOCUS 1.2 column and not prefixed x_/],
    ['a date not in UTC Z form', csv([{ ...USAGE, ChargePeriodStart: '2026-10-01 00:00:00' }]), /ChargePeriodStart .* not a UTC date\/time/],
    ['a currency that is not ISO 4217', csv([{ ...USAGE, BillingCurrency: 'usd' }]), /BillingCurrency "usd": not an ISO 4217/],
    ['a number with a unit', csv([{ ...USAGE, BilledCost: '1.62 USD' }]), /BilledCost "1.62 USD": not a number/],
    ['null where nulls are not allowed', csv([{ ...USAGE, ServiceName: '' }]), /ServiceName "": null in a column that does not allow nulls/],
    ['a value outside the allowed ones', csv([{ ...USAGE, ChargeCategory: 'Compute' }]), /ChargeCategory "Compute": not one of Usage/],
    ['a subcategory of another category', csv([{ ...USAGE, ServiceSubcategory: 'Generative AI' }]), /belongs to ServiceCategory AI and Machine Learning, not Compute/],
    ['ListCost that is not ListUnitPrice x PricingQuantity', csv([{ ...USAGE, ListCost: '1.81' }]), /ListCost "1.81": does not match ListUnitPrice/],
    ['ContractedCost that is not ContractedUnitPrice x PricingQuantity', csv([{ ...USAGE, ContractedCost: '1.6' }]), /ContractedCost "1.6": does not match ContractedUnitPrice/],
    ['a Usage row without a SkuId', csv([{ ...USAGE, SkuId: '' }]), /SkuId "": must not be null when ChargeCategory is Usage/],
    ['a PricingUnit without a PricingQuantity', csv([{ ...USAGE, PricingQuantity: '' }]), /PricingUnit .* must be null exactly when PricingQuantity is null/],
    ['a charge period ending before it starts', csv([{ ...USAGE, ChargePeriodEnd: '2026-09-30T00:00:00Z' }]), /ChargePeriodEnd .* not after ChargePeriodStart/],
    ['a ChargeClass other than Correction', csv([{ ...USAGE, ChargeClass: 'Refund' }]), /ChargeClass "Refund": not one of Correction/],
  ])('finds %s', (_name, file, expected) => {
    const problems = checkFocusCsv(file);
    expect(problems.some((p) => expected.test(p)), problems.join('\n')).toBe(true);
  });
});
