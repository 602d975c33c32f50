import { z } from 'zod';
import { chNumber, defineTable, namedQuery } from './table.js';

const nullableNumber = z.number().nullable();

/** One serverless app, as the listing describes it (latest state per app). */
export const AppRow = z.object({
  owner: z.string(),
  name: z.string(),
  endpoint_id: z.string(),
  app_id: z.string().nullable(),
  environment: z.string().nullable(),
  machine_type: z.string().nullable(),
  machine_types: z.array(z.string()),
  auth_mode: z.string().nullable(),
  keep_alive: nullableNumber, // seconds
  min_concurrency: nullableNumber,
  max_concurrency: nullableNumber,
  request_timeout: nullableNumber, // seconds
  startup_timeout: nullableNumber, // seconds
  valid_regions: z.array(z.string()),
  updated_at: z.string().nullable(), // DateTime64(3) UTC text
  active_runners: nullableNumber,
  queue_size: nullableNumber,
  queue_size_source: z.enum(['queue', 'listing', '']),
  observed_at: z.string(),
  raw: z.string(),
  version: z.number().int().nonnegative(),
  is_deleted: z.union([z.literal(0), z.literal(1)]),
  collected_at: z.string(),
});
export type AppRow = z.input<typeof AppRow>;

export const apps = defineTable('apps', AppRow);

const nullableCh = chNumber.nullable();

/** The latest state of every app still listed (tombstoned apps excluded). */
export const currentApps = namedQuery(
  'current_apps',
  `SELECT owner, name, endpoint_id, app_id, environment, machine_type, machine_types, auth_mode,
          keep_alive, min_concurrency, max_concurrency, request_timeout, startup_timeout, valid_regions,
          if(isNull(updated_at), NULL, toString(updated_at)) AS updated_at, active_runners, queue_size, queue_size_source,
          toString(observed_at) AS observed_at
   FROM apps FINAL
   WHERE is_deleted = 0
     AND (length({owners:Array(String)}) = 0 OR has({owners:Array(String)}, owner))
   ORDER BY owner, name`,
  // The stored row's columns, with numbers as ClickHouse returns them (UInt64/Float64 may come quoted).
  AppRow.omit({ raw: true, version: true, is_deleted: true, collected_at: true }).extend({
    keep_alive: nullableCh,
    min_concurrency: nullableCh,
    max_concurrency: nullableCh,
    request_timeout: nullableCh,
    startup_timeout: nullableCh,
    active_runners: nullableCh,
    queue_size: nullableCh,
    queue_size_source: z.string(),
  }),
);

/** Keys of the apps currently stored, to tombstone those a later listing no longer has. */
export const liveAppKeys = namedQuery(
  'live_app_keys',
  `SELECT owner, name, endpoint_id FROM apps FINAL WHERE is_deleted = 0 ORDER BY owner, name`,
  z.object({ owner: z.string(), name: z.string(), endpoint_id: z.string() }),
);
