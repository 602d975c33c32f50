// Findings of the anomalies job (the `anomalies` table) as annotations on the Cost and Errors dashboards.
import type { AnnotationSpec } from '../lib/spec.js';
import { appOf, sq, timeFilter, unlessAll } from '../lib/sql.js';

const TEXT = `concat(summary, if(explanation = '', '', concat(' — ', explanation))) AS text`;

/** Cost findings (apps, model endpoints, API keys); the app filter applies to app series. */
export const COST_ANOMALIES: AnnotationSpec = {
  name: 'Cost anomalies',
  iconColor: 'orange',
  sql: `SELECT bucket AS time, concat(series_kind, ':', series_id) AS tags, 'Cost anomaly' AS title, ${TEXT}
FROM anomalies FINAL
WHERE is_deleted = 0 AND measure = 'cost' AND ${timeFilter('bucket')}
  AND (series_kind != 'app' OR ${unlessAll(`series_id IN (${sq('app')})`, 'app')})
ORDER BY time`,
};

/** Error-rate and request-volume findings of the selected apps' endpoints. */
export const ERROR_ANOMALIES: AnnotationSpec = {
  name: 'Error and traffic anomalies',
  iconColor: 'red',
  sql: `SELECT bucket AS time, concat(series_kind, ':', series_id) AS tags, if(measure = 'error_rate', 'Error-rate anomaly', 'Traffic anomaly') AS title, ${TEXT}
FROM anomalies FINAL
WHERE is_deleted = 0 AND measure IN ('error_rate', 'volume') AND ${timeFilter('bucket')}
  AND ${unlessAll(`${appOf('series_id')} IN (${sq('app')})`, 'app')}
ORDER BY time`,
};
