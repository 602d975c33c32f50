import { z } from 'zod';
import type { JobArgs, JobDefinition, RawJobArgs } from '../collectors/job.js';
import { isDateArg, isTimeZone, parseTimeArg, timeRange } from '../collectors/time-args.js';

/** The options every job accepts, besides its own. */
export const COMMON_OPTIONS = ['from', 'to', 'timezone'] as const;

/** A bad option or value: `tallyhouse collect` prints the message (one line, naming the option) and exits 2. */
export class UsageError extends Error {}

/** A comma-separated list (`--kinds serverless,models`), each item checked by `item`. */
export function commaList<T extends z.ZodType<string, string>>(item: T) {
  return z
    .string()
    .transform((v) => v.split(',').map((s) => s.trim()).filter(Boolean))
    .pipe(z.array(item).min(1, 'expected at least one value'));
}

/** `--recollect-hours`: how far before its checkpoint a scheduled run starts again (recent buckets still fill in). */
export function recollectHours(defaultHours: number) {
  return z.coerce.number().min(0).default(defaultHours).describe(`hours re-collected by a scheduled run (default ${defaultHours})`);
}

function wellFormed(value: string, range: 'dates' | 'times'): boolean {
  if (range === 'dates' && !isDateArg(value)) return false;
  try {
    parseTimeArg(value, 'UTC', '');
    return true;
  } catch {
    return false;
  }
}

function commonArgs(range: 'dates' | 'times') {
  const point = z.string().refine((v) => wellFormed(v, range), {
    error: range === 'dates' ? 'expected a date YYYY-MM-DD' : 'expected a date YYYY-MM-DD or an ISO 8601 datetime',
  });
  return z
    .object({
      from: point.optional(),
      to: point.optional(),
      // Any valid zone, not only TIMEZONES: the query API answers in every zone it finds collected.
      timezone: z.string().refine(isTimeZone, { error: 'expected an IANA time zone (e.g. Europe/Berlin)' }).optional(),
    })
    .refine((v) => (v.from === undefined) === (v.to === undefined), {
      error: 'a backfill needs both --from and --to (--to is exclusive)',
    })
    .refine(
      (v) => {
        // A malformed one is already reported by its own check (zod runs this one all the same).
        if (v.from === undefined || v.to === undefined || !wellFormed(v.from, range) || !wellFormed(v.to, range)) return true;
        if (v.timezone !== undefined && !isTimeZone(v.timezone)) return true;
        const { fromMs, toMs } = timeRange(v.from, v.to).instants(v.timezone ?? 'UTC');
        return toMs > fromMs;
      },
      { error: 'must be after --from (--to is exclusive)', path: ['to'] },
    );
}

function describeIssues(error: z.ZodError, raw: RawJobArgs): string {
  return error.issues
    .map((issue) => {
      const key = issue.path[0];
      if (key === undefined) return issue.message;
      const given = raw[String(key)];
      return `--${String(key)}: ${issue.message}${given === undefined ? '' : ` (got ${JSON.stringify(given)})`}`;
    })
    .join('; ');
}

/**
 * Checks a job's options once, before the job runs: unknown names, --from/--to/--timezone (well formed, both or
 * neither, --to after --from) and the job's own zod object. Throws a UsageError naming the option.
 */
export function parseJobArgs(job: JobDefinition, raw: RawJobArgs = {}): JobArgs {
  const own = job.options?.shape ?? {};
  const unknown = Object.keys(raw).filter((k) => !(COMMON_OPTIONS as readonly string[]).includes(k) && !Object.hasOwn(own, k));
  if (unknown.length > 0) throw new UsageError(`unknown option ${unknown.map((k) => `--${k}`).join(', ')} for the ${job.name} job`);

  const { from, to, timezone, ...rest } = raw;
  const common = commonArgs(job.range ?? 'times').safeParse({ from, to, timezone });
  if (!common.success) throw new UsageError(describeIssues(common.error, raw));
  const options = job.options ? job.options.safeParse(rest) : { success: true as const, data: {} };
  if (!options.success) throw new UsageError(describeIssues(options.error, raw));

  const { data } = common;
  return {
    range: data.from !== undefined && data.to !== undefined ? timeRange(data.from, data.to) : undefined,
    timezone: data.timezone,
    options: options.data,
  };
}
