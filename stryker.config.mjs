// Mutation testing (issue 31.1): `npm run mutation` (scripts/mutation.mjs runs Stryker, then prints the score per
// module). One module alone: `npm run mutation -- --mutate src/store/values.ts`. Not part of `npm test`: it runs
// the related tests once per mutant (per-test coverage picks which), so it is slow; incremental mode keeps the
// results of mutants whose code and tests did not change (reports/stryker-incremental.json).
//
// Stryker's vitest runner asks for one worker thread; vitest.mutation.config.ts sets the pool back to forks (the
// embedded store must not be opened in a worker thread), so every test file but the soak counts, store ones too.
// One module's own tests only: `npm run mutation -- --mutate src/store/writer.ts --testFiles test/store/writer.test.ts --force`
// (scripts/mutation.mjs hands --testFiles to vitest.mutation.config.ts: given to Stryker 9.6.1, it made every static
// mutant survive). A whole-scope run takes hours on a shared machine; one module takes minutes (CONTRIBUTING.md).

/** The modules mutated by default: money, collection, ingestion and the endpoints people and scrapers call. */
export const MUTATION_SCOPE = [
  'src/store/values.ts',
  'src/api/finance.ts',
  'src/api/focus.ts',
  'src/api/*cost*.ts',
  'src/collectors/usage.ts',
  'src/collectors/models.ts',
  'src/collectors/requests.ts',
  'src/collectors/time.ts',
  'src/collectors/logs.ts',
  'jobs/logs.ts',
  'src/store/writer.ts',
  'src/ingest/drain/spool/**/*.ts',
  'src/ingest/drain/map-line.ts',
  'src/ingest/drain/auth.ts',
  'src/ingest/webhooks.ts',
  'src/ingest/faro/**/*.ts',
  'src/api/index.ts',
  'src/http/admin.ts',
  'src/platform/client.ts',
  'src/promtext/**/*.ts',
];

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts', related: true },
  coverageAnalysis: 'perTest',
  mutate: MUTATION_SCOPE,
  incremental: true,
  incrementalFile: 'reports/stryker-incremental.json',
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  clearTextReporter: { allowColor: false, logTests: false, reportMutants: true },
  // Two cores shared with other work: one test process by default (--concurrency raises it).
  concurrency: 1,
  timeoutMS: 30_000,
  // The initial run is every related test file once with coverage: over the whole scope, close to `npm test`.
  dryRunTimeoutMinutes: 120,
  tempDirName: 'reports/.stryker-tmp',
  ignorePatterns: ['data', 'dist', 'reports', '.vitest-results.json', '.bench-*', 'bench'],
  cleanTempDir: 'always',
};
