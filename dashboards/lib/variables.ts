// Template variables: the data source picker every dashboard starts with, and the query, custom and text box
// variables a DashboardSpec lists.
import { DATASOURCE_NAME, DATASOURCE_REF, DATASOURCE_UID, PLUGIN_ID } from './datasource.js';
import type { JsonObject, VariableSpec } from './spec.js';

export const DATASOURCE_VARIABLE: JsonObject = {
  name: 'datasource',
  label: 'Data source',
  description: 'The ClickHouse data source holding the Tallyhouse database.',
  type: 'datasource',
  query: PLUGIN_ID,
  regex: '',
  hide: 0,
  skipUrlSync: false,
  current: { selected: true, text: DATASOURCE_NAME, value: DATASOURCE_UID },
  options: [],
};

/** The Grafana model of one variable; a multi-value variable offers "All" and starts on it. */
export function variable(v: VariableSpec): JsonObject {
  const common = { name: v.name, label: v.label, description: v.description, hide: 0, skipUrlSync: false };
  if (v.kind === 'textbox') {
    return { ...common, type: 'textbox', query: '', current: { text: '', value: '' }, options: [{ selected: true, text: '', value: '' }] };
  }
  const multi = v.multi ?? false;
  const current: JsonObject = multi ? { selected: true, text: ['All'], value: ['$__all'] } : {};
  if (v.kind === 'custom') {
    const values = v.query!.split(',');
    return {
      ...common,
      type: 'custom',
      query: v.query!,
      multi,
      includeAll: multi,
      current: multi ? current : { selected: true, text: values[0], value: values[0] },
      options: values.map((value, i) => ({ selected: !multi && i === 0, text: value, value })),
    };
  }
  return {
    ...common,
    type: 'query',
    datasource: DATASOURCE_REF,
    definition: v.query!,
    query: { editorType: 'sql', rawSql: v.query! },
    refresh: v.onTimeRange ? 2 : 1,
    regex: '',
    sort: 0,
    multi,
    includeAll: multi,
    current,
    options: [],
  };
}
