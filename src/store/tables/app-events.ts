import { z } from 'zod';
import { chNumber, defineTable, namedQuery } from './table.js';

export const AppEventRow = z.object({
  owner: z.string(),
  name: z.string(),
  endpoint_id: z.string(),
  event_id: z.string(),
  category: z.string(),
  created_at: z.string(), // DateTime64(3) UTC text
  runner_id: z.string().nullable(),
  state: z.string().nullable(), // legacy DEAD stored as TERMINATED
  termination_reason: z.string().nullable(),
  machine_type: z.string().nullable(),
  revision_id: z.string().nullable(),
  payload: z.string(),
  raw: z.string(),
  version: z.number().int().nonnegative(),
  collected_at: z.string(),
});
export type AppEventRow = z.input<typeof AppEventRow>;

export const appEvents = defineTable('app_events', AppEventRow);

/** Event ids of an app stored at or after `since`: the events a run must not store again. */
export const storedEventIdsSince = namedQuery(
  'stored_event_ids_since',
  `SELECT DISTINCT event_id FROM app_events
   WHERE owner = {owner:String} AND name = {name:String} AND created_at >= parseDateTime64BestEffort({since:String}, 3, 'UTC')
     AND created_at < parseDateTime64BestEffort({until:String}, 3, 'UTC')`,
  z.object({ event_id: z.string() }),
);

/** Events of apps in [from, to), newest first, optionally of some categories (empty: all). */
export const eventsInRange = namedQuery(
  'app_events_in_range',
  `SELECT endpoint_id, event_id, category, toString(created_at) AS created_at_utc, runner_id, state, termination_reason,
          machine_type, revision_id, payload
   FROM app_events FINAL
   WHERE created_at >= parseDateTime64BestEffort({from:String}, 3, 'UTC') AND created_at < parseDateTime64BestEffort({to:String}, 3, 'UTC')
     AND (length({endpoint_ids:Array(String)}) = 0 OR has({endpoint_ids:Array(String)}, endpoint_id))
     AND (length({categories:Array(String)}) = 0 OR has({categories:Array(String)}, category))
   ORDER BY created_at DESC, event_id DESC
   LIMIT {limit:UInt32}`,
  z.object({
    endpoint_id: z.string(),
    event_id: z.string(),
    category: z.string(),
    created_at_utc: z.string(),
    runner_id: z.string().nullable(),
    state: z.string().nullable(),
    termination_reason: z.string().nullable(),
    machine_type: z.string().nullable(),
    revision_id: z.string().nullable(),
    payload: z.string(),
  }),
);

/** Runner state changes of an app in [from, to), oldest first: the runner-state history. */
export const runnerStateChanges = namedQuery(
  'runner_state_changes',
  `SELECT runner_id, state, category, toString(created_at) AS created_at_utc, termination_reason, machine_type
   FROM app_events FINAL
   WHERE endpoint_id = {endpoint_id:String} AND runner_id IS NOT NULL AND state IS NOT NULL
     AND created_at >= parseDateTime64BestEffort({from:String}, 3, 'UTC') AND created_at < parseDateTime64BestEffort({to:String}, 3, 'UTC')
   ORDER BY created_at, event_id`,
  z.object({
    runner_id: z.string(),
    state: z.string(),
    category: z.string(),
    created_at_utc: z.string(),
    termination_reason: z.string().nullable(),
    machine_type: z.string().nullable(),
  }),
);

/**
 * The last known state of each runner of an app at `at`, from its lifecycle events (the platform reports
 * running/IDLE alternation only in counts, so a live runner shows the state of its last event).
 */
export const runnerStatesAt = namedQuery(
  'runner_states_at',
  `SELECT runner_id, argMax(state, (created_at, event_id)) AS last_state, toString(max(created_at)) AS since_utc,
          argMax(termination_reason, (created_at, event_id)) AS last_termination_reason, any(machine_type) AS runner_machine_type
   FROM app_events FINAL
   WHERE endpoint_id = {endpoint_id:String} AND runner_id IS NOT NULL AND state IS NOT NULL
     AND created_at <= parseDateTime64BestEffort({at:String}, 3, 'UTC')
   GROUP BY runner_id
   ORDER BY runner_id`,
  z.object({
    runner_id: z.string(),
    last_state: z.string(),
    since_utc: z.string(),
    last_termination_reason: z.string().nullable(),
    runner_machine_type: z.string().nullable(),
  }),
);

/** Event counts per app and category in [from, to) (deployments, failures, runner churn). */
export const eventCounts = namedQuery(
  'app_event_counts',
  `SELECT endpoint_id, category, count() AS events
   FROM app_events FINAL
   WHERE created_at >= parseDateTime64BestEffort({from:String}, 3, 'UTC') AND created_at < parseDateTime64BestEffort({to:String}, 3, 'UTC')
     AND (length({endpoint_ids:Array(String)}) = 0 OR has({endpoint_ids:Array(String)}, endpoint_id))
   GROUP BY endpoint_id, category
   ORDER BY endpoint_id, category`,
  z.object({ endpoint_id: z.string(), category: z.string(), events: chNumber }),
);
