// The tests Stryker runs (stryker.config.mjs): every test file but the soak, each in a forked process of its own as
// `npm test` runs them. Stryker's vitest runner asks for one worker thread, and chDB crashes a process whose
// threads open two data directories (CONTRIBUTING.md: one data directory per process), so the plugin below sets
// the pool back to forks once the runner's options are in. Stryker's hooks report coverage and hit counts through
// each file's task metadata, which crosses the process boundary: per-test coverage works in forks as in threads.
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

// `npm run mutation -- --testFiles a,b` (scripts/mutation.mjs) hands the files over here rather than to Stryker:
// Stryker 9.6.1 activates a static mutant (one evaluated when its module loads: a constant, a regular expression)
// only after the module is loaded when --testFiles is given (stryker-js issue 6144), so every static mutant
// survived a --testFiles run; limited here, the run is the same and static mutants are activated before loading.
const only = process.env.TALLYHOUSE_MUTATION_TEST_FILES?.split(',').map((f) => f.trim()).filter(Boolean);

// A test can kill a mutant only in its own process: the vitest runner activates a mutant through a global of the
// test process, never through the environment (`__STRYKER_ACTIVE_MUTANT__`, which only Stryker's command runner
// sets), so a CLI or service the test spawns runs the sandbox's code with no mutant active. `related` already
// leaves out the test files that import nothing of src/ or jobs/ (the CLI, architecture and dashboard-file tests).
// These import src/ only for the simulator and an oracle's decimal arithmetic (values.ts) and run everything they
// test in children: they would run for every static mutant of what they import (minutes each) and could only
// "kill" a values.ts mutant through their own oracle.
const CHILD_PROCESS_ONLY = ['test/api/cost-changes-cli.test.ts', 'test/jobs/startup-pass.test.ts', 'test/mcp/stdio-standalone.test.ts'];

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
  test: {
    ...base.test,
    reporters: ['default'],
    ...(only && only.length > 0 ? { include: only } : {}),
    exclude: ['test/soak/**', '**/node_modules/**', ...CHILD_PROCESS_ONLY],
  },
});
