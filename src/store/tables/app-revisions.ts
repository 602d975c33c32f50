import { z } from 'zod';
import { defineTable, namedQuery } from './table.js';

export const AppRevisionRow = z.object({
  owner: z.string(),
  name: z.string(),
  endpoint_id: z.string(),
  revision_id: z.string(),
  created_at: z.string(), // DateTime64(3) UTC text
  is_current: z.boolean().nullable(),
  status: z.string().nullable(),
  deployed_by: z.string().nullable(),
  message: z.string().nullable(),
  annotations: z.string(), // JSON
  raw: z.string(),
  version: z.number().int().nonnegative(),
  collected_at: z.string(),
});
export type AppRevisionRow = z.input<typeof AppRevisionRow>;

export const appRevisions = defineTable('app_revisions', AppRevisionRow);

const RevisionOut = z.object({
  endpoint_id: z.string(),
  revision_id: z.string(),
  created_at_utc: z.string(),
  is_current: z.boolean().nullable(),
  status: z.string().nullable(),
  deployed_by: z.string().nullable(),
  message: z.string().nullable(),
  annotations: z.string(),
});

/** Revisions of apps (app endpoint ids; empty: all), newest first. */
export const revisionsOf = namedQuery(
  'app_revisions_of',
  `SELECT endpoint_id, revision_id, toString(created_at) AS created_at_utc, is_current, status, deployed_by, message, annotations
   FROM app_revisions FINAL
   WHERE length({endpoint_ids:Array(String)}) = 0 OR has({endpoint_ids:Array(String)}, endpoint_id)
   ORDER BY endpoint_id, created_at DESC, revision_id`,
  RevisionOut,
);

/** The revision serving each app when last collected. */
export const currentRevisions = namedQuery(
  'app_current_revisions',
  `SELECT endpoint_id, revision_id, toString(created_at) AS created_at_utc, is_current, status, deployed_by, message, annotations
   FROM app_revisions FINAL
   WHERE is_current
   ORDER BY endpoint_id`,
  RevisionOut,
);
