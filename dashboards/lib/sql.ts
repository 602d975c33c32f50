// Pieces of panel SQL that follow the plugin's rules (see dashboards/README.md and test/dashboards/grafana-sql.ts):
// - every query is raw SQL (editorType 'sql') on the data source variable `$datasource`;
// - the argument-free macros $__fromTime, $__toTime and $__interval_s are always written in parentheses, e.g.
//   `($__toTime)`: the plugin SDK's macro scanner otherwise reads the next parenthesised text as their arguments;
// - macro arguments are plain column names (no commas or parentheses);
// - multi-value variables filter through `$__conditionalAll(col IN (${var:singlequote}), $var)`, so "All" adds no
//   condition at all;
// - tables with re-collected rows (ReplacingMergeTree) are read with FINAL.
// What a viewer picks reaches the SQL only through Grafana's variables and macros.

/** `${name:singlequote}`: every selected value as a quoted SQL string. */
export const sq = (name: string) => '${' + name + ':singlequote}';
/** A condition that applies only when the variable is not "All" (or empty, for text boxes). */
export const unlessAll = (condition: string, variable: string) => `$__conditionalAll(${condition}, $${variable})`;
export const timeFilter = (column: string) => `$__timeFilter(${column})`;
export const timeInterval = (column: string) => `$__timeInterval(${column})`;
export const FROM_TIME = '($__fromTime)';
export const TO_TIME = '($__toTime)';
export const INTERVAL_S = '($__interval_s)';
/** The app name of an endpoint id `owner/app[/route]` (app names are unique across owners). */
export const appOf = (endpointColumn: string) => `splitByChar('/', ${endpointColumn})[2]`;
