#!/usr/bin/env node
// `npm run bench -- <name>`: runs bench/<name>.ts, which prints one JSON line of figures.
import { existsSync, readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('.', import.meta.url));
const names = readdirSync(dir).filter((f) => f.endsWith('.ts')).map((f) => f.slice(0, -3)).sort();
const [name, ...rest] = process.argv.slice(2);
if (!name || !existsSync(`${dir}/${name}.ts`)) {
  console.error(`usage: npm run bench -- <name> [options]\nbenchmarks: ${names.join(', ') || '(none yet)'}`);
  process.exit(2);
}
const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', `${dir}/${name}.ts`, ...rest], { stdio: 'inherit' });
process.exit(r.status ?? 1);
