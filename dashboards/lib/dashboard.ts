// A DashboardSpec as the Grafana dashboard model, and the text it is committed as.
import { DATASOURCE_REF } from './datasource.js';
import { layOut } from './layout.js';
import type { DashboardSpec, JsonObject } from './spec.js';
import { annotationTarget } from './targets.js';
import { DATASOURCE_VARIABLE, variable } from './variables.js';

export const SCHEMA_VERSION = 41;

/**
 * The Grafana model of one dashboard: its variables after the data source picker, its annotations after Grafana's
 * built-in one, a link to the other Tallyhouse dashboards, and the panels laid out.
 */
export function dashboard(d: DashboardSpec): JsonObject {
  return {
    uid: d.uid,
    title: d.title,
    description: d.description,
    tags: ['tallyhouse'],
    editable: true,
    graphTooltip: 1,
    timezone: 'browser',
    fiscalYearStartMonth: 0,
    liveNow: false,
    refresh: '5m',
    schemaVersion: SCHEMA_VERSION,
    version: 1,
    time: d.time,
    timepicker: {},
    annotations: {
      list: [
        {
          builtIn: 1,
          datasource: { type: 'grafana', uid: '-- Grafana --' },
          enable: true,
          hide: true,
          iconColor: 'rgba(0, 211, 255, 1)',
          name: 'Annotations & Alerts',
          type: 'dashboard',
        },
        ...(d.annotations ?? []).map((a) => ({
          name: a.name,
          datasource: DATASOURCE_REF,
          enable: true,
          hide: false,
          iconColor: a.iconColor,
          target: annotationTarget(a.sql),
        })),
      ],
    },
    links: [{ title: 'Tallyhouse', type: 'dashboards', tags: ['tallyhouse'], asDropdown: true, includeVars: false, keepTime: true, icon: 'external link', targetBlank: false, tooltip: '', url: '' }],
    templating: { list: [DATASOURCE_VARIABLE, ...d.variables.map(variable)] },
    panels: layOut(d.title, d.rows),
  };
}

/** The committed text of a model: 2-space JSON with a trailing newline. */
export function dashboardText(model: JsonObject): string {
  return `${JSON.stringify(model, null, 2)}\n`;
}
