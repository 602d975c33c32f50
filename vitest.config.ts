import { defineConfig } from 'vitest/config';

// chDB binds one data directory per process and crashes when two threads open different ones:
// every test file runs in its own forked process with its own data directory (test/support/store.ts).
export default defineConfig({
  test: {
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default', ['json', { outputFile: '.vitest-results.json' }]],
  },
});
