// An independent check of a FOCUS 1.2 CSV file against the specification's rules (columns.ts holds the column
// definitions taken from the spec). Each rule cites the spec file it comes from. Written from the spec, not from
// Tallyhouse's exporter: numbers are compared as exact decimals (BigInt), dates parsed here, CSV parsed by
// csv-parse. Returns the violations, one line each (empty: the file conforms to every rule checked).
import { parse } from 'csv-parse/sync';
import {
  CHARGECATEGORY_VALUES,
  CHARGECLASS_VALUES,
  CHARGEFREQUENCY_VALUES,
  FOCUS_COLUMN_SPECS,
  PRICINGCATEGORY_VALUES,
  SERVICECATEGORY_VALUES,
  SERVICE_SUBCATEGORIES,
} from './columns.js';

type Row = Record<string, string>;

/** attributes/datetime_format.md: UTC, extended ISO 8601 'YYYY-MM-DDTHH:mm:ssZ'. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
/** attributes/numeric_format.md: an integer, a decimal or E notation; no '+', commas, symbols or units. */
const NUMBER = /^-?\d+(\.\d+)?([eE]-?\d+)?$/;
/** attributes/currency_format.md: ISO 4217 alphabetic codes (three upper-case letters) for national currencies. */
const CURRENCY = /^[A-Z]{3}$/;
/** attributes/column_handling.md: Pascal case, alphanumeric; custom columns prefixed `x_`. */
const PASCAL = /^[A-Z][A-Za-z0-9]*$/;
const CUSTOM = /^x_[A-Za-z0-9_]+$/;

/** An exact decimal: digits × 10^-scale (E notation expanded). */
function decimal(text: string): { digits: bigint; scale: number } {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE](-?\d+))?$/.exec(text);
  if (!m) throw new Error(`not a number: ${text}`);
  const frac = m[3] ?? '';
  let digits = BigInt(`${m[2]}${frac}`);
  let scale = frac.length - Number(m[4] ?? 0);
  if (scale < 0) {
    digits *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return { digits: m[1] ? -digits : digits, scale };
}
function sameValue(a: { digits: bigint; scale: number }, b: { digits: bigint; scale: number }): boolean {
  const s = Math.max(a.scale, b.scale);
  return a.digits * 10n ** BigInt(s - a.scale) === b.digits * 10n ** BigInt(s - b.scale);
}
function product(a: string, b: string) {
  const x = decimal(a);
  const y = decimal(b);
  return { digits: x.digits * y.digits, scale: x.scale + y.scale };
}

export function checkFocusCsv(csv: string): string[] {
  const problems: string[] = [];
  const records = parse(csv, { columns: false, skip_empty_lines: true, relax_quotes: false }) as string[][];
  if (records.length === 0) return ['the file is empty (no header)'];
  const [header, ...body] = records;
  const specs = new Map(FOCUS_COLUMN_SPECS.map((c) => [c.id, c]));

  // attributes/column_handling.md: FOCUS columns by their Column ID; anything else is a custom column with `x_`;
  // FOCUS columns first, custom columns after them, not intermixed (SHOULD: reported as well).
  for (const name of header) {
    if (!specs.has(name) && !CUSTOM.test(name)) problems.push(`column ${JSON.stringify(name)}: not a FOCUS 1.2 column and not prefixed x_ (column_handling.md)`);
    if (CUSTOM.test(name) && !PASCAL.test(name.slice(2))) problems.push(`column ${name}: custom column not in Pascal case after x_ (column_handling.md)`);
  }
  const firstCustom = header.findIndex((n) => n.startsWith('x_'));
  if (firstCustom >= 0 && header.slice(firstCustom).some((n) => specs.has(n))) problems.push('FOCUS columns after custom columns (column_handling.md)');
  if (new Set(header).size !== header.length) problems.push('a column appears twice');
  // Every column whose Feature level is Mandatory is present (columns/*.md, "MUST be present").
  for (const c of FOCUS_COLUMN_SPECS) {
    if (c.level === 'Mandatory' && !header.includes(c.id)) problems.push(`column ${c.id}: Mandatory, missing (${c.file})`);
  }

  const rows: Row[] = body.map((cells, i) => {
    if (cells.length !== header.length) problems.push(`row ${i + 1}: ${cells.length} cells for ${header.length} columns`);
    return Object.fromEntries(header.map((h, j) => [h, cells[j] ?? '']));
  });
  // null_handling.md: a null is an empty cell here; placeholders for null are not allowed.
  const isNull = (v: string | undefined) => v === undefined || v === '';
  const has = (col: string) => header.includes(col);

  rows.forEach((r, i) => {
    const at = `row ${i + 1}`;
    const bad = (col: string, what: string, file: string) => problems.push(`${at}: ${col} ${JSON.stringify(r[col])}: ${what} (${file})`);
    for (const name of header) {
      const spec = specs.get(name);
      if (!spec) continue;
      const v = r[name];
      // columns/*.md Content Constraints: "Allows nulls: False" → never null.
      if (isNull(v)) {
        if (!spec.allowsNulls) bad(name, 'null in a column that does not allow nulls', spec.file);
        continue;
      }
      if (['N/A', 'NULL', 'null', 'Not Applicable'].includes(v)) bad(name, 'a placeholder for null', 'null_handling.md');
      if (spec.type === 'Decimal' && !NUMBER.test(v)) bad(name, 'not a number in NumericFormat', 'numeric_format.md');
      if (spec.type === 'Date/Time' && !(DATE_TIME.test(v) && !Number.isNaN(Date.parse(v)))) bad(name, "not a UTC date/time 'YYYY-MM-DDTHH:mm:ssZ'", 'datetime_format.md');
      if (spec.type === 'JSON') {
        try {
          const parsed = JSON.parse(v) as unknown;
          if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) bad(name, 'not a JSON object', 'key_value_format.md');
        } catch {
          bad(name, 'not valid JSON', 'key_value_format.md');
        }
      }
    }
    // Allowed values.
    const allowed: Array<[string, readonly string[], string]> = [
      ['ChargeCategory', CHARGECATEGORY_VALUES, 'chargecategory.md'],
      ['ChargeClass', CHARGECLASS_VALUES, 'chargeclass.md'],
      ['ChargeFrequency', CHARGEFREQUENCY_VALUES, 'chargefrequency.md'],
      ['PricingCategory', PRICINGCATEGORY_VALUES, 'pricingcategory.md'],
      ['ServiceCategory', SERVICECATEGORY_VALUES, 'servicecategory.md'],
    ];
    for (const [col, values, file] of allowed) {
      if (has(col) && !isNull(r[col]) && !values.includes(r[col])) bad(col, `not one of ${values.join(', ')}`, file);
    }
    // servicesubcategory.md: one of the allowed values, with its one parent ServiceCategory.
    if (has('ServiceSubcategory') && !isNull(r.ServiceSubcategory)) {
      const pair = SERVICE_SUBCATEGORIES.find(([, s]) => s === r.ServiceSubcategory);
      if (!pair) bad('ServiceSubcategory', 'not an allowed value', 'servicesubcategory.md');
      else if (pair[0] !== r.ServiceCategory) bad('ServiceSubcategory', `belongs to ServiceCategory ${pair[0]}, not ${r.ServiceCategory}`, 'servicesubcategory.md');
    }
    // currency_format.md via billingcurrency.md / pricingcurrency.md.
    for (const col of ['BillingCurrency', 'PricingCurrency']) {
      if (has(col) && !isNull(r[col]) && !CURRENCY.test(r[col])) bad(col, 'not an ISO 4217 currency code', 'currency_format.md');
    }
    // chargeperiodstart.md / chargeperiodend.md: inclusive start, exclusive end: start before end; likewise the
    // billing period (billingperiodstart.md / billingperiodend.md).
    for (const [a, b, file] of [['ChargePeriodStart', 'ChargePeriodEnd', 'chargeperiodend.md'], ['BillingPeriodStart', 'BillingPeriodEnd', 'billingperiodend.md']] as const) {
      if (DATE_TIME.test(r[a] ?? '') && DATE_TIME.test(r[b] ?? '') && !(Date.parse(r[a]) < Date.parse(r[b]))) bad(b, `not after ${a} ${r[a]}`, file);
    }
    const category = r.ChargeCategory;
    const correction = r.ChargeClass === 'Correction';
    const usageOrPurchase = (category === 'Usage' || category === 'Purchase') && !correction;
    // Conditional nullability stated per column: null for Tax; not null for Usage/Purchase that are not corrections.
    const nullForTaxNotForUsage: Array<[string, string]> = [
      ['PricingQuantity', 'pricingquantity.md'],
      ['ListUnitPrice', 'listunitprice.md'],
      ['ContractedUnitPrice', 'contractedunitprice.md'],
      ['PricingCategory', 'pricingcategory.md'],
      ['SkuId', 'skuid.md'],
      ['SkuPriceId', 'skupriceid.md'],
    ];
    for (const [col, file] of nullForTaxNotForUsage) {
      if (!has(col)) continue;
      if (category === 'Tax' && !isNull(r[col])) bad(col, 'must be null when ChargeCategory is Tax', file);
      if (usageOrPurchase && isNull(r[col])) bad(col, 'must not be null when ChargeCategory is Usage or Purchase and ChargeClass is not Correction', file);
    }
    // pricingunit.md: null exactly when PricingQuantity is null.
    if (has('PricingUnit') && isNull(r.PricingUnit) !== isNull(r.PricingQuantity)) bad('PricingUnit', 'must be null exactly when PricingQuantity is null', 'pricingunit.md');
    // consumedquantity.md: null unless ChargeCategory is Usage; not null for Usage that is not a correction
    // (and not an unused commitment). consumedunit.md: null exactly when ConsumedQuantity is null.
    if (has('ConsumedQuantity')) {
      if (category !== 'Usage' && !isNull(r.ConsumedQuantity)) bad('ConsumedQuantity', 'must be null when ChargeCategory is not Usage', 'consumedquantity.md');
      if (category === 'Usage' && !correction && r.CommitmentDiscountStatus !== 'Unused' && isNull(r.ConsumedQuantity)) {
        bad('ConsumedQuantity', 'must not be null for Usage that is not a correction', 'consumedquantity.md');
      }
    }
    if (has('ConsumedUnit') && isNull(r.ConsumedUnit) !== isNull(r.ConsumedQuantity)) bad('ConsumedUnit', 'must be null exactly when ConsumedQuantity is null', 'consumedunit.md');
    // resourcetype.md: null when ResourceId is null, not null when it is not; resourcename.md: null when ResourceId is null.
    if (has('ResourceId') && has('ResourceType') && isNull(r.ResourceId) !== isNull(r.ResourceType)) bad('ResourceType', 'must be null exactly when ResourceId is null', 'resourcetype.md');
    if (has('ResourceId') && has('ResourceName') && isNull(r.ResourceId) && !isNull(r.ResourceName)) bad('ResourceName', 'must be null when ResourceId is null', 'resourcename.md');
    // skupricedetails.md: null when SkuPriceId is null.
    if (has('SkuPriceDetails') && isNull(r.SkuPriceId) && !isNull(r.SkuPriceDetails)) bad('SkuPriceDetails', 'must be null when SkuPriceId is null', 'skupricedetails.md');
    // listunitprice.md, contractedunitprice.md: non-negative when not null.
    for (const col of ['ListUnitPrice', 'ContractedUnitPrice']) {
      if (has(col) && NUMBER.test(r[col] ?? '') && decimal(r[col]).digits < 0n) bad(col, 'must be non-negative', `${col.toLowerCase()}.md`);
    }
    // listcost.md / contractedcost.md / pricingquantity.md: unit price × PricingQuantity matches the cost when
    // both are not null and ChargeClass is not Correction.
    if (!correction && NUMBER.test(r.PricingQuantity ?? '')) {
      for (const [price, cost, file] of [['ListUnitPrice', 'ListCost', 'listcost.md'], ['ContractedUnitPrice', 'ContractedCost', 'contractedcost.md']] as const) {
        if (!NUMBER.test(r[price] ?? '') || !NUMBER.test(r[cost] ?? '')) continue;
        if (!sameValue(product(r[price], r.PricingQuantity), decimal(r[cost]))) {
          bad(cost, `does not match ${price} ${r[price]} x PricingQuantity ${r.PricingQuantity}`, file);
        }
      }
    }
    // listcost.md, contractedcost.md, effectivecost.md: a charge unrelated to other charges (Credit) matches BilledCost.
    if (category === 'Credit') {
      for (const col of ['ListCost', 'ContractedCost', 'EffectiveCost']) {
        if (NUMBER.test(r[col] ?? '') && NUMBER.test(r.BilledCost ?? '') && !sameValue(decimal(r[col]), decimal(r.BilledCost))) bad(col, 'must match BilledCost for a Credit', `${col.toLowerCase()}.md`);
      }
    }
    // chargeclass.md: when not null, "Correction" (covered by the allowed values above).
  });
  return problems;
}
