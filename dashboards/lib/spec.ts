// What a dashboard file in boards/ describes: panels in rows, their queries, the variables and annotations.
// The builders in this folder turn a DashboardSpec into the Grafana model (dashboard.ts).
import type { QueryFormat } from './datasource.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface QuerySpec {
  sql: string;
  format: QueryFormat;
}

export interface Override {
  field: string;
  unit?: string;
  displayName?: string;
  decimals?: number;
  custom?: JsonObject;
}

export interface PanelSpec {
  type: 'timeseries' | 'table' | 'stat' | 'bargauge' | 'logs' | 'state-timeline';
  title: string;
  description: string;
  w: number;
  h: number;
  unit: string;
  queries: QuerySpec[];
  /** Minimum interval ($__timeInterval never goes finer), e.g. '1h' for hourly buckets. */
  interval?: string;
  /** Series name from the long format's label column, e.g. '${__field.labels.app}'. */
  displayName?: string;
  decimals?: number;
  min?: number;
  bars?: boolean;
  stacked?: boolean;
  overrides?: Override[];
  mappings?: Json[];
  thresholds?: Array<{ color: string; value: number | null }>;
  options?: JsonObject;
}

export interface VariableSpec {
  name: string;
  label: string;
  description: string;
  kind: 'query' | 'custom' | 'textbox';
  /** query: SQL returning one column of values; custom: comma-separated values. */
  query?: string;
  multi?: boolean;
  /** Re-run the query when the time range changes (it uses $__timeFilter). */
  onTimeRange?: boolean;
}

export interface DashboardSpec {
  file: string;
  uid: string;
  title: string;
  description: string;
  time: { from: string; to: string };
  variables: VariableSpec[];
  /** Panels in rows; each row is laid out left to right and starts below the tallest panel of the row above. */
  rows: PanelSpec[][];
  /** Annotation queries, shown on every time series panel. */
  annotations?: AnnotationSpec[];
}

/** An annotation query: its SQL returns the columns time, text, tags and title. */
export interface AnnotationSpec {
  name: string;
  iconColor: string;
  sql: string;
}
