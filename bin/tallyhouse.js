#!/usr/bin/env node
// Runs the compiled CLI when it exists (the production image), else the TypeScript sources through tsx. A dist/
// older than the sources beside it is refused with one line (bin/stale-dist.js), never run in their place.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { staleDistReason } from './stale-dist.js';

const compiled = fileURLToPath(new URL('../dist/src/main.js', import.meta.url));
let entry;
if (existsSync(compiled)) {
  const stale = staleDistReason(fileURLToPath(new URL('..', import.meta.url)));
  if (stale !== null) {
    process.stderr.write(`${stale}\n`);
    process.exit(1);
  }
  entry = await import(pathToFileURL(compiled).href);
} else {
  // tsx is a devDependency (issue 43: the production image carries no dev tools): a production install runs dist/.
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch (err) {
    if (err?.code !== 'ERR_MODULE_NOT_FOUND') throw err;
    process.stderr.write('tallyhouse: no dist/ build here and no tsx to run the sources (a production install, npm ci --omit=dev): run `npm ci && npm run build` first, or use the image\n');
    process.exit(1);
  }
  register();
  entry = await import(new URL('../src/main.ts', import.meta.url).href);
}
await entry.run(process.argv.slice(2));
