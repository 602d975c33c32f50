#!/usr/bin/env node
// `npm run mutation [-- stryker options]`: Stryker over the default scope (stryker.config.mjs), or what
// `--mutate <file or glob>` names, then the score per module (scripts/mutation-scores.mjs). Reports in reports/.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const stryker = fileURLToPath(new URL('../node_modules/@stryker-mutator/core/bin/stryker.js', import.meta.url));
// Stryker runs the tests in a worker thread, where a test cannot move the process's time zone by setting
// process.env.TZ (test/store/values.test.ts checks that parsing ignores the machine's zone that way). So the whole
// run is in a zone that is not UTC, which asks the same question of every test.
const env = { ...process.env, TZ: process.env.TZ || 'Asia/Kolkata' };
// --testFiles goes to vitest.mutation.config.ts (TALLYHOUSE_MUTATION_TEST_FILES), not to Stryker: given to Stryker,
// it makes every static mutant survive (see there).
const args = [];
for (let i = 2; i < process.argv.length; i++) {
  const arg = process.argv[i];
  if (arg === '--testFiles') env.TALLYHOUSE_MUTATION_TEST_FILES = process.argv[++i] ?? '';
  else if (arg.startsWith('--testFiles=')) env.TALLYHOUSE_MUTATION_TEST_FILES = arg.slice('--testFiles='.length);
  else args.push(arg);
}
// The report also carries the incremental file's results of modules this run did not mutate: print only this run's.
const mutateAt = args.findIndex((a) => a === '--mutate' || a === '-m' || a.startsWith('--mutate='));
const mutated = mutateAt < 0 ? undefined : args[mutateAt].startsWith('--mutate=') ? args[mutateAt].slice('--mutate='.length) : args[mutateAt + 1];
const run = spawnSync(process.execPath, [stryker, 'run', ...args], { stdio: 'inherit', env });
if (run.status !== 0) process.exit(run.status ?? 1);
const scoreArgs = mutated ? ['reports/mutation/mutation.json', mutated] : [];
const scores = spawnSync(process.execPath, [fileURLToPath(new URL('./mutation-scores.mjs', import.meta.url)), ...scoreArgs], { stdio: 'inherit' });
process.exit(scores.status ?? 1);
