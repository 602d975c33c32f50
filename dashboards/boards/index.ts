// Every dashboard; generate.ts writes one JSON file per entry.
import { dashboard } from '../lib/dashboard.js';
import type { DashboardSpec, JsonObject } from '../lib/spec.js';
import { cost } from './cost.js';
import { errors } from './errors.js';
import { latency } from './latency.js';
import { logs } from './logs.js';
import { pipeline } from './pipeline.js';
import { runners } from './runners.js';
import { efficiency } from './efficiency.js';

export const DASHBOARD_SPECS: readonly DashboardSpec[] = [cost, latency, errors, runners, logs, pipeline, efficiency];

/** Every dashboard model, keyed by its file name in dashboards/. */
export function buildDashboards(): Array<{ file: string; model: JsonObject }> {
  return DASHBOARD_SPECS.map((d) => ({ file: d.file, model: dashboard(d) }));
}
