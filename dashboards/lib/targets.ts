// The plugin's query objects: a panel's targets (refId A, B, ...) and an annotation's target. Both carry raw SQL
// for the SQL editor (editorType 'sql') and the plugin version they were written for.
import { DATASOURCE_REF, FORMATS, PLUGIN_VERSION } from './datasource.js';
import type { JsonObject, QuerySpec } from './spec.js';

/** The i-th query of a panel, as the plugin's query editor saves it. */
export function panelTarget(q: QuerySpec, i: number): JsonObject {
  return {
    refId: String.fromCharCode(65 + i),
    datasource: DATASOURCE_REF,
    editorType: 'sql',
    format: FORMATS[q.format],
    queryType: q.format,
    pluginVersion: PLUGIN_VERSION,
    rawSql: q.sql,
  };
}

/** An annotation query: read as a table (columns time, text, tags, title). */
export function annotationTarget(sql: string): JsonObject {
  return { refId: 'annotation', datasource: DATASOURCE_REF, editorType: 'sql', format: FORMATS.table, pluginVersion: PLUGIN_VERSION, rawSql: sql };
}
