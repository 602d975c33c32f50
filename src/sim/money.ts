// Money is exact: integer nano-USD everywhere, formatted as an exact decimal only when served.

export const NANOS_PER_USD = 1_000_000_000n;

/** A JSON number whose text is given verbatim (so 0.000575 is printed exactly, never 0.0005750000000000001). */
export class RawJson {
  constructor(readonly text: string) {}
}

/** Formats integer nanos as the exact decimal number of USD, e.g. 575000 → "0.000575", -5 → "-0.000000005". */
export function formatNanos(nanos: bigint | number): string {
  let n = typeof nanos === 'bigint' ? nanos : BigInt(nanos);
  const negative = n < 0n;
  if (negative) n = -n;
  const whole = n / NANOS_PER_USD;
  const frac = (n % NANOS_PER_USD).toString().padStart(9, '0').replace(/0+$/, '');
  return (negative ? '-' : '') + whole.toString() + (frac ? '.' + frac : '');
}

/** Formats an integer count of thousandths as a decimal with at most 3 places ("1.5", "12", "0.007"). */
export function formatMilli(milli: number): string {
  const negative = milli < 0;
  const n = Math.abs(milli);
  const whole = Math.floor(n / 1000);
  const frac = String(n % 1000).padStart(3, '0').replace(/0+$/, '');
  return (negative ? '-' : '') + whole + (frac ? '.' + frac : '');
}

/** Percent given as a decimal like 12.5 → integer thousandths of a percent (12500), exact for ≤ 3 places. */
export function percentToMilli(percent: number): number {
  return Math.round(percent * 1000);
}

export interface RowCost {
  subtotalNanos: bigint;
  discountNanos: bigint;
  totalNanos: bigint;
}

/**
 * cost_subtotal = quantity × price; cost_discount = round-half-up(subtotal × pct / 100); total = subtotal − discount.
 * BigInt because subtotal × milli-percent exceeds 2^53 for large rows.
 */
export function rowCost(quantitySeconds: number, unitPriceNanos: number, percentDiscountMilli: number | null): RowCost {
  const subtotal = BigInt(quantitySeconds) * BigInt(unitPriceNanos);
  let discount = 0n;
  if (percentDiscountMilli !== null && percentDiscountMilli !== 0) {
    // pct/100 with pct in thousandths → divide by 100_000; adding half the divisor rounds half up (values ≥ 0).
    discount = (subtotal * BigInt(percentDiscountMilli) + 50_000n) / 100_000n;
  }
  return { subtotalNanos: subtotal, discountNanos: discount, totalNanos: subtotal - discount };
}

/** Serialises a value to JSON, printing RawJson values verbatim as numbers. */
export function toJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (value instanceof RawJson) return value.text;
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      return value.toString();
    case 'object': {
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) out += (i ? ',' : '') + toJson(value[i]);
        return out + ']';
      }
      let out = '{';
      let first = true;
      for (const key of Object.keys(value as object)) {
        const v = (value as Record<string, unknown>)[key];
        if (v === undefined) continue;
        out += (first ? '' : ',') + JSON.stringify(key) + ':' + toJson(v);
        first = false;
      }
      return out + '}';
    }
    default:
      return 'null';
  }
}
