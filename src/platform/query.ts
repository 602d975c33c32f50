import { MAX_VALUES_PER_PARAM } from './chunk.js';

export type QueryValue = string | number | boolean | readonly string[] | undefined;
export type QueryParams = Record<string, QueryValue>;

/**
 * How a list goes on the wire. `repeat` (`app=a&app=b`) is the default because it is the one form every
 * multi-value parameter of the spec and notes accepts (`category` of the events endpoint is documented as
 * repeatable only) and values never need a separator escaped. `comma` (`app=a,b`) is there for a server
 * that only splits on commas.
 */
export type ArrayFormat = 'repeat' | 'comma';

/**
 * Adds `query` to `url`. undefined values are skipped; an empty list, a list of more than 50 values or a
 * non-finite number is refused (RangeError) rather than silently changing what the call means
 * (an omitted `app` means "every app").
 */
export function appendQuery(url: URL, query: QueryParams | undefined, arrayFormat: ArrayFormat = 'repeat'): void {
  if (!query) return;
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined) continue;
    if (typeof value === 'string') {
      url.searchParams.append(name, value);
    } else if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw new RangeError(`query parameter ${name} is not a finite number`);
      url.searchParams.append(name, String(value));
    } else if (typeof value === 'boolean') {
      url.searchParams.append(name, value ? 'true' : 'false');
    } else {
      if (value.length === 0) throw new RangeError(`query parameter ${name} is an empty list; omit it instead`);
      if (value.length > MAX_VALUES_PER_PARAM) {
        throw new RangeError(
          `query parameter ${name} has ${value.length} values; the platform takes at most ${MAX_VALUES_PER_PARAM} (split with chunk())`,
        );
      }
      if (arrayFormat === 'comma') {
        if (value.some((item) => item.includes(','))) {
          throw new RangeError(`query parameter ${name} has a value containing a comma; use arrayFormat 'repeat'`);
        }
        url.searchParams.append(name, value.join(','));
      } else {
        for (const item of value) url.searchParams.append(name, item);
      }
    }
  }
}
