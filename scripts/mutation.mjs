#!/usr/bin/env node
// `npm run mutation [-- stryker options]`: Stryker over the default scope, one run per group of MUTATION_GROUPS
// (stryker.config.mjs: each module with the test files that exercise it), or `--group a,b` for some of them, or
// over what `--mutate <file or glob>` names (with `--testFiles a,b`); then the score per module
// (scripts/mutation-scores.mjs). Reports in reports/mutation/ (one folder per group).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { MUTATION_GROUPS } from '../stryker.config.mjs';

const stryker = fileURLToPath(new URL('../node_modules/@stryker-mutator/core/bin/stryker.js', import.meta.url));
const scoresScript = fileURLToPath(new URL('./mutation-scores.mjs', import.meta.url));
// Stryker runs the tests in a worker thread, where a test cannot move the process's time zone by setting
// process.env.TZ (test/store/values.test.ts checks that parsing ignores the machine's zone that way). So the whole
// run is in a zone that is not UTC, which asks the same question of every test.
const baseEnv = { ...process.env, TZ: process.env.TZ || 'Asia/Kolkata' };

// --testFiles goes to vitest.mutation.config.ts (TALLYHOUSE_MUTATION_TEST_FILES), not to Stryker: given to Stryker,
// it makes every static mutant survive (see there).
const args = [];
let testFiles;
let groupNames;
let mutated;
for (let i = 2; i < process.argv.length; i++) {
  const arg = process.argv[i];
  const [name, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
  const value = () => inline ?? process.argv[++i] ?? '';
  if (name === '--testFiles') testFiles = value();
  else if (name === '--group') groupNames = value().split(',').filter(Boolean);
  else if (name === '--mutate' || name === '-m') {
    mutated = value();
    args.push('--mutate', mutated);
  } else args.push(arg);
}

function stop(message) {
  console.error(`npm run mutation: ${message}`);
  process.exit(2);
}

if (mutated !== undefined) {
  if (groupNames) stop('give --group or --mutate, not both');
  const run = spawnSync(process.execPath, [stryker, 'run', ...args], {
    stdio: 'inherit',
    env: testFiles === undefined ? baseEnv : { ...baseEnv, TALLYHOUSE_MUTATION_TEST_FILES: testFiles },
  });
  if (run.status !== 0) process.exit(run.status ?? 1);
  // The report also carries the incremental file's results of modules this run did not mutate: print only this run's.
  const reportDir = process.env.TALLYHOUSE_MUTATION_GROUP ? `reports/mutation/${process.env.TALLYHOUSE_MUTATION_GROUP}` : 'reports/mutation';
  const scores = spawnSync(process.execPath, [scoresScript, `${reportDir}/mutation.json`, mutated], { stdio: 'inherit' });
  process.exit(scores.status ?? 1);
}

if (testFiles !== undefined) stop('--testFiles goes with --mutate (a group has its own test files)');
const unknown = (groupNames ?? []).filter((n) => !MUTATION_GROUPS.some((g) => g.name === n));
if (unknown.length > 0) stop(`no group named ${unknown.join(', ')}; groups: ${MUTATION_GROUPS.map((g) => g.name).join(', ')}`);
const groups = groupNames ? MUTATION_GROUPS.filter((g) => groupNames.includes(g.name)) : MUTATION_GROUPS;

const started = Date.now();
const failed = [];
for (const [i, group] of groups.entries()) {
  const groupStarted = Date.now();
  console.log(`\n== mutation group ${i + 1}/${groups.length}: ${group.name} (${group.mutate.join(', ')})`);
  const run = spawnSync(process.execPath, [stryker, 'run', ...args, '--mutate', group.mutate.join(',')], {
    stdio: 'inherit',
    env: { ...baseEnv, TALLYHOUSE_MUTATION_GROUP: group.name, TALLYHOUSE_MUTATION_TEST_FILES: group.tests.join(',') },
  });
  const seconds = Math.round((Date.now() - groupStarted) / 1000);
  console.log(`== ${group.name}: ${run.status === 0 ? 'done' : `FAILED (exit ${run.status ?? run.signal})`} in ${seconds} s`);
  if (run.status !== 0) failed.push(group.name);
}
console.log(`\n== ${groups.length} group(s) in ${Math.round((Date.now() - started) / 1000)} s\n`);
const reports = groups.filter((g) => !failed.includes(g.name)).map((g) => `reports/mutation/${g.name}/mutation.json::${g.mutate.join('|')}`);
const scores = reports.length > 0 ? spawnSync(process.execPath, [scoresScript, reports.join(','), groups.flatMap((g) => g.mutate).join(',')], { stdio: 'inherit' }) : { status: 0 };
if (failed.length > 0) stop(`group(s) failed: ${failed.join(', ')}`);
process.exit(scores.status ?? 1);
