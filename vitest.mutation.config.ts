// The tests Stryker runs (stryker.config.mjs): every test file that opens no embedded store in its own process,
// itself or through a helper of test/ it imports. Stryker's vitest runner runs them in one worker thread, and chDB
// crashes the process when a second data directory is opened in it (a segmentation fault, seen with two store
// tests in one thread). Files that spawn a child process (runCli) or a loopback server of their own are fine.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/** What a file that opens a store (or a service, which opens one) in this process calls. */
const OPENS_A_STORE = /\b(openTestRuntime|startService|openRuntime|withCommandRuntime|openStore|createStore)\s*\(/;
const RELATIVE_IMPORT = /from\s+'(\.{1,2}\/[^']+)'/g;

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'soak' ? [] : testFiles(path);
    return e.name.endsWith('.test.ts') ? [path] : [];
  });
}

const testRoot = resolve('test');
const seen = new Map<string, boolean>();
/** Whether a file, or a helper under test/ that it imports (transitively), opens a store. */
function opensAStore(file: string): boolean {
  const known = seen.get(file);
  if (known !== undefined) return known;
  seen.set(file, false); // import cycles end here
  const text = readFileSync(file, 'utf8');
  let opens = OPENS_A_STORE.test(text);
  for (const m of text.matchAll(RELATIVE_IMPORT)) {
    if (opens) break;
    const target = resolve(dirname(file), m[1].replace(/\.js$/, '.ts'));
    // Helpers under test/ only (src/ is what the call names above detect); test/support/store.ts merely defines them.
    if (target.startsWith(testRoot) && !target.endsWith(join('support', 'store.ts')) && existsSync(target)) opens = opensAStore(target);
  }
  seen.set(file, opens);
  return opens;
}

const pure = testFiles('test').filter((file) => !opensAStore(resolve(file)));

// Replaces the base config's include (mergeConfig would add to it).
export default defineConfig({ ...base, test: { ...base.test, include: pure, reporters: ['default'] } });
