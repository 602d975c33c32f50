// Variables, filters and annotations that more than one dashboard uses.
import { appOf, sq, timeFilter, unlessAll } from '../lib/sql.js';
import type { AnnotationSpec, VariableSpec } from '../lib/spec.js';

export const APP_FROM_APPS: VariableSpec = {
  name: 'app',
  label: 'App',
  description: 'Apps as last listed by the apps collector.',
  kind: 'query',
  query: 'SELECT name FROM apps FINAL WHERE is_deleted = 0 ORDER BY name',
  multi: true,
};

/** The variables of the dashboards that read analytics_buckets: timezone, bucket size, apps, endpoints. */
export function analyticsVariables(): VariableSpec[] {
  return [
    {
      name: 'timezone',
      label: 'Timezone',
      description: 'Timezones the analytics were collected in (TIMEZONES); hourly buckets are the same in each.',
      kind: 'query',
      query: "SELECT DISTINCT timezone FROM analytics_buckets WHERE kind = 'serverless' ORDER BY timezone",
    },
    {
      name: 'timeframe',
      label: 'Bucket',
      description: 'Bucket size the analytics were collected at (ANALYTICS_TIMEFRAME); the most common first.',
      kind: 'query',
      query: "SELECT timeframe FROM analytics_buckets WHERE kind = 'serverless' GROUP BY timeframe ORDER BY count() DESC, timeframe",
    },
    APP_FROM_APPS,
    {
      name: 'endpoint',
      label: 'Endpoint',
      description: 'Endpoint ids of the selected apps: `owner/app` (the app with all its routes) and `owner/app/route`.',
      kind: 'query',
      query: `SELECT DISTINCT endpoint_id FROM analytics_buckets WHERE kind = 'serverless' AND ${unlessAll(`${appOf('endpoint_id')} IN (${sq('app')})`, 'app')} ORDER BY endpoint_id`,
      multi: true,
    },
  ];
}

/** Analytics rows of the selected timezone and bucket size in the time range. */
export const ANALYTICS_WHERE = `kind = 'serverless' AND timezone = ${sq('timezone')} AND timeframe = ${sq('timeframe')}
  AND ${timeFilter('bucket')}`;
/** Per endpoint: the selected endpoints of the selected apps. */
export const ENDPOINT_FILTER = `${unlessAll(`endpoint_id IN (${sq('endpoint')})`, 'endpoint')}
  AND ${unlessAll(`${appOf('endpoint_id')} IN (${sq('app')})`, 'app')}`;
/** Per app: the app-level rows (a bare `owner/app` covers all its routes), so nothing is counted twice. */
export const APP_SCOPE_FILTER = `endpoint_scope = 'app' AND ${unlessAll(`${appOf('endpoint_id')} IN (${sq('app')})`, 'app')}`;

/** Deployments (revisions created) of the selected apps, as annotations. */
export const DEPLOYMENTS: AnnotationSpec = {
  name: 'Deployments',
  iconColor: 'purple',
  sql: `SELECT created_at AS time, name AS tags, 'Deployment' AS title,
  concat(name, ': revision ', revision_id, if(status IS NULL, '', concat(' (', status, ')')), if(deployed_by IS NULL, '', concat(' by ', deployed_by))) AS text
FROM app_revisions FINAL
WHERE ${timeFilter('created_at')} AND ${unlessAll(`name IN (${sq('app')})`, 'app')}
ORDER BY time`,
};
