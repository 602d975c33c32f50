import { z } from 'zod';
import type { JobContext } from './job.js';
import { appPath, isPlatformError, Revision, type PlatformError } from '../platform/index.js';
import { appRevisions, type AppRevisionRow } from '../store/tables/app-revisions.js';
import { nextVersionMs, toDateTime64 } from '../values.js';
import { collectorRejects, commitRows, tableWrite, describeZodIssue, mapLimit } from './common.js';
import { type AppRef } from './endpoints.js';

// Loose envelope: each revision is validated on its own.
const RevisionsPage = z.looseObject({
  next_cursor: z.string().nullish(),
  has_more: z.boolean().nullish(),
  revisions: z.array(z.unknown()),
});

const CONCURRENCY = 4;

export interface RevisionsResult {
  rows: number;
  rejected: number;
  refused: Map<string, PlatformError>;
}

/**
 * Every revision of every app (all pages, newest first), stored again each run: `is_current` moves with
 * deployments and the latest version wins. Resolves once every row is committed.
 */
export async function collectRevisions(ctx: JobContext, apps: readonly AppRef[]): Promise<RevisionsResult> {
  const version = nextVersionMs();
  const collectedAt = toDateTime64(Date.now());
  const rejects = collectorRejects('revisions');
  const refused = new Map<string, PlatformError>();
  const perApp = await mapLimit(apps, CONCURRENCY, async (app): Promise<AppRevisionRow[]> => {
    const rows: AppRevisionRow[] = [];
    try {
      for await (const page of ctx.platform.paginate(appPath(app.owner, app.name, 'revisions'), {
        query: { limit: 100 },
        schema: RevisionsPage,
        itemsField: 'revisions',
        ctx: ctx.call,
      })) {
        for (const raw of page.revisions) {
          const parsed = Revision.safeParse(raw);
          if (!parsed.success) {
            rejects.add(raw, describeZodIssue(parsed.error));
            continue;
          }
          const r = parsed.data;
          const createdMs = Date.parse(r.created_at);
          if (Number.isNaN(createdMs)) {
            rejects.add(raw, 'created_at: not an ISO 8601 timestamp');
            continue;
          }
          rows.push({
            owner: app.owner,
            name: app.name,
            endpoint_id: app.endpoint_id,
            revision_id: r.revision_id,
            created_at: toDateTime64(createdMs),
            is_current: r.is_current ?? null,
            status: r.status ?? null,
            deployed_by: r.deployed_by ?? null,
            message: r.message ?? null,
            annotations: JSON.stringify(r.annotations ?? null),
            raw: JSON.stringify(raw),
            version,
            collected_at: collectedAt,
          });
        }
      }
    } catch (err) {
      if (isPlatformError(err) && (err.status === 403 || err.status === 404)) {
        refused.set(app.endpoint_id, err);
        return [];
      }
      throw err;
    }
    return rows;
  });
  const rows = perApp.flat();
  const rejected = rejects.rows.length;
  await commitRows(ctx, [tableWrite(appRevisions, rows)], rejects);
  return { rows: rows.length, rejected, refused };
}
