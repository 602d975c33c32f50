// Places a dashboard's rows of panels on Grafana's 24-column grid and numbers them.
import { panel } from './panels.js';
import type { Json, PanelSpec } from './spec.js';

const GRID_COLUMNS = 24;

/**
 * Each row is laid out left to right and starts below the tallest panel of the row above; panel ids count from 1
 * in that order. A row wider than the grid is an error naming the dashboard and the panel that overflows.
 */
export function layOut(dashboardTitle: string, rows: PanelSpec[][]): Json[] {
  const panels: Json[] = [];
  let id = 1;
  let y = 0;
  for (const row of rows) {
    let x = 0;
    let height = 0;
    for (const p of row) {
      if (x + p.w > GRID_COLUMNS) throw new Error(`${dashboardTitle}: row with "${p.title}" is wider than ${GRID_COLUMNS} columns`);
      panels.push(panel(p, id++, { x, y, w: p.w, h: p.h }));
      x += p.w;
      height = Math.max(height, p.h);
    }
    y += height;
  }
  return panels;
}
