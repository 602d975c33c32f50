// One panel of a DashboardSpec as a Grafana panel model: field defaults and overrides, the options of its
// visualisation, and its targets. Where it sits on the grid is layout.ts's business.
import { DATASOURCE_REF } from './datasource.js';
import type { Json, JsonObject, PanelSpec } from './spec.js';
import { panelTarget } from './targets.js';

/** The panel model with id `id` at `gridPos`; keys in the order Grafana saves them. */
export function panel(p: PanelSpec, id: number, gridPos: { x: number; y: number; w: number; h: number }): JsonObject {
  const model: JsonObject = {
    id,
    type: p.type,
    title: p.title,
    description: p.description,
    gridPos,
    datasource: DATASOURCE_REF,
    fieldConfig: fieldConfig(p),
    options: panelOptions(p),
    targets: p.queries.map(panelTarget),
  };
  if (p.interval) model.interval = p.interval;
  return model;
}

function fieldConfig(p: PanelSpec): JsonObject {
  const defaults: JsonObject = { unit: p.unit, color: { mode: p.type === 'stat' || p.type === 'bargauge' ? 'thresholds' : 'palette-classic' } };
  if (p.decimals !== undefined) defaults.decimals = p.decimals;
  if (p.min !== undefined) defaults.min = p.min;
  if (p.displayName) defaults.displayName = p.displayName;
  if (p.mappings) defaults.mappings = p.mappings;
  defaults.thresholds = { mode: 'absolute', steps: p.thresholds ?? [{ color: 'green', value: null }] };
  if (p.type === 'timeseries') {
    defaults.custom = {
      drawStyle: p.bars ? 'bars' : 'line',
      lineWidth: 1,
      fillOpacity: p.bars ? 80 : p.stacked ? 30 : 10,
      showPoints: 'never',
      spanNulls: false,
      stacking: { mode: p.stacked ? 'normal' : 'none', group: 'A' },
      axisSoftMin: 0,
    };
  } else if (p.type === 'table') {
    defaults.custom = { align: 'auto', filterable: true };
  } else if (p.type === 'state-timeline') {
    defaults.custom = { fillOpacity: 80, lineWidth: 0 };
  }
  const overrides: Json[] = (p.overrides ?? []).map((o) => {
    const properties: Json[] = [];
    if (o.unit) properties.push({ id: 'unit', value: o.unit });
    if (o.displayName) properties.push({ id: 'displayName', value: o.displayName });
    if (o.decimals !== undefined) properties.push({ id: 'decimals', value: o.decimals });
    for (const [k, v] of Object.entries(o.custom ?? {})) properties.push({ id: `custom.${k}`, value: v });
    return { matcher: { id: 'byName', options: o.field }, properties };
  });
  return { defaults, overrides };
}

function panelOptions(p: PanelSpec): JsonObject {
  switch (p.type) {
    case 'timeseries':
      return {
        legend: { showLegend: true, displayMode: 'table', placement: 'right', calcs: ['mean', 'max', 'lastNotNull'] },
        tooltip: { mode: 'multi', sort: 'desc' },
        ...p.options,
      };
    case 'stat':
      return {
        reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
        colorMode: 'value',
        graphMode: 'none',
        justifyMode: 'auto',
        orientation: 'auto',
        textMode: 'value_and_name',
        ...p.options,
      };
    case 'bargauge':
      return {
        reduceOptions: { calcs: ['lastNotNull'], fields: '', values: true },
        orientation: 'horizontal',
        displayMode: 'gradient',
        showUnfilled: true,
        ...p.options,
      };
    case 'table':
      return { showHeader: true, cellHeight: 'sm', ...p.options };
    case 'logs':
      return {
        showTime: true,
        wrapLogMessage: true,
        enableLogDetails: true,
        sortOrder: 'Descending',
        dedupStrategy: 'none',
        prettifyLogMessage: false,
        showCommonLabels: false,
        showLabels: false,
        ...p.options,
      };
    case 'state-timeline':
      return {
        showValue: 'never',
        mergeValues: true,
        rowHeight: 0.8,
        alignValue: 'left',
        legend: { showLegend: true, displayMode: 'list', placement: 'bottom' },
        tooltip: { mode: 'single', sort: 'none' },
        ...p.options,
      };
  }
}
