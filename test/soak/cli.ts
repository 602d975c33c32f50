// `npm run soak -- [--duration 6m] [--seed 1] [--fault-rate 0.2] [--outage 60s] [--kills 6] [--outages 2] [--verbose]`:
// the end-to-end soak (test/soak/harness.ts). Progress goes to stderr; the result is one JSON line on stdout;
// exit 1 when a difference is not zero, 2 on a bad option.
import { parseArgs } from 'node:util';
import { nonZeroDiffs, runSoak } from './harness.js';

const USAGE = 'usage: npm run soak -- [--duration 6m] [--seed N] [--fault-rate 0.2] [--outage 60s] [--kills 6] [--outages 2] [--verbose]';

function duration(name: string, text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text);
  if (!m) throw new Error(`--${name}: expected a duration like 90s, 10m or 1h, got ${JSON.stringify(text)}`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
}

function count(name: string, text: string, min: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name}: expected a whole number of at least ${min}, got ${JSON.stringify(text)}`);
  return n;
}

let opts: Parameters<typeof runSoak>[0];
let verbose = false;
try {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '6m' },
      seed: { type: 'string', default: '1' },
      'fault-rate': { type: 'string', default: '0.2' },
      outage: { type: 'string', default: '60s' },
      kills: { type: 'string', default: '6' },
      outages: { type: 'string', default: '2' },
      verbose: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const faultRate = Number(values['fault-rate']);
  if (!(faultRate >= 0 && faultRate < 1)) throw new Error(`--fault-rate: expected a number in [0, 1), got ${JSON.stringify(values['fault-rate'])}`);
  verbose = values.verbose!;
  opts = {
    durationMs: duration('duration', values.duration!),
    seed: count('seed', values.seed!, 0),
    faultRate,
    outageMs: duration('outage', values.outage!),
    kills: count('kills', values.kills!, 0),
    outages: count('outages', values.outages!, 0),
  };
  if (opts.outages! * opts.outageMs! >= opts.durationMs * 0.8) throw new Error(`--outages × --outage must leave most of --duration with the store up`);
} catch (err) {
  console.error(`soak: ${(err as Error).message}\n${USAGE}`);
  process.exit(2);
}

// Interrupted: exit through 'exit', where the instances this soak started are killed (test/support/process.ts).
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(130));

const instanceLines: string[] = [];
const result = await runSoak({
  ...opts,
  log: (line) => {
    if (line.startsWith('[soak')) console.error(line);
    else if (verbose) console.error(line);
    else instanceLines.push(line);
  },
}).catch((err: Error) => {
  console.error(`soak failed: ${err.stack ?? err.message}`);
  if (instanceLines.length > 0) console.error(`instances' last output:\n${instanceLines.slice(-40).join('\n')}`);
  process.exit(1);
});
console.log(JSON.stringify(result));
const bad = nonZeroDiffs(result);
if (bad.length > 0) {
  console.error(`soak: differences not zero: ${bad.map((k) => `${k}=${result[k]}`).join(', ')}`);
  process.exit(1);
}
process.exit(0);
