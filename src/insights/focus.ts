// The FOCUS 1.2 cost-and-usage export of a month (FinOps Foundation, FOCUS_Spec tag v1.2): both product lines,
// one row per charge period (a UTC day), product, resource (app or model endpoint), SKU (machine type or model
// unit), price and currency. Every figure is exact decimal text: costs as delivered, list and contracted costs
// as the product of their unit price and the quantity (the spec's cross-column rules hold exactly).
// This module is the pure half (issue 43.1): the store's daily charges and each day's finality in, FOCUS rows out
// (no I/O, no store, no clock: the caller passes `now`). src/api/focus.ts reads the usage collected in UTC (FOCUS
// date/times are UTC) and answers why for a month with none.
import { DateTime } from 'luxon';
import { decimalToScaled, scaledToDecimal } from '../values.js';
import type { Config } from '../config.js';

/** The FOCUS columns Tallyhouse fills (Mandatory, and the Conditional/Recommended ones that apply), then ours. */
export const FOCUS_COLUMNS = [
  'BilledCost',
  'BillingAccountId',
  'BillingAccountName',
  'BillingCurrency',
  'BillingPeriodEnd',
  'BillingPeriodStart',
  'ChargeCategory',
  'ChargeClass',
  'ChargeDescription',
  'ChargeFrequency',
  'ChargePeriodEnd',
  'ChargePeriodStart',
  'ConsumedQuantity',
  'ConsumedUnit',
  'ContractedCost',
  'ContractedUnitPrice',
  'EffectiveCost',
  'InvoiceIssuerName',
  'ListCost',
  'ListUnitPrice',
  'PricingCategory',
  'PricingQuantity',
  'PricingUnit',
  'ProviderName',
  'PublisherName',
  'ResourceId',
  'ResourceName',
  'ResourceType',
  'ServiceCategory',
  'ServiceName',
  'ServiceSubcategory',
  'SkuId',
  'SkuMeter',
  'SkuPriceDetails',
  'SkuPriceId',
  'x_Product',
  'x_MachineType',
  'x_IsSurge',
  'x_ApiKeyId',
  'x_ApiKeyLabel',
  'x_LoginUsername',
  'x_PercentDiscount',
  'x_UnitPriceDerived',
  'x_Final',
] as const;
export type FocusColumn = (typeof FOCUS_COLUMNS)[number];
export type FocusRow = Record<FocusColumn, string | null>;

export interface FocusOptions {
  /** BillingAccountId / BillingAccountName: the platform account the invoice is for. */
  billingAccountId: string;
  billingAccountName: string;
  /** ProviderName, PublisherName, InvoiceIssuerName. */
  providerName: string;
  /** LATE_BILLING_WINDOW_HOURS, for x_Final (src/insights/finality.ts); 48 when not given. */
  lateBillingWindowHours?: number;
  /** The service clock (Runtime.now), for x_Final: a day turns final when its late-billing window has passed. */
  now: Date;
}

export function focusOptions(
  config: Pick<Config, 'FOCUS_BILLING_ACCOUNT_ID' | 'FOCUS_BILLING_ACCOUNT_NAME' | 'FOCUS_PROVIDER_NAME'> & Partial<Pick<Config, 'LATE_BILLING_WINDOW_HOURS'>>,
  now: Date,
): FocusOptions {
  return {
    billingAccountId: config.FOCUS_BILLING_ACCOUNT_ID,
    billingAccountName: config.FOCUS_BILLING_ACCOUNT_NAME ?? config.FOCUS_BILLING_ACCOUNT_ID,
    providerName: config.FOCUS_PROVIDER_NAME,
    lateBillingWindowHours: config.LATE_BILLING_WINDOW_HOURS,
    now,
  };
}

export class FocusNoDataError extends Error {
  constructor(month: string) {
    super(
      `no usage is collected in UTC for ${month} (a FOCUS file is in UTC days); collect it with: ` +
        `tallyhouse collect usage --timezone UTC ... and tallyhouse collect models --timezone UTC ..., or add UTC to TIMEZONES`,
    );
    this.name = 'FocusNoDataError';
  }
}

const MONEY_SCALE = 12;
const QUANTITY_SCALE = 9;
const PERCENT_SCALE = 4;

/** Exact a × b of two decimal texts. */
export function times(a: string, aScale: number, b: string, bScale: number): string {
  return scaledToDecimal(decimalToScaled(a, aScale) * decimalToScaled(b, bScale), aScale + bScale);
}

/** unit price × (100 − percent) / 100, exactly (percent null: the price itself). */
export function contracted(unitPrice: string, percent: string | null): string {
  if (percent === null) return unitPrice;
  const factor = 100n * 10n ** BigInt(PERCENT_SCALE) - decimalToScaled(percent, PERCENT_SCALE);
  return scaledToDecimal(decimalToScaled(unitPrice, MONEY_SCALE) * factor, MONEY_SCALE + PERCENT_SCALE + 2);
}

/** cost / quantity rounded half up to 12 places: the unit price of a row delivered without one (legacy shape). */
export function derivedUnitPrice(cost: string, quantity: string): string {
  const c = decimalToScaled(cost, MONEY_SCALE) * 10n ** BigInt(QUANTITY_SCALE);
  const q = decimalToScaled(quantity, QUANTITY_SCALE);
  if (q === 0n) return '0';
  // Half away from zero on the magnitude, the sign put back after: a credit rounds as its charge does (BigInt
  // division truncates toward zero, so rounding the signed quotient cut -2/3 to -0.666666666666).
  const a = c < 0n ? -c : c;
  const b = q < 0n ? -q : q;
  const magnitude = a / b + ((a % b) * 2n >= b ? 1n : 0n);
  return scaledToDecimal((c < 0n) !== (q < 0n) ? -magnitude : magnitude, MONEY_SCALE);
}

/** A model unit as FOCUS's UnitFormat writes count units: capitalised plural ("image" → "Images"). */
export function focusUnit(unit: string): string {
  const word = unit.charAt(0).toUpperCase() + unit.slice(1);
  return word.endsWith('s') ? word : `${word}s`;
}

const iso = (d: DateTime) => d.toUTC().toFormat("yyyy-MM-dd'T'HH:mm:ss'Z'");

/** The UTC month (YYYY-MM) of a FOCUS file: its first instant, the next month's, and its days [from, to). */
export function focusMonth(month: string): { start: DateTime; end: DateTime; range: { from: string; to: string } } {
  const start = DateTime.fromFormat(month, 'yyyy-MM', { zone: 'utc' });
  if (!start.isValid) throw new Error(`month must be YYYY-MM, got ${JSON.stringify(month)}`);
  const end = start.plus({ months: 1 });
  return { start, end, range: { from: start.toISODate()!, to: end.toISODate()! } };
}

/** A day's serverless charge (per app, machine type, surge and price), as the store reads it. */
export interface FocusServerlessCharge {
  day: string;
  app: string;
  machine_type: string;
  is_surge: boolean;
  currency: string;
  unit_price: string;
  percent_discount: string | null;
  quantity: string;
  cost: string;
}

/** A day's model API charge (per endpoint, unit, key and price), as the store reads it. */
export interface FocusModelCharge {
  day: string;
  endpoint_id: string;
  unit: string;
  currency: string;
  api_key_id: string;
  login_username: string;
  api_key_label: string;
  price_key: string;
  unit_price: string | null;
  percent_discount: string | null;
  quantity: string;
  cost: string;
}

/**
 * The FOCUS rows of a month (YYYY-MM, UTC), serverless first, then model APIs. `finalDays`: per product, whether
 * each day (YYYY-MM-DD) can no longer change (x_Final; a day missing is not final).
 */
export function focusRows(q: {
  month: string;
  serverless: readonly FocusServerlessCharge[];
  models: readonly FocusModelCharge[];
  finalDays: Record<'serverless' | 'model_api', ReadonlyMap<string, boolean>>;
  opts: Omit<FocusOptions, 'now' | 'lateBillingWindowHours'>;
}): FocusRow[] {
  const { serverless, models, finalDays, opts } = q;
  const { start, end } = focusMonth(q.month);
  const finalText = (product: 'serverless' | 'model_api', day: string) => (finalDays[product].get(day) ? 'true' : 'false');

  const common = (day: string, currency: string) => {
    const chargeStart = DateTime.fromISO(day, { zone: 'utc' });
    return {
      BillingAccountId: opts.billingAccountId,
      BillingAccountName: opts.billingAccountName,
      BillingCurrency: currency,
      BillingPeriodStart: iso(start),
      BillingPeriodEnd: iso(end),
      ChargeCategory: 'Usage',
      ChargeClass: null,
      ChargeFrequency: 'Usage-Based',
      ChargePeriodStart: iso(chargeStart),
      ChargePeriodEnd: iso(chargeStart.plus({ days: 1 })),
      InvoiceIssuerName: opts.providerName,
      ProviderName: opts.providerName,
      PublisherName: opts.providerName,
      SkuPriceDetails: null,
    };
  };
  const money = (unitPrice: string, percent: string | null, quantity: string, cost: string) => {
    const contractedPrice = contracted(unitPrice, percent);
    return {
      BilledCost: cost,
      EffectiveCost: cost,
      ListUnitPrice: unitPrice,
      ListCost: times(unitPrice, MONEY_SCALE, quantity, QUANTITY_SCALE),
      ContractedUnitPrice: contractedPrice,
      ContractedCost: times(contractedPrice, MONEY_SCALE + PERCENT_SCALE + 2, quantity, QUANTITY_SCALE),
      ConsumedQuantity: quantity,
      PricingQuantity: quantity,
    };
  };

  const rows: FocusRow[] = [];
  for (const r of serverless) {
    const sku = `serverless/${r.machine_type}`;
    // Usage the platform reports without an app (its `app` is null) is related to no resource: ResourceId null,
    // and with it ResourceName and ResourceType (resourceid.md, resourcename.md, resourcetype.md).
    const app = r.app === '' ? null : r.app;
    rows.push({
      ...common(r.day, r.currency),
      ...money(r.unit_price, r.percent_discount, r.quantity, r.cost),
      ChargeDescription: `${r.machine_type} machine time ${app === null ? 'not attributed to an app' : `of app ${app}`}${r.is_surge ? ' at surge price' : ''}`,
      ConsumedUnit: 'Seconds',
      PricingUnit: 'Seconds',
      PricingCategory: r.is_surge ? 'Dynamic' : 'Standard',
      ResourceId: app,
      ResourceName: app,
      ResourceType: app === null ? null : 'Serverless App',
      ServiceCategory: 'Compute',
      ServiceSubcategory: 'Serverless Compute',
      ServiceName: 'Serverless',
      SkuId: sku,
      SkuMeter: 'Machine Time',
      SkuPriceId: `${sku}/${r.is_surge ? 'surge' : 'standard'}/${r.unit_price}`,
      x_Product: 'serverless',
      x_MachineType: r.machine_type,
      x_IsSurge: r.is_surge ? 'true' : 'false',
      x_ApiKeyId: null,
      x_ApiKeyLabel: null,
      x_LoginUsername: null,
      x_PercentDiscount: r.percent_discount,
      x_UnitPriceDerived: 'false',
      x_Final: finalText('serverless', r.day),
    });
  }
  for (const r of models) {
    const legacy = r.price_key === 'legacy' || r.unit_price === null;
    const unitPrice = legacy ? derivedUnitPrice(r.cost, r.quantity) : r.unit_price!;
    const sku = `model_api/${r.endpoint_id}/${r.unit}`;
    const unit = focusUnit(r.unit);
    rows.push({
      ...common(r.day, r.currency),
      ...money(unitPrice, legacy ? null : r.percent_discount, r.quantity, r.cost),
      ChargeDescription: `${r.endpoint_id}: ${r.quantity} ${unit.toLowerCase()} (${r.api_key_label || r.api_key_id || r.login_username || 'unknown key'})`,
      ConsumedUnit: unit,
      PricingUnit: unit,
      PricingCategory: 'Standard',
      ResourceId: r.endpoint_id,
      ResourceName: r.endpoint_id,
      ResourceType: 'Model Endpoint',
      ServiceCategory: 'AI and Machine Learning',
      ServiceSubcategory: 'Generative AI',
      ServiceName: 'Model APIs',
      SkuId: sku,
      SkuMeter: 'Model Output',
      SkuPriceId: `${sku}/${unitPrice}`,
      x_Product: 'model_api',
      x_MachineType: null,
      x_IsSurge: null,
      x_ApiKeyId: r.api_key_id || null,
      x_ApiKeyLabel: r.api_key_label || null,
      x_LoginUsername: r.login_username || null,
      x_PercentDiscount: legacy ? null : r.percent_discount,
      x_UnitPriceDerived: legacy ? 'true' : 'false',
      x_Final: finalText('model_api', r.day),
    });
  }
  return rows;
}
