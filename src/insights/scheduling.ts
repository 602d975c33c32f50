// "Frequent runner_scheduling_failure suggests raising max_concurrency" (platform interface, request errors; issue
// 50.7): which apps that advice applies to, and what it rests on. Pure: rows in, hints out (no I/O, no clock); the
// /recommendations route, `tallyhouse report efficiency --hints` and MCP's `recommendations` tool all call it.

/** The request-level error type the advice is about. */
export const SCHEDULING_FAILURE = 'runner_scheduling_failure';

/** Fewer failures than this are never "frequent", whatever their share: one failure of two requests is noise. */
export const MIN_SCHEDULING_FAILURES = 3;

export interface SchedulingFailureInput {
  /** `owner/app`. */
  app: string;
  /** Requests of the window whose outcome is known (a stored webhook delivery). */
  requests: number;
  scheduling_failures: number;
  /** When the latest scheduling failure ended (DateTime64 UTC text or ISO 8601); null when none. */
  last_seen: string | null;
}

export interface AppConcurrencyInput {
  owner: string;
  name: string;
  endpoint_id: string;
  /** The app's current setting, as the apps collector last saw it; null when the listing did not say. */
  max_concurrency: number | null;
}

export interface ConcurrencyHint {
  kind: 'raise_max_concurrency';
  /** The app's name (as the other hints name it). */
  app: string;
  endpoint_id: string;
  /** scheduling_failures / requests (0-1). */
  share_of_requests: number;
  scheduling_failures: number;
  requests: number;
  /** ISO 8601 UTC. */
  last_seen: string;
  /** null: the app is not in the collected listing (or the listing did not give it). */
  max_concurrency: number | null;
  evidence: string;
}

function isoUtc(text: string): string {
  const iso = /[zZ]|[+-]\d\d:?\d\d$/.test(text) ? text.replace(' ', 'T') : `${text.replace(' ', 'T')}Z`;
  return new Date(Date.parse(iso)).toISOString();
}

/**
 * One hint per app whose scheduling failures are at least `minSharePercent` of its requests with a known outcome
 * (and at least MIN_SCHEDULING_FAILURES of them), highest share first. `window` only words the evidence.
 */
export function schedulingHints(input: {
  rows: readonly SchedulingFailureInput[];
  apps: readonly AppConcurrencyInput[];
  minSharePercent: number;
  window: { from: string; to: string };
}): ConcurrencyHint[] {
  const appByKey = new Map(input.apps.map((a) => [`${a.owner}/${a.name}`, a]));
  const hints: ConcurrencyHint[] = [];
  for (const r of input.rows) {
    if (r.requests <= 0 || r.scheduling_failures < MIN_SCHEDULING_FAILURES || r.last_seen === null) continue;
    // Compared in integers: failures × 100 ≥ share% × requests (no rounding at the threshold).
    if (r.scheduling_failures * 100 < input.minSharePercent * r.requests) continue;
    const app = appByKey.get(r.app);
    const share = r.scheduling_failures / r.requests;
    const setting = app?.max_concurrency ?? null;
    hints.push({
      kind: 'raise_max_concurrency',
      app: app?.name ?? r.app.split('/')[1] ?? r.app,
      endpoint_id: app?.endpoint_id ?? r.app,
      share_of_requests: share,
      scheduling_failures: r.scheduling_failures,
      requests: r.requests,
      last_seen: isoUtc(r.last_seen),
      max_concurrency: setting,
      evidence:
        `${r.scheduling_failures} of ${r.requests} requests (${(share * 100).toFixed(2)} %) with a known outcome (a stored webhook delivery) ` +
        `from ${input.window.from} to ${input.window.to} (exclusive) failed with ${SCHEDULING_FAILURE} (no runner could be allocated), the latest at ` +
        `${isoUtc(r.last_seen)}; max_concurrency is ${setting ?? 'unknown (not in the collected app listing)'}: the platform advises raising it`,
    });
  }
  return hints.sort((a, b) => b.share_of_requests - a.share_of_requests || (a.app < b.app ? -1 : a.app > b.app ? 1 : 0));
}
