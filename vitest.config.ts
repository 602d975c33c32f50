import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// The files that take longest (a full run's .vitest-results.json), slowest first. They start first so that the
// run does not end with one of them alone on a worker; a fresh clone (CI after npm ci) has no vitest cache of
// durations to order by. Files not listed keep vitest's own order (cached durations, else size) after these.
const SLOWEST_FIRST = [
  'test/ingest/drain/crash.test.ts',
  'test/ingest/drain/crash-seed-14.test.ts',
  'test/soak/soak.test.ts',
  'test/collectors/models.test.ts',
  'test/ingest/drain/outage.test.ts',
  'test/service-logs.test.ts',
  'test/dashboards/dashboards.test.ts',
  'test/ingest/slow-senders.test.ts',
  'test/dashboards/image.test.ts',
  'test/cli/piped-output.test.ts',
];

class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => {
      const i = SLOWEST_FIRST.findIndex((name) => f.moduleId.endsWith(name));
      return i < 0 ? SLOWEST_FIRST.length : i;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

// chDB binds one data directory per process and crashes when two threads open different ones:
// every test file runs in its own forked process with its own data directory (test/support/store.ts).
export default defineConfig({
  test: {
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    // Most of a test file's time is spent waiting (child services starting, the store, timers, sockets), not on
    // the CPU: files run four at a time. vitest's default is one fewer than the CPUs, so one at a time on 2 cores.
    maxWorkers: 4,
    sequence: { sequencer: SlowestFirst },
    // Bundles the CLI once for every child the tests start (test/support/cli-bundle.ts).
    globalSetup: ['test/support/cli-bundle.ts'],
    // Generous bounds, not timing assertions: tests wait for states and events, and a shared 2-core machine
    // (or a CPU-heavy neighbour) may be several times slower than an idle one.
    testTimeout: 180_000,
    hookTimeout: 180_000,
    reporters: ['default', ['json', { outputFile: '.vitest-results.json' }]],
  },
});
