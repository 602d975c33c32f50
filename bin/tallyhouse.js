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
  const { register } = await import('tsx/esm/api');
  register();
  entry = await import(new URL('../src/main.ts', import.meta.url).href);
}
await entry.run(process.argv.slice(2));
