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
 * The young generation of a worker's heap, in MB (V8's default lets it grow to tens of MB per thread). The drain's
 * parser thread allocates about as fast as bodies arrive, and with the default both threads' young generations grew
 * to their limit: bench drain --store http, 2M lines, peak RSS 274 / 303 MB with the default, 242 / 245 MB with 8,
 * at the same rate (100-105k lines/s) for ~1 CPU-second more of scavenges.
 */
const WORKER_YOUNG_GENERATION_MB = 8;

/**
 * A worker running `name` (without extension) from the folder of `base` (the caller's import.meta.url). `data` is
 * the worker's workerData (alongside the keys the bootstrap uses, `base` and `entry`).
 */
export function moduleWorker(base: string, name: string, data: Record<string, unknown> = {}): Worker {
  if (base.endsWith('.ts')) {
    return new Worker(TS_BOOTSTRAP, {
      eval: true,
      resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
      workerData: { ...data, base, entry: new URL(`./${name}.ts`, base).href },
    });
  }
  return new Worker(new URL(`./${name}.js`, base), {
    resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
    workerData: data,
  });
}
