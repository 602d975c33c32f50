// The Grafana ClickHouse plugin and the data source every panel queries through. The provisioning
// (provisioning/datasources/tallyhouse.yml) and docker-compose.yml pin the same uid and plugin version.

export const PLUGIN_ID = 'grafana-clickhouse-datasource';
export const PLUGIN_VERSION = '4.11.2';
export const DATASOURCE_UID = 'tallyhouse-clickhouse';
export const DATASOURCE_NAME = 'ClickHouse (Tallyhouse)';
/** Panels, targets and query variables name the `$datasource` variable, so a copy can point elsewhere. */
export const DATASOURCE_REF = { type: PLUGIN_ID, uid: '${datasource}' };

/** How the plugin shapes a query's result: 0 time series, 1 table, 2 logs (the plugin's Format enum). */
export const FORMATS = { timeseries: 0, table: 1, logs: 2 } as const;
export type QueryFormat = keyof typeof FORMATS;
