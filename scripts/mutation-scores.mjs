#!/usr/bin/env node
// The mutation score per module of the last Stryker run (reports/mutation/**/mutation.json, the mutation-testing
// report schema): a module is an entry of MUTATION_SCOPE in stryker.config.mjs (a file, a folder or a glob), or
// the file itself when it is outside that scope. Score = detected (killed + timeout) / valid (detected + survived
// + no coverage), as Stryker counts it; "covered" leaves out the mutants no test reaches. Then every survivor.
import { readFileSync } from 'node:fs';
import { MUTATION_SCOPE } from '../stryker.config.mjs';

// One report or several (comma-separated: the default run writes one per group). `path::a|b` takes from that
// report only the files the patterns a, b name: a group's report also carries, from its incremental file, results
// of files other groups mutate, which may be older than theirs.
const reportArgs = (process.argv[2] ?? 'reports/mutation/mutation.json').split(',').filter(Boolean);
// Optional: the run's --mutate patterns (comma-separated, line ranges allowed): only the files they name.
const only = process.argv[3]?.split(',').map((p) => p.trim().replace(/:\d+(:\d+)?-\d+(:\d+)?$/, '')).filter(Boolean);

/** A scope pattern as a regular expression over repository paths ('**' any folders, '*' within one name). */
export function patternRegExp(pattern) {
  const body = pattern
    .split('/**/')
    .map((part) => part.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('[^/]*'))
    .join('/(?:.*/)?');
  return new RegExp(`^${body}$`);
}

const report = { files: {} };
for (const arg of reportArgs) {
  const [path, patterns] = arg.split('::');
  const keep = patterns?.split('|').map(patternRegExp);
  for (const [file, entry] of Object.entries(JSON.parse(readFileSync(path, 'utf8')).files)) {
    if (!keep || keep.some((re) => re.test(file))) report.files[file] = entry;
  }
}

const scope = MUTATION_SCOPE.map((pattern) => ({ pattern, re: patternRegExp(pattern) }));
const moduleOf = (file) => scope.find((s) => s.re.test(file))?.pattern ?? file;

const modules = new Map();
const survivors = [];
for (const [file, { mutants }] of Object.entries(report.files)) {
  if (only && !only.some((p) => patternRegExp(p).test(file))) continue;
  const name = moduleOf(file);
  const m = modules.get(name) ?? { files: new Set(), Killed: 0, Timeout: 0, Survived: 0, NoCoverage: 0, errors: 0, Ignored: 0 };
  m.files.add(file);
  for (const mutant of mutants) {
    if (mutant.status in m) m[mutant.status]++;
    else m.errors++; // CompileError, RuntimeError
    if (mutant.status === 'Survived' || mutant.status === 'NoCoverage') {
      const at = mutant.location.start;
      survivors.push(`${file}:${at.line}:${at.column} ${mutant.status} ${mutant.mutatorName}: ${JSON.stringify(mutant.replacement ?? '')}`);
    }
  }
  modules.set(name, m);
}

const pct = (n, d) => (d === 0 ? 'n/a' : `${((100 * n) / d).toFixed(2)}%`);
const rows = [['module', 'files', 'killed', 'timeout', 'survived', 'no cov', 'errors', 'score', 'covered']];
for (const [name, m] of [...modules.entries()].sort(([a], [b]) => a.localeCompare(b))) {
  const detected = m.Killed + m.Timeout;
  rows.push([name, m.files.size, m.Killed, m.Timeout, m.Survived, m.NoCoverage, m.errors, pct(detected, detected + m.Survived + m.NoCoverage), pct(detected, detected + m.Survived)].map(String));
}
const total = { files: new Set(), Killed: 0, Timeout: 0, Survived: 0, NoCoverage: 0, errors: 0 };
for (const m of modules.values()) {
  for (const f of m.files) total.files.add(f);
  for (const k of ['Killed', 'Timeout', 'Survived', 'NoCoverage', 'errors']) total[k] += m[k];
}
const detectedAll = total.Killed + total.Timeout;
rows.push(['overall', total.files.size, total.Killed, total.Timeout, total.Survived, total.NoCoverage, total.errors, pct(detectedAll, detectedAll + total.Survived + total.NoCoverage), pct(detectedAll, detectedAll + total.Survived)].map(String));
const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
for (const r of rows) console.log(r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  '));
if (survivors.length > 0) {
  console.log(`\nsurvivors (${survivors.length}):`);
  for (const s of survivors) console.log(`  ${s}`);
}
