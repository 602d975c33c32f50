/** The most values the platform accepts in one multi-value parameter (`app`, `endpoint_id`, `app_id`). */
export const MAX_VALUES_PER_PARAM = 50;

/**
 * Splits values into consecutive groups of at most `size`, in order: 120 names -> 50, 50, 20.
 * Used to turn a long `app` / `endpoint_id` list into several calls the platform accepts.
 */
export function chunk<T>(values: readonly T[], size: number = MAX_VALUES_PER_PARAM): T[][] {
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`chunk size must be a positive integer, got ${size}`);
  const groups: T[][] = [];
  for (let start = 0; start < values.length; start += size) groups.push(values.slice(start, start + size));
  return groups;
}
