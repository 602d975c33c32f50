import { z } from 'zod';
import type { Store } from '../client.js';

/** A ClickHouse table's row as the writer sends it: the zod schema is the single source of its columns. */
export interface TableDef<S extends z.ZodObject> {
  name: string;
  row: S;
  columns: string[];
}

export function defineTable<S extends z.ZodObject>(name: string, row: S): TableDef<S> {
  return { name, row, columns: Object.keys(row.shape) };
}

/**
 * A named, parameterised query (CONTRIBUTING.md rule 2): `{name:Type}` placeholders bound server-side and a zod
 * schema for the rows that come back. Values are never interpolated into the SQL text.
 */
export function namedQuery<P extends Record<string, unknown>, R extends z.ZodType>(
  name: string,
  sql: string,
  rowSchema: R,
) {
  const rows = z.array(rowSchema);
  const run = async (store: Pick<Store, 'client'>, params: P): Promise<z.output<R>[]> => {
    const rs = await store.client.query({
      query: sql,
      query_params: params,
      format: 'JSONEachRow',
      query_id: undefined,
    });
    const data = await rs.json();
    const parsed = rows.safeParse(data);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new Error(`query ${name} returned an unexpected row: ${issue.path.join('.')}: ${issue.message}`);
    }
    return parsed.data;
  };
  return Object.assign(run, { queryName: name, sql });
}

/** Numbers ClickHouse returns quoted (UInt64, Decimal) or plain: always a JS number. */
export const chNumber = z.union([z.number(), z.string()]).transform((v) => Number(v));
/** Decimal text as the collectors write it (toDecimalString): digits, an optional sign and fraction, no exponent. */
export const decimalText = z.string().regex(/^-?\d+(\.\d+)?$/);

/** Decimal columns come back as exact strings (output_format_json_quote_decimals). */
export const chDecimal = z.union([z.string(), z.number()]).transform((v) => String(v));
