#!/usr/bin/env node
// `npm run build`: compiles src/ and jobs/ into dist/ (tsconfig.build.json), then copies what the compiled code
// reads next to itself: the migrations (src/store/migrate.ts reads ../../sql/, from dist/src/store/ that is
// dist/sql/) and the demo's simulator scenario (src/cli/demo-platform.ts reads ../sim/scenarios/). Without them a
// compiled `migrate` or `serve` failed on ENOENT, retried as a store error. Last it writes dist/BUILT_FROM, which
// bin/tallyhouse.js compares with the sources to refuse a stale dist/.
// Usage: node scripts/build.mjs [--outDir DIR]   (DIR defaults to dist/)
import { spawnSync } from 'node:child_process';
import { cpSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { newestSourceMtimeMs } from '../bin/stale-dist.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** What the compiled code reads at run time, from the repository into the output directory. */
export const ASSETS = [
  ['sql', 'sql'],
  ['src/sim/scenarios', 'src/sim/scenarios'],
  // The web console's pages (src/console/index.ts reads ../../console/, from dist/src/console/ that is dist/console/).
  ['console', 'console'],
];

const args = process.argv.slice(2);
const at = args.indexOf('--outDir');
if (args.length > 0 && (at !== 0 || args.length !== 2)) {
  process.stderr.write('usage: node scripts/build.mjs [--outDir DIR]\n');
  process.exit(2);
}
const out = at === 0 ? resolve(args[1]) : join(ROOT, 'dist');
const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', out], { stdio: 'inherit' });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
for (const [from, to] of ASSETS) cpSync(join(ROOT, from), join(out, to), { recursive: true });
// The sources' newest modification time at build time: a later edit makes dist/ stale.
writeFileSync(join(out, 'BUILT_FROM'), `${newestSourceMtimeMs(ROOT)}\n`);
