#!/usr/bin/env node
// Runs the compiled CLI when it exists (the production image), else the TypeScript sources through tsx.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const compiled = fileURLToPath(new URL('../dist/src/main.js', import.meta.url));
let entry;
if (existsSync(compiled)) {
  entry = await import(pathToFileURL(compiled).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  entry = await import(new URL('../src/main.ts', import.meta.url).href);
}
await entry.run(process.argv.slice(2));
