// Mutation testing (issue 31.1): `npm run mutation` (scripts/mutation.mjs runs Stryker once per group of
// MUTATION_GROUPS below, then prints the score per module). One module alone: `npm run mutation -- --group values`,
// or any files with `--mutate`. Not part of `npm test`: it runs the tests once per mutant (per-test coverage picks
// which), so it is slow; incremental mode keeps the results of mutants whose code and tests did not change.
//
// Stryker's vitest runner asks for one worker thread; vitest.mutation.config.ts sets the pool back to forks (the
// embedded store must not be opened in a worker thread), so every test file but the soak counts, store ones too.
// One module's own tests only: `npm run mutation -- --mutate src/store/writer.ts --testFiles test/store/writer.test.ts --force`
// (scripts/mutation.mjs hands --testFiles to vitest.mutation.config.ts: given to Stryker 9.6.1, it made every static
// mutant survive). The default run's time is in CONTRIBUTING.md.

/**
 * The default run (`npm run mutation` with no --mutate): each module with the test files that exercise it
 * in-process, one Stryker run per group (scripts/mutation.mjs). Over the whole suite every static mutant (a
 * module-level constant, schema or regular expression) would re-run every related test file, minutes each; a group
 * runs only its own files, and its score counts only what they kill. `npm run mutation -- --group spool` runs one.
 */
export const MUTATION_GROUPS = [
  { name: 'values', mutate: ['src/values.ts'], tests: ['test/store/values.test.ts', 'test/store/values-mutants.test.ts', 'test/store/values-dates.mutation.test.ts', 'test/collectors/requests-units.test.ts'] },
  { name: 'finance', mutate: ['src/api/finance.ts', 'src/insights/finance.ts'], tests: ['test/api/finance.mutation.test.ts'] },
  { name: 'focus', mutate: ['src/api/focus.ts', 'src/insights/focus.ts'], tests: ['test/api/focus-money.test.ts', 'test/api/focus-rows.test.ts', 'test/api/focus-final.mutation.test.ts'] },
  {
    name: 'cost',
    mutate: ['src/api/*cost*.ts'],
    tests: [
      'test/insights/cost-changes.test.ts',
      'test/insights/cost-changes.mutation.test.ts',
      'test/api/cost-changes-report.mutation.test.ts',
      'test/api/cost-changes-routes.mutation.test.ts',
      'test/api/request-cost-routes.mutation.test.ts',
      'test/api/cost-routes-openapi.mutation.test.ts',
    ],
  },
  { name: 'usage', mutate: ['src/collectors/usage.ts'], tests: ['test/collectors/usage.mutation.test.ts'] },
  { name: 'models', mutate: ['src/collectors/models.ts'], tests: ['test/collectors/models.mutation.test.ts'] },
  { name: 'requests', mutate: ['src/collectors/requests.ts'], tests: ['test/collectors/requests.mutation.test.ts', 'test/collectors/requests-units.test.ts'] },
  { name: 'time', mutate: ['src/collectors/time.ts'], tests: ['test/collectors/time.mutation.test.ts'] },
  { name: 'collector-logs', mutate: ['src/collectors/logs.ts'], tests: ['test/collectors/logs.mutation.test.ts', 'test/collectors/logs-unescape.mutation.test.ts'] },
  { name: 'logs-job', mutate: ['jobs/logs.ts'], tests: ['test/jobs/logs-job.mutation.test.ts', 'test/jobs/logs-job-options.mutation.test.ts'] },
  { name: 'writer', mutate: ['src/store/writer.ts'], tests: ['test/store/writer.mutation.test.ts'] },
  {
    name: 'spool',
    mutate: ['src/ingest/drain/spool/**/*.ts'],
    tests: [
      'test/ingest/drain/sqlite-spool.mutation.test.ts',
      'test/ingest/drain/spool-salvage.mutation.test.ts',
      'test/ingest/drain/spool-salvage-fails.mutation.test.ts',
      'test/ingest/drain/spool-salvage-high-seqs.test.ts',
      'test/ingest/drain/spool-salvage-first-record.test.ts',
      'test/ingest/drain/commit-worker.mutation.test.ts',
      'test/ingest/drain/commit-thread.mutation.test.ts',
      'test/ingest/drain/kill-points.mutation.test.ts',
      'test/ingest/drain/spool-commit-thread.test.ts',
    ],
  },
  { name: 'map-line', mutate: ['src/collectors/log-line.ts'], tests: ['test/ingest/drain/map-line.test.ts', 'test/ingest/drain/map-line.mutation.test.ts'] },
  { name: 'drain-auth', mutate: ['src/ingest/drain/auth.ts'], tests: ['test/ingest/drain/auth.mutation.test.ts'] },
  { name: 'webhooks', mutate: ['src/ingest/webhooks.ts'], tests: ['test/ingest/webhooks.mutation.test.ts', 'test/ingest/webhooks-hardening.test.ts', 'test/ingest/webhooks-future-timestamp.test.ts'] },
  // The receiver's tests take most of a minute and reach into map-items: its mutants run apart from the items'.
  { name: 'faro-receiver', mutate: ['src/ingest/faro/extension.ts'], tests: ['test/ingest/faro-extension.mutation.test.ts', 'test/ingest/faro-extension-store.mutation.test.ts'] },
  {
    name: 'faro-items',
    mutate: ['src/ingest/faro/map-items.ts', 'src/ingest/faro/session-request-ids.ts'],
    tests: [
      'test/ingest/faro-map-items.test.ts',
      'test/ingest/faro-map-items.mutation.test.ts',
      'test/ingest/faro-session-request-ids.test.ts',
      'test/ingest/faro-session-request-ids.mutation.test.ts',
    ],
  },
  { name: 'api-index', mutate: ['src/api/index.ts'], tests: ['test/api/index.mutation.test.ts', 'test/api/index-reports.mutation.test.ts'] },
  { name: 'admin', mutate: ['src/http/admin.ts'], tests: ['test/http/admin.mutation.test.ts'] },
  { name: 'client', mutate: ['src/platform/client.ts'], tests: ['test/platform/client.test.ts', 'test/platform/client-audit.test.ts', 'test/platform/client.mutation.test.ts'] },
  {
    name: 'promtext',
    mutate: ['src/promtext/**/*.ts'],
    tests: [
      'test/promtext/floats.mutation.test.ts',
      'test/promtext/prometheus-text.test.ts',
      'test/promtext/openmetrics.test.ts',
      'test/promtext/api.test.ts',
      'test/promtext/labels.mutation.test.ts',
      'test/promtext/parse-prom.mutation.test.ts',
      'test/promtext/parse-families.mutation.test.ts',
      'test/promtext/parse-om.mutation.test.ts',
      'test/promtext/exemplar-quoted-name.test.ts',
    ],
  },
];

/** The modules mutated by default: money, collection, ingestion and the endpoints people and scrapers call. */
export const MUTATION_SCOPE = MUTATION_GROUPS.flatMap((g) => g.mutate);

// scripts/mutation.mjs sets TALLYHOUSE_MUTATION_GROUP for a group of the default run: its reports and incremental
// state go apart, so one group's run never rewrites another's.
const group = process.env.TALLYHOUSE_MUTATION_GROUP;
const reportDir = group ? `reports/mutation/${group}` : 'reports/mutation';

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts', related: true },
  coverageAnalysis: 'perTest',
  mutate: MUTATION_SCOPE,
  incremental: true,
  incrementalFile: group ? `reports/stryker-incremental-${group}.json` : 'reports/stryker-incremental.json',
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: `${reportDir}/mutation.html` },
  jsonReporter: { fileName: `${reportDir}/mutation.json` },
  clearTextReporter: { allowColor: false, logTests: false, reportMutants: true },
  // Two cores shared with other work: one test process by default (--concurrency raises it).
  concurrency: 1,
  // Added to each mutant's own time limit (its tests' time in the initial run, x1.5): enough on a loaded machine; a
  // mutant that loops (a flush interval of 0, a retry without end) costs this much each.
  timeoutMS: 10_000,
  // The initial run is every related test file once with coverage: over the whole scope, close to `npm test`.
  dryRunTimeoutMinutes: 120,
  tempDirName: group ? `reports/.stryker-tmp-${group}` : 'reports/.stryker-tmp',
  ignorePatterns: ['data', 'dist', 'reports', '.vitest-results.json', '.bench-*', 'bench'],
  cleanTempDir: 'always',
};
