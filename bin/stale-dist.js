// Whether dist/ is older than the sources it was built from. The CLI runs dist/ when it exists; in a checkout an
// edit to src/, jobs/ or sql/ after `npm run build` would otherwise be silently ignored. The production image has
// no src/ beside dist/, so there is nothing to compare and dist/ runs.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const SOURCES = ['src', 'jobs', 'sql'];

/** The newest modification time (ms) of any file under the checkout's src/, jobs/ and sql/; 0 when none exist. */
export function newestSourceMtimeMs(root) {
  let newest = 0;
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  for (const dir of SOURCES) if (existsSync(join(root, dir))) walk(join(root, dir));
  return newest;
}

/**
 * Null when `root`/dist/ may run; else the one line saying why not. Only a checkout (src/main.ts beside dist/) is
 * checked: dist/ without BUILT_FROM, or sources newer than it, is stale.
 */
export function staleDistReason(root) {
  if (!existsSync(join(root, 'src/main.ts'))) return null;
  const stamp = join(root, 'dist/BUILT_FROM');
  const fix = "run 'npm run build' again, or delete dist/ to run the sources";
  if (!existsSync(stamp)) return `tallyhouse: dist/ was not built by 'npm run build' (no dist/BUILT_FROM) and may be stale: ${fix}`;
  const built = Number(readFileSync(stamp, 'utf8').trim());
  if (!(newestSourceMtimeMs(root) <= built)) return `tallyhouse: dist/ is older than src/, jobs/ or sql/: ${fix}`;
  return null;
}
