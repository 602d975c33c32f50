import { z } from 'zod';
import type { JobContext } from './job.js';
import { AppEvent, appPath, isPlatformError, type PlatformError } from '../platform/index.js';
import { storedEventIdsSince, type AppEventRow } from '../store/tables/app-events.js';
import { nextVersionMs, toDateTime64 } from '../values.js';
import { describeZodIssue, mapLimit, type CollectorRejects } from './common.js';
import { type AppRef } from './endpoints.js';

// Loose envelope: each event is validated on its own.
const EventsPage = z.looseObject({
  next_cursor: z.string().nullish(),
  has_more: z.boolean().nullish(),
  endpoint_id: z.string().nullish(),
  events: z.array(z.unknown()),
});

/** Apps read at once. */
const CONCURRENCY = 4;
/** Events per page: the platform's maximum. */
export const PAGE_LIMIT = 1000;

/** `DEAD` is the legacy spelling of `TERMINATED`; any other state (known or not) is kept as delivered. */
export function normalizeRunnerState(state: string): string {
  return state === 'DEAD' ? 'TERMINATED' : state;
}

/** The payload with every runner state (`state`, `*_state`) normalised, at any depth; the rest untouched. */
export function normalizePayloadStates(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalizePayloadStates);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] = (k === 'state' || k.endsWith('_state')) && typeof v === 'string' ? normalizeRunnerState(v) : normalizePayloadStates(v);
  }
  return out;
}

export interface EventsWindow {
  /** Epoch ms: the oldest `created_at` wanted (sent as `start`; paging stops at the first older event). */
  startMs: number;
  /** Epoch ms, exclusive (sent as `end`). */
  endMs: number;
}

export interface AppEventsResult {
  app: AppRef;
  rows: AppEventRow[];
  /** The newest `created_at` the platform returned (stored now or before), null when none. */
  newestMs: number | null;
  /** Events skipped because they are already stored. */
  known: number;
  error?: PlatformError;
}

/**
 * Reads one app's events in the window, newest first, following the cursor, and stops paging at the first
 * event older than the window (the watermark). Events already stored (by id, in the window) and events seen
 * twice (a page that shifted while being read) are skipped, so each event is stored once.
 */
export async function readAppEvents(
  ctx: JobContext,
  app: AppRef,
  window: EventsWindow,
  rejects: CollectorRejects,
  stamp: { version: number; collectedAt: string },
  pageLimit: number = PAGE_LIMIT,
): Promise<AppEventsResult> {
  const known = new Set(
    (
      await storedEventIdsSince(ctx.runtime.store, {
        owner: app.owner,
        name: app.name,
        since: new Date(window.startMs).toISOString(),
        until: new Date(window.endMs).toISOString(),
      })
    ).map((r) => r.event_id),
  );
  const seen = new Set<string>();
  const rows: AppEventRow[] = [];
  let newestMs: number | null = null;
  let skipped = 0;
  pages: for await (const page of ctx.platform.paginate(appPath(app.owner, app.name, 'events'), {
    query: { start: new Date(window.startMs).toISOString(), end: new Date(window.endMs).toISOString(), limit: pageLimit },
    schema: EventsPage,
    itemsField: 'events',
    ctx: ctx.call,
  })) {
    for (const raw of page.events) {
      const parsed = AppEvent.safeParse(raw);
      if (!parsed.success) {
        rejects.add(raw, describeZodIssue(parsed.error));
        continue;
      }
      const e = parsed.data;
      const createdMs = Date.parse(e.created_at);
      if (Number.isNaN(createdMs)) {
        rejects.add(raw, `created_at: not an ISO 8601 timestamp`);
        continue;
      }
      // Newest first: an event older than the window means everything after it is older still.
      if (createdMs < window.startMs) break pages;
      if (createdMs >= window.endMs) continue;
      newestMs = newestMs === null ? createdMs : Math.max(newestMs, createdMs);
      if (known.has(e.event_id) || seen.has(e.event_id)) {
        skipped++;
        continue;
      }
      seen.add(e.event_id);
      rows.push(eventRow(app, page.endpoint_id ?? app.endpoint_id, e, raw, createdMs, stamp));
    }
  }
  return { app, rows, newestMs, known: skipped };
}

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function eventRow(
  app: AppRef,
  endpointId: string,
  e: AppEvent,
  raw: unknown,
  createdMs: number,
  stamp: { version: number; collectedAt: string },
): AppEventRow {
  const payload = normalizePayloadStates(e.payload ?? null);
  const p = payload !== null && typeof payload === 'object' && !Array.isArray(payload) ? (payload as Record<string, unknown>) : {};
  return {
    owner: app.owner,
    name: app.name,
    endpoint_id: endpointId,
    event_id: e.event_id,
    category: e.category,
    created_at: toDateTime64(createdMs),
    runner_id: str(p.runner_id),
    state: str(p.state),
    termination_reason: str(p.termination_reason),
    machine_type: str(p.machine_type),
    revision_id: str(p.revision_id),
    payload: JSON.stringify(payload) ?? 'null',
    raw: JSON.stringify(raw),
    version: stamp.version,
    collected_at: stamp.collectedAt,
  };
}

/**
 * Reads the events of several apps (a few at a time), each in its own window. An app the platform refuses
 * (403/404: deleted or no longer owned since the listing) comes back with `error`; any other failure rejects.
 * Nothing is written here: the caller commits the rows, then moves its watermarks.
 */
export async function readEventsOfApps(
  ctx: JobContext,
  apps: readonly AppRef[],
  windowOf: (app: AppRef) => EventsWindow,
  rejects: CollectorRejects,
  pageLimit: number = PAGE_LIMIT,
): Promise<AppEventsResult[]> {
  const stamp = { version: nextVersionMs(), collectedAt: toDateTime64(Date.now()) };
  return mapLimit(apps, CONCURRENCY, async (app) => {
    try {
      return await readAppEvents(ctx, app, windowOf(app), rejects, stamp, pageLimit);
    } catch (err) {
      if (isPlatformError(err) && (err.status === 403 || err.status === 404)) return { app, rows: [], newestMs: null, known: 0, error: err };
      throw err;
    }
  });
}

