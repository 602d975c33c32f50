// Writes the Grafana dashboards: `npx tsx dashboards/generate.ts` regenerates dashboards/*.json from boards/
// (one file per dashboard) through the builders in lib/. test/dashboards/dashboards.test.ts checks the committed
// JSON is exactly what this writes, then runs every panel's SQL against a store the collectors filled.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildDashboards } from './boards/index.js';
import { dashboardText } from './lib/dashboard.js';

const dir = fileURLToPath(new URL('.', import.meta.url));
for (const { file, model } of buildDashboards()) {
  writeFileSync(`${dir}${file}`, dashboardText(model));
  process.stdout.write(`wrote dashboards/${file}\n`);
}
