import { defineConfig } from 'vitest/config';

// chDB binds one data directory per process and crashes when two threads open different ones:
// every test file runs in its own forked process with its own data directory (test/support/store.ts).
export default defineConfig({
  test: {
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    // Generous bounds, not timing assertions: tests wait for states and events, and a shared 2-core machine
    // (or a CPU-heavy neighbour) may be several times slower than an idle one.
    testTimeout: 180_000,
    hookTimeout: 180_000,
    reporters: ['default', ['json', { outputFile: '.vitest-results.json' }]],
  },
});
