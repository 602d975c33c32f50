// Starts a worker thread on a module next to the caller: the compiled `.js` in a build, the `.ts` through tsx when the
// sources run directly (tests, `npm start` without a build). A worker inherits neither its parent's loader hooks nor,
// on Node 20, an --import in its execArgv, so the TypeScript case loads tsx inside the worker first.
import { Worker } from 'node:worker_threads';

const TS_BOOTSTRAP = `
const { createRequire } = require('node:module');
const { pathToFileURL } = require('node:url');
const { join, dirname } = require('node:path');
const { workerData } = require('node:worker_threads');
const api = pathToFileURL(join(dirname(createRequire(workerData.base).resolve('tsx')), 'esm/api/index.mjs')).href;
import(api)
  .then((tsx) => tsx.tsImport(workerData.entry, workerData.base))
  .catch((err) => setImmediate(() => { throw err; }));
`;

/**
 * A worker running `name` (without extension) from the folder of `base` (the caller's import.meta.url). `data` is
 * the worker's workerData (alongside the keys the bootstrap uses, `base` and `entry`).
 */
export function moduleWorker(base: string, name: string, data: Record<string, unknown> = {}): Worker {
  if (base.endsWith('.ts')) {
    return new Worker(TS_BOOTSTRAP, { eval: true, workerData: { ...data, base, entry: new URL(`./${name}.ts`, base).href } });
  }
  return new Worker(new URL(`./${name}.js`, base), { workerData: data });
}
