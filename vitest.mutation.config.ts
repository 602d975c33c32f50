// The tests Stryker runs (stryker.config.mjs): every test file but the soak, each in a forked process of its own as
// `npm test` runs them. Stryker's vitest runner asks for one worker thread, and chDB crashes a process whose
// threads open two data directories (CONTRIBUTING.md: one data directory per process), so the plugin below sets
// the pool back to forks once the runner's options are in. Stryker's hooks report coverage and hit counts through
// each file's task metadata, which crosses the process boundary: per-test coverage works in forks as in threads.
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

export default defineConfig({
  ...base,
  plugins: [
    {
      name: 'tallyhouse:mutation-forks',
      configureVitest({ project }) {
        project.config.pool = 'forks';
      },
    },
  ],
  test: { ...base.test, reporters: ['default'], exclude: ['test/soak/**', '**/node_modules/**'] },
});
