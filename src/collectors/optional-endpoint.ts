// Platform endpoints a collector uses when the platform serves them: an older platform, or an account whose plan
// lacks the feature, answers 404 (no such route) or 501 (not implemented). PlatformError classifies both as not
// retryable (types not_found and not_implemented), so such a call fails at once, on every run: taken as a job
// failure, the job would fail forever and its staleness alert never clear, while everything else it collects is
// stored. Here "not served" is recorded once per run (a log line, the run's job_runs note, a gauge) and the job
// goes on with the rest.
import type { JobContext } from './job.js';
import { gauge } from '../metrics.js';
import { isPlatformError, type PlatformError } from '../platform/index.js';

/** 404: the platform has no such route; 501: it has the route but does not implement it. */
const NOT_SERVED_STATUSES: ReadonlySet<number> = new Set([404, 501]);

/** A platform answer that says the endpoint is not there (by status only: CONTRIBUTING.md rule 5). */
export function isNotServed(err: unknown): err is PlatformError {
  return isPlatformError(err) && err.status !== null && NOT_SERVED_STATUSES.has(err.status);
}

export type OptionalResult<T> = { served: true; value: T } | { served: false; status: number };

export interface OptionalEndpointOptions {
  /**
   * A 404 can also be about the request (an id in its filters that the platform does not know) rather than the
   * route. `confirm` asks the same route again with nothing that could be missing; when it is answered, the 404
   * was about the request and stays an error. Not needed for a 501, which is about the route.
   */
  confirm?: () => Promise<unknown>;
}

export function servedGauge(ctx: JobContext) {
  return gauge(ctx.runtime.registry, {
    name: 'tallyhouse_platform_endpoint_served',
    help: 'Optional platform endpoints and features (platform-notes.md rule 3): 1 when the last call was served, 0 when the platform refused it (404 or 501; 422 for notes-only analytics names): its data is skipped.',
    labelNames: ['endpoint'],
  });
}

/**
 * Runs `work` (every call it makes goes to `endpoint`). A "not served" answer ends it: the run notes it and gets
 * `{ served: false }`; any other error is thrown as usual.
 */
export async function whenServed<T>(
  ctx: JobContext,
  endpoint: string,
  work: () => Promise<T>,
  opts: OptionalEndpointOptions = {},
): Promise<OptionalResult<T>> {
  try {
    const value = await work();
    servedGauge(ctx).set({ endpoint }, 1);
    return { served: true, value };
  } catch (err) {
    if (!isNotServed(err)) throw err;
    if (err.status === 404 && opts.confirm) {
      let answered = false;
      try {
        await opts.confirm();
        answered = true;
      } catch (again) {
        if (!isNotServed(again)) throw err;
      }
      if (answered) throw err;
    }
    const status = err.status!;
    servedGauge(ctx).set({ endpoint }, 0);
    const note = `${endpoint} not served (the platform answered ${status}): skipped`;
    ctx.log.info({ endpoint, status }, note);
    ctx.note(note);
    return { served: false, status };
  }
}
