import { z } from 'zod';
import { defineTable, namedQuery } from './table.js';

/** A route-level endpoint id of an app (GET /v1/serverless/apps?expand=endpoints). */
export const AppEndpointRow = z.object({
  owner: z.string(),
  name: z.string(),
  endpoint_id: z.string(),
  route: z.string().nullable(),
  version: z.number().int().nonnegative(),
  is_deleted: z.union([z.literal(0), z.literal(1)]),
  collected_at: z.string(),
});
export type AppEndpointRow = z.input<typeof AppEndpointRow>;

export const appEndpoints = defineTable('app_endpoints', AppEndpointRow);

/** Every endpoint of the apps as last listed, an app's endpoints together (its own id first). */
export const currentAppEndpoints = namedQuery(
  'current_app_endpoints',
  `SELECT owner, name, endpoint_id, route
   FROM app_endpoints FINAL
   WHERE is_deleted = 0
   ORDER BY owner, name, isNotNull(route), endpoint_id`,
  z.object({ owner: z.string(), name: z.string(), endpoint_id: z.string(), route: z.string().nullable() }),
);
