// The suite's globalSetup (vitest.config.ts): bundles the CLI once per run with esbuild, so the CLI children the
// tests start (`runCli`, `BIN` in test/support/process.ts) load one JavaScript file instead of having tsx resolve
// and load every TypeScript module in every child (a `serve` reached "listening" in about two thirds of the time
// here). It is src/main.ts's `run` exactly as bin/tallyhouse.js calls it; bin/tallyhouse.js itself keeps its own
// tests (test/dashboards/image.test.ts starts it as the image does).
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
// Inside node_modules so the bundle's bare imports (fastify, chdb, ...) resolve from the repository's node_modules.
// One per checkout: worktrees sharing one node_modules (a link) each ran the bundle the last run of any of them built.
const DIR = `${ROOT}node_modules/.cache/tallyhouse-test-${createHash('sha256').update(ROOT).digest('hex').slice(0, 12)}`;
export const CLI_BUNDLE = `${DIR}/cli.mjs`;
/** Set for the test processes (they inherit the environment) when the bundle is built. */
export const CLI_BUNDLE_ENV = 'TALLYHOUSE_TEST_CLI';

export async function buildCliBundle(): Promise<string> {
  mkdirSync(DIR, { recursive: true });
  await build({
    stdin: { contents: "import { run } from './src/main.ts';\nawait run(process.argv.slice(2));\n", resolveDir: ROOT, sourcefile: 'cli-entry.ts', loader: 'ts' },
    outfile: CLI_BUNDLE,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
    plugins: [
      {
        // Each module's import.meta.url stays its source file's URL, so what it resolves relative to itself (the
        // migrations in sql/, the demo scenario, package.json, dashboards/, the drain's parser worker, which then
        // loads its TypeScript through tsx as under tsx) is found where it is in the repository.
        name: 'source-import-meta-url',
        setup(b) {
          b.onLoad({ filter: /\.ts$/ }, async (args) => {
            const text = await readFile(args.path, 'utf8');
            return { contents: text.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)), loader: 'ts' };
          });
        },
      },
    ],
  });
  return CLI_BUNDLE;
}

export default async function setup(): Promise<void> {
  process.env[CLI_BUNDLE_ENV] = await buildCliBundle();
}
