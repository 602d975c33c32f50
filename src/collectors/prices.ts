import { readFile } from 'node:fs/promises';
import { DateTime } from 'luxon';
import { z } from 'zod';
import type { Runtime } from '../runtime.js';
import { storedUnitPrices, unitPrices, type UnitPriceRow } from '../store/tables/unit-prices.js';
import { decimalToScaled, HAS_ZONE, ISO_DATE, nextVersionMs, scaledToDecimal, toDateTime64, toDecimalString } from '../values.js';

// PRICES_FILE: the price per billable unit of each endpoint, as a history.
//
//   [{ "endpoint_id": "acme/app-1", "unit_price": "0.0004", "currency": "USD",
//      "effective_from": "2026-11-10T00:00:00Z" }, ...]
//
// `unit_price` is a decimal string (or a JSON number) with at most 12 decimals; `currency` an ISO 4217 code, one
// per endpoint; `effective_from` an ISO 8601 datetime with `Z` or an offset, or a date (midnight UTC). A price
// applies to the requests that ended at or after its effective_from, until the endpoint's next entry.
//
// The file is read at the start of every requests run and merged into unit_prices: new entries are added,
// an entry whose price changed under the same (endpoint_id, effective_from) is corrected, an entry missing from
// the file is kept (see sql/008_create_unit_prices.sql). Nothing is written when nothing changed.

/** Digits the unit_prices.unit_price column keeps (Decimal(38, 12)). */
export const UNIT_PRICE_SCALE = 12;

const ENDPOINT_ID = /^[^/\s]+\/[^/\s]+(\/\S+)?$/;

const unitPrice = z.union([z.string(), z.number()]).transform((value, ctx) => {
  let text: string;
  try {
    text = toDecimalString(value);
    if (text.startsWith('-')) throw new Error('negative');
    // Canonical text with every digit the column keeps; throws on more than 12 decimals.
    text = scaledToDecimal(decimalToScaled(text, UNIT_PRICE_SCALE), UNIT_PRICE_SCALE);
  } catch {
    ctx.addIssue({
      code: 'custom',
      message: `expected a decimal number >= 0 with at most ${UNIT_PRICE_SCALE} decimals, such as "0.0004"; got ${JSON.stringify(value)}`,
    });
    return z.NEVER;
  }
  return text;
});

const effectiveFrom = z.string().transform((value, ctx) => {
  const dt = ISO_DATE.test(value)
    ? DateTime.fromISO(value, { zone: 'utc' })
    : HAS_ZONE.test(value)
      ? DateTime.fromISO(value, { setZone: true })
      : DateTime.invalid('no zone');
  if (!dt.isValid) {
    ctx.addIssue({
      code: 'custom',
      message: `expected an ISO 8601 datetime with Z or an offset (2026-11-10T00:00:00Z) or a date (2026-11-10, midnight UTC); got ${JSON.stringify(value)}`,
    });
    return z.NEVER;
  }
  return toDateTime64(dt.toJSDate());
});

/** One entry of PRICES_FILE. Unknown keys are refused: in a hand-written file they are typos. */
export const PriceEntry = z.strictObject({
  endpoint_id: z.string().regex(ENDPOINT_ID, 'expected an endpoint id owner/app or owner/app/route'),
  unit_price: unitPrice,
  currency: z.string().regex(/^[A-Z]{3}$/, 'expected an ISO 4217 currency code in capitals, such as USD'),
  effective_from: effectiveFrom,
});
/** effective_from is DateTime64(3) UTC text, unit_price canonical decimal text. */
export type PriceEntry = z.output<typeof PriceEntry>;

export class PricesFileError extends Error {
  constructor(readonly source: string, detail: string) {
    super(`PRICES_FILE ${source}: ${detail}`);
    this.name = 'PricesFileError';
  }
}

function describeEntry(index: number, raw: unknown): string {
  const id = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>).endpoint_id : undefined;
  return `entry ${index + 1}${typeof id === 'string' ? ` (${id})` : ''}`;
}

/**
 * Parses and validates the text of a prices file. Throws a PricesFileError naming the entry (1-based, with its
 * endpoint id) and the field of the first problem; also refuses two entries for the same endpoint and instant,
 * and two currencies for one endpoint.
 */
export function parsePrices(text: string, source: string): PriceEntry[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new PricesFileError(source, `not valid JSON (${(err as Error).message})`);
  }
  if (!Array.isArray(json)) throw new PricesFileError(source, 'expected a JSON array of price entries');
  const entries: PriceEntry[] = [];
  json.forEach((raw, index) => {
    const parsed = PriceEntry.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue.path.length > 0 ? `field ${issue.path.join('.')}` : 'the entry';
      const what = issue.code === 'unrecognized_keys' ? `unknown field(s) ${issue.keys.join(', ')}` : issue.message;
      throw new PricesFileError(source, `${describeEntry(index, raw)}, ${field}: ${what}`);
    }
    entries.push(parsed.data);
  });
  const seen = new Map<string, number>();
  const currencies = new Map<string, { currency: string; index: number }>();
  entries.forEach((e, index) => {
    const key = `${e.endpoint_id}|${e.effective_from}`;
    const earlier = seen.get(key);
    if (earlier !== undefined) {
      throw new PricesFileError(
        source,
        `${describeEntry(index, e)}, field effective_from: entry ${earlier + 1} already prices ${e.endpoint_id} from ${e.effective_from} UTC`,
      );
    }
    seen.set(key, index);
    const c = currencies.get(e.endpoint_id);
    if (c && c.currency !== e.currency) {
      throw new PricesFileError(
        source,
        `${describeEntry(index, e)}, field currency: ${e.currency}, but entry ${c.index + 1} prices ${e.endpoint_id} in ${c.currency} (one currency per endpoint)`,
      );
    }
    if (!c) currencies.set(e.endpoint_id, { currency: e.currency, index });
  });
  return entries;
}

/** Reads and validates PRICES_FILE; a missing or unreadable file is a PricesFileError too. */
export async function readPricesFile(path: string): Promise<PriceEntry[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new PricesFileError(path, `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  return parsePrices(text, path);
}

export interface PriceSyncResult {
  added: number;
  corrected: number;
  unchanged: number;
  /** Stored entries the file no longer lists: kept, so past requests keep their price. */
  kept: number;
}

/**
 * Merges validated entries into unit_prices: writes only the new and the corrected ones (resolves once they
 * are committed). Refuses, before writing anything, an entry whose currency differs from the endpoint's other
 * stored entries.
 */
export async function syncUnitPrices(rt: Pick<Runtime, 'store' | 'writer'>, entries: PriceEntry[], source: string): Promise<PriceSyncResult> {
  const stored = await storedUnitPrices(rt.store, {});
  const storedByKey = new Map(stored.map((s) => [`${s.endpoint_id}|${s.effective_from}`, s]));
  const fileKeys = new Set(entries.map((e) => `${e.endpoint_id}|${e.effective_from}`));

  // One currency per endpoint across the whole history that will be in effect after this load.
  const currencyOf = new Map(entries.map((e) => [e.endpoint_id, e.currency]));
  for (const s of stored) {
    if (fileKeys.has(`${s.endpoint_id}|${s.effective_from}`)) continue;
    const c = currencyOf.get(s.endpoint_id);
    if (c !== undefined && c !== s.currency) {
      throw new PricesFileError(
        source,
        `${s.endpoint_id} is priced in ${c}, but its stored price from ${s.effective_from} UTC (no longer in the file) is in ${s.currency}; one currency per endpoint`,
      );
    }
  }

  const version = nextVersionMs();
  const loadedAt = toDateTime64(version);
  const rows: UnitPriceRow[] = [];
  let added = 0;
  let corrected = 0;
  for (const e of entries) {
    const s = storedByKey.get(`${e.endpoint_id}|${e.effective_from}`);
    const same =
      s !== undefined &&
      s.currency === e.currency &&
      decimalToScaled(s.unit_price, UNIT_PRICE_SCALE) === decimalToScaled(e.unit_price, UNIT_PRICE_SCALE);
    if (same) continue;
    if (s === undefined) added++;
    else corrected++;
    rows.push({ ...e, source, version, loaded_at: loadedAt });
  }
  if (rows.length > 0) {
    const done = rt.writer.insert(unitPrices, rows);
    await rt.writer.flush(unitPrices);
    const result = await done;
    if (result.rejected > 0) throw new PricesFileError(source, `${result.rejected} price entries were refused by the store (see ingest_rejects)`);
  }
  const kept = stored.filter((s) => !fileKeys.has(`${s.endpoint_id}|${s.effective_from}`)).length;
  return { added, corrected, unchanged: entries.length - added - corrected, kept };
}
